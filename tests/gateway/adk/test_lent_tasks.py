"""An upstream's task (SEP-2663) reaches a google-adk agent through `to_adk(McpToolset(enable_tasks=True))` as ADK's
long-running tools do: the agent gets the pending status at once, and the final result when the app sends it.

The upstream (`tests/gateway/client/tasks_upstream.py`) advances a task only when it is polled.
"""

from __future__ import annotations

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types as genai_types
from scripted_model import ScriptedModel, call, say

from gateway import McpToolset
from gateway.adk import to_adk
from gateway.client import StreamableHTTPConnectionParams
from tests.gateway.client.tasks_upstream import TaskLog, http_app
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_asgi

pytestmark = pytest.mark.anyio


async def _run(runner: Runner, session_id: str, message: genai_types.Content) -> list[Event]:
    events: list[Event] = []
    with anyio.fail_after(DEADLINE):
        async for event in runner.run_async(user_id="user", session_id=session_id, new_message=message):
            events.append(event)
    return events


def _responses(request_contents: list[genai_types.Content]) -> list[object]:
    return [
        part.function_response.response for c in request_contents for part in c.parts or [] if part.function_response
    ]


async def test_an_agent_gets_a_tasks_pending_status_then_its_result() -> None:
    log = TaskLog()
    async with serving_asgi(http_app(log)) as base_url:
        toolset = McpToolset(
            connection_params=StreamableHTTPConnectionParams(url=f"{base_url}/mcp"),
            tool_filter=["slow_add"],
            enable_tasks=True,
        )
        lent = to_adk(toolset)
        model = ScriptedModel(script=[call("slow_add", {"a": 2, "b": 3}), say("Working on it."), say("It is 5.")])
        sessions = InMemorySessionService()
        runner = Runner(app_name="app", agent=LlmAgent(name="a", model=model, tools=[lent]), session_service=sessions)
        session = await sessions.create_session(app_name="app", user_id="user")
        try:
            ask = genai_types.Content(role="user", parts=[genai_types.Part(text="Add 2 and 3.")])
            events = await _run(runner, session.id, ask)
            (call_event,) = [event for event in events if event.get_function_calls()]
            call_id = call_event.get_function_calls()[0].id
            assert call_event.long_running_tool_ids == {call_id}
            (pending,) = [r for event in events for r in event.get_function_responses()]
            (task_id,) = log.tasks
            assert pending.response == {"status": "working", "task_id": task_id}
            # The model saw the pending status, and the upstream was not polled for it.
            assert _responses(model.requests[-1].contents) == [pending.response]
            assert not log.polls

            answer = await lent.finished(pending)
            assert answer.id == call_id
            events = await _run(
                runner, session.id, genai_types.Content(role="user", parts=[genai_types.Part(function_response=answer)])
            )
        finally:
            await runner.close()
    assert answer.response is not None
    assert answer.response["sum"] == 5
    assert [event.content.parts[0].text for event in events if event.content and event.content.parts] == ["It is 5."]
    final_request = model.requests[-1].contents
    assert _responses(final_request)[-1] == answer.response
    assert log.tasks[task_id].status == "completed"
