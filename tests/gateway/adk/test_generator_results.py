"""A generator tool's result, ours beside google-adk 2.13's, run by a real `Runner` with a scripted model.

google-adk 2.13 runs a generator tool as a workflow node (outside live runs): its one yielded value is the result,
its return value is dropped, and a second yield fails the run ("Output already set"). Its docs promise otherwise
(each yield an intermediate response, the return value the final one, even None). Ours: every yield is progress,
a sync generator's return value is the result, and without one the last yield is, which is google-adk's result
for every generator it can run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import FunctionTool as AdkFunctionTool
from google.adk.tools import LongRunningFunctionTool as AdkLongRunningFunctionTool
from google.genai import types as genai_types
from scripted_model import ScriptedModel, call, say

from gateway.tools import FunctionTool, LongRunningFunctionTool, ToolContext
from tests.support.deadlines import DEADLINE

pytestmark = pytest.mark.anyio


def one_status(job: str) -> Iterator[dict[str, str]]:
    """Report a job's status once, then end without a return value."""
    yield {"status": "done", "job": job}


async def one_async_status(job: str) -> AsyncIterator[dict[str, str]]:
    """Report a job's status once (an async generator has no return value)."""
    yield {"status": "done", "job": job}


def one_word(job: str) -> Iterator[str]:
    """Yield one plain value, then end without a return value."""
    yield f"{job} done"


async def adk_result(tool: Any, name: str) -> Any:
    """The function response google-adk's own flow builds for one call of `tool` with `job="backup"`."""
    sessions = InMemorySessionService()
    model = ScriptedModel(script=[call(name, {"job": "backup"}), say("ok")])
    runner = Runner(app_name="app", agent=LlmAgent(name="a", model=model, tools=[tool]), session_service=sessions)
    session = await sessions.create_session(app_name="app", user_id="user")
    message = genai_types.Content(role="user", parts=[genai_types.Part(text="go")])
    responses: list[Any] = []
    with anyio.fail_after(DEADLINE):
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            responses += [response.response for response in event.get_function_responses()]
    await runner.close()
    (response,) = responses
    return response


@pytest.mark.parametrize("func", [one_status, one_async_status, one_word])
@pytest.mark.parametrize(
    ("ours", "theirs"),
    [(FunctionTool, AdkFunctionTool), (LongRunningFunctionTool, AdkLongRunningFunctionTool)],
    ids=["function", "long_running"],
)
async def test_a_generator_that_yields_once_and_returns_nothing_has_google_adks_result(
    func: Callable[..., Any], ours: type[FunctionTool], theirs: type[Any]
) -> None:
    expected = await adk_result(theirs(func), func.__name__)

    result = await ours(func).run_async(args={"job": "backup"}, tool_context=ToolContext())

    assert result == expected
