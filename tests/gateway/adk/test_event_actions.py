"""EventActions across MCP: a served tool's transfer, escalation and skipped summarization reach a google-adk agent.

Each scenario runs a real google-adk `Runner` with scripted models twice: once with the tool as a native google-adk
tool in-process, once with the same tool reached another way (lent through `to_adk`, or served by a `serve` child
over stdio or HTTP in either protocol era and consumed through `to_adk(McpToolset(...))`). The two event streams
must agree field by field: who spoke, what was called and answered, and the actions ADK acts on.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from action_tools import SUPPORT_AGENT, give_up, hand_off, note_directly, read_notes, show_report, try_hard
from adk_agents import note_script, notes_model, quit_model, quitter, root_agent
from google.adk.agents import BaseAgent, LlmAgent, LoopAgent
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import FunctionTool as AdkFunctionTool
from google.adk.tools import exit_loop
from google.genai import types as genai_types
from mcp import Client
from scripted_model import ScriptedModel, call, say

from adapters.meta_keys import ESCALATE_META_KEY, SKIP_SUMMARIZATION_META_KEY, TRANSFER_TO_AGENT_META_KEY
from gateway import FunctionTool, McpToolset, StdioConnectionParams
from gateway.adk import from_adk, to_adk
from gateway.client import StreamableHTTPConnectionParams
from gateway.server import SESSION_META_KEY, ToolServer
from tests.support.deadlines import LONG_DEADLINE as DEADLINE
from tests.support.loopback import free_port, wait_for_port
from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
SESSION: Any = {SESSION_META_KEY: "actions-session-0123456789"}
SERVED_WAYS = ("stdio-legacy", "stdio-modern", "http-legacy", "http-modern")


@dataclass(frozen=True)
class Scenario:
    """A tool that sets an action, the reference `serve --tools` publishes it by, and the agent tree around it."""

    function: Callable[..., Any]
    reference: str
    agent: Callable[[list[Any]], BaseAgent]
    ours: bool = True
    """Whether the function is also one of our `FunctionTool`s (google-adk's `exit_loop` is not)."""


def _desk(tools: list[Any]) -> BaseAgent:
    support = LlmAgent(
        name=SUPPORT_AGENT, description="Handles refunds.", model=ScriptedModel(script=[say("Support here.")])
    )
    model = ScriptedModel(script=[call("hand_off", {"topic": "refund"}), say("The desk answers.")])
    return LlmAgent(name="desk", model=model, tools=tools, sub_agents=[support])


def _loop(first: str, args: dict[str, Any]) -> Callable[[list[Any]], BaseAgent]:
    def build(tools: list[Any]) -> BaseAgent:
        # Enough turns for a second pass: a loop that does not stop shows it in its events.
        script = [call(first, args), say("Worked on it."), call(first, args), say("Worked on it again.")]
        worker = LlmAgent(name="worker", model=ScriptedModel(script=script), tools=tools)
        with warnings.catch_warnings():
            # Deprecated in favour of Workflow, which cannot hold an LlmAgent yet; escalation is what a loop is for.
            warnings.filterwarnings("ignore", "LoopAgent is deprecated", DeprecationWarning)
            return LoopAgent(name="loop", sub_agents=[worker], max_iterations=2)

    return build


def _reporter(tools: list[Any]) -> BaseAgent:
    model = ScriptedModel(script=[call("show_report"), say("The report is all green.")])
    return LlmAgent(name="reporter", model=model, tools=tools)


SCENARIOS = {
    "transfer_to_agent": Scenario(hand_off, f"{HERE / 'action_tools.py'}:hand_off", _desk),
    "escalate": Scenario(give_up, f"{HERE / 'action_tools.py'}:give_up", _loop("give_up", {"reason": "stuck"})),
    "skip_summarization": Scenario(show_report, f"{HERE / 'action_tools.py'}:show_report", _reporter),
    "exit_loop": Scenario(exit_loop, f"{HERE / 'loop_tools.py'}:exit_loop_tool", _loop("exit_loop", {}), ours=False),
}


def _summary(events: list[Event]) -> list[dict[str, Any]]:
    """What an ADK user sees of each event: author, calls, answers, text and the actions ADK's flow acts on."""
    rows: list[dict[str, Any]] = []
    for event in events:
        parts = [] if event.content is None else event.content.parts or []
        rows.append({
            "author": event.author,
            "calls": [(c.name, c.args) for c in event.get_function_calls()],
            "responses": [(r.name, r.response) for r in event.get_function_responses()],
            "text": [part.text for part in parts if part.text],
            "transfer_to_agent": event.actions.transfer_to_agent,
            "escalate": event.actions.escalate,
            "skip_summarization": event.actions.skip_summarization,
        })  # fmt: skip
    return rows


async def _run(agent: BaseAgent) -> list[dict[str, Any]]:
    sessions = InMemorySessionService()
    runner = Runner(app_name="app", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="app", user_id="user")
    message = genai_types.Content(role="user", parts=[genai_types.Part(text="Please help.")])
    events: list[Event] = []
    try:
        with anyio.fail_after(DEADLINE):
            async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
                events.append(event)
    finally:
        await runner.close()
    return _summary(events)


@asynccontextmanager
async def _served(way: str, reference: str) -> AsyncGenerator[list[Any]]:
    """The tool of `reference` served by a `serve` child, as the ADK tools of `to_adk(McpToolset(...))`."""
    transport, era = way.split("-")
    mode = "legacy" if era == "legacy" else "auto"
    serve = [sys.executable, "-m", "gateway.cli", "serve", "--tools", reference, "--state", ":memory:"]
    if transport == "stdio":
        params = StdioConnectionParams(command=serve[0], args=serve[1:], cwd=str(ROOT))
        yield [to_adk(McpToolset(connection_params=params, mode=mode))]
        return
    port = free_port()
    command = [*serve, "--transport", "http", "--port", str(port)]
    async with await anyio.open_process(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=None) as process:
        try:
            await wait_for_port(port, DEADLINE, process)
            url = StreamableHTTPConnectionParams(url=f"http://127.0.0.1:{port}/mcp")
            yield [to_adk(McpToolset(connection_params=url, mode=mode))]
        finally:
            process.kill()


@pytest.mark.parametrize("way", SERVED_WAYS)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_a_served_tools_actions_drive_an_adk_agent_as_the_same_tool_in_process_does(name: str, way: str) -> None:
    scenario = SCENARIOS[name]
    native = await _run(scenario.agent([AdkFunctionTool(scenario.function)]))
    async with _served(way, scenario.reference) as tools:
        served = await _run(scenario.agent(tools))
    assert served == native


@pytest.mark.parametrize("name", sorted(name for name, scenario in SCENARIOS.items() if scenario.ours))
async def test_our_tool_lent_through_to_adk_drives_an_adk_agent_as_a_native_adk_tool_does(name: str) -> None:
    scenario = SCENARIOS[name]
    native = await _run(scenario.agent([AdkFunctionTool(scenario.function)]))
    lent = await _run(scenario.agent([to_adk(FunctionTool(scenario.function))]))
    assert lent == native


async def test_the_native_runs_show_each_action_taking_effect() -> None:
    """The baselines above are meaningful: in-process, each action changes what the agents do."""
    transfer = await _run(SCENARIOS["transfer_to_agent"].agent([AdkFunctionTool(hand_off)]))
    assert [row["author"] for row in transfer][-1] == SUPPORT_AGENT
    assert transfer[-1]["text"] == ["Support here."]
    escalate = await _run(SCENARIOS["escalate"].agent([AdkFunctionTool(give_up)]))
    assert sum(1 for row in escalate if row["calls"]) == 1
    skip = await _run(SCENARIOS["skip_summarization"].agent([AdkFunctionTool(show_report)]))
    assert skip[-1]["responses"] == [("show_report", {"report": "all green"})]
    assert skip[-1]["skip_summarization"] is True


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_served_google_adk_exit_loop_answers_a_result_and_escalates(mode: Any) -> None:
    async with (
        ToolServer([from_adk(AdkFunctionTool(exit_loop))]) as server,
        Client(server.server, mode=mode) as client,
    ):
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("exit_loop", {})
    assert not result.is_error, result.content
    assert result.structured_content == {"result": None}
    meta = result.meta or {}
    assert (meta.get(ESCALATE_META_KEY), meta.get(SKIP_SUMMARIZATION_META_KEY)) == (True, True)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_served_agent_that_escalates_itself_escalates_its_result(mode: Any) -> None:
    quit_model.script[:] = [call("exit_loop")]
    notes_model.script[:] = note_script("the sky is blue")
    async with (
        ToolServer([from_adk(quitter), from_adk(root_agent)]) as server,
        Client(server.server, mode=mode) as client,
    ):
        with anyio.fail_after(DEADLINE):
            quit_result = await client.call_tool("quitter", {"request": "Stop now."})
            note_result = await client.call_tool("notetaker", {"request": "Remember that the sky is blue."})
    assert not quit_result.is_error, quit_result.content
    assert (quit_result.meta or {}).get(ESCALATE_META_KEY) is True
    assert not note_result.is_error, note_result.content
    assert ESCALATE_META_KEY not in (note_result.meta or {})


async def test_google_adks_own_mcp_toolset_served_by_us_keeps_its_upstreams_action_keys() -> None:
    from google.adk.tools.mcp_tool import McpToolset as AdkMcpToolset
    from google.adk.tools.mcp_tool.mcp_session_manager import StdioConnectionParams as AdkStdioConnectionParams
    from mcp import StdioServerParameters

    upstream = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", "--tools", SCENARIOS["transfer_to_agent"].reference, "--state", ":memory:"],
        cwd=str(ROOT),
    )
    toolset = AdkMcpToolset(connection_params=AdkStdioConnectionParams(server_params=upstream, timeout=DEADLINE))
    async with ToolServer([toolset]) as server, Client(server.server) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("hand_off", {"topic": "refund"})
    assert not result.is_error, result.content
    assert result.structured_content == {"handed_off": "refund"}
    assert (result.meta or {}).get(TRANSFER_TO_AGENT_META_KEY) == SUPPORT_AGENT


@pytest.mark.parametrize("kind", ["ours", "google-adk"])
async def test_direct_state_delta_writes_and_an_error_calls_writes_are_kept_as_google_adk_keeps_them(
    kind: str,
) -> None:
    functions = (note_directly, try_hard, read_notes)
    tools = [FunctionTool(f) if kind == "ours" else from_adk(AdkFunctionTool(f)) for f in functions]
    async with ToolServer(tools) as server, Client(server.server, mode="auto") as client:
        with anyio.fail_after(DEADLINE):
            for name, args in [("note_directly", {"note": "a"}), ("note_directly", {"note": "b"}), ("try_hard", {})]:
                await client.call_tool(name, args, meta=SESSION)
            failed = await client.call_tool("try_hard", {}, meta=SESSION)
            read = await client.call_tool("read_notes", {}, meta=SESSION)
    assert failed.is_error
    assert read.structured_content == {"notes": ["a", "b"], "tries": 2}
