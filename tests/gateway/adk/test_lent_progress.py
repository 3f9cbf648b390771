"""Progress of a remote long-running tool reaches the ADK app through `to_adk(McpToolset)`, in both eras.

Each progress notification the upstream sends during the call becomes a partial ADK event carrying an intermediate
function response for the call (`will_continue`), streamed by the Runner; the final response follows as usual.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types as genai_types
from scripted_model import ScriptedModel, call, say

from gateway import McpToolset, StdioConnectionParams
from gateway.adk import to_adk

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FIXTURE_TOOLS = f"{HERE.parent / 'server' / 'fixture_tools.py'}:TOOLS"
DEADLINE = 30.0
Mode = Literal["legacy", "auto"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_progress_of_a_remote_long_running_tool_reaches_the_adk_app_as_intermediate_responses(
    mode: Mode,
) -> None:
    toolset = McpToolset(
        connection_params=StdioConnectionParams(
            command=sys.executable,
            args=["-m", "gateway.cli", "serve", "--tools", FIXTURE_TOOLS, "--state", ":memory:"],
            cwd=str(ROOT),
        ),
        tool_filter=["count_up"],
        mode=mode,
    )
    sessions = InMemorySessionService()
    model = ScriptedModel(script=[call("count_up", {"steps": 3}), say("Counted.")])
    runner = Runner(
        app_name="app", agent=LlmAgent(name="a", model=model, tools=[to_adk(toolset)]), session_service=sessions
    )
    session = await sessions.create_session(app_name="app", user_id="user")
    events: list[Event] = []
    message = genai_types.Content(role="user", parts=[genai_types.Part(text="Count to three.")])
    try:
        with anyio.fail_after(DEADLINE):
            async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
                events.append(event)
    finally:
        await runner.close()
    (call_event,) = [e for e in events if e.get_function_calls()]
    call_id = call_event.get_function_calls()[0].id
    responses = [(e.partial, r) for e in events for r in e.get_function_responses() if r.name == "count_up"]
    intermediate = [r for partial, r in responses if partial]
    final = [r for partial, r in responses if not partial]
    assert [r.response for r in intermediate] == [
        {"progress": float(step), "message": f"step {step} of 3"} for step in (1, 2, 3)
    ]
    assert all(r.id == call_id and r.will_continue for r in intermediate)
    assert [r.response for r in final] == [{"counted": 3}]
    # The model's history holds the final response only.
    stored = await sessions.get_session(app_name="app", user_id="user", session_id=session.id)
    assert stored is not None
    kept = [r.response for e in stored.events for r in e.get_function_responses()]
    assert kept == [{"counted": 3}]
