"""google-adk's own tools served over MCP: declarations, calls, confirmations and state, with google-adk itself."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from mcp import Client, types
from mcp.client.context import ClientRequestContext

from gateway.config.references import load_tools
from gateway.server import SESSION_META_KEY, ToolServer
from gateway.state import SqliteStateStore
from tests.support.deadlines import DEADLINE

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
MODULE = str(HERE / "adk_modules.py")
Mode = Literal["legacy", "auto"]
MODES: tuple[Mode, ...] = ("legacy", "auto")
Action = Literal["accept", "decline", "cancel"]


class Human:
    """An elicitation callback answering with the given actions in turn; keeps what it was asked."""

    def __init__(self, actions: Iterable[Action] = ()) -> None:
        self._actions = iter(actions)
        self.asked: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        self.asked.append(params.message)
        action = next(self._actions)
        return types.ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)


@asynccontextmanager
async def serving(
    reference: str, mode: Mode = "legacy", human: Human | None = None, **options: Any
) -> AsyncGenerator[Client]:
    """A `ToolServer` of `reference`'s tools and an in-process client."""
    async with (
        ToolServer(load_tools(reference), **options) as server,
        Client(server.server, mode=mode, elicitation_callback=human or Human()) as client,
    ):
        yield client


async def _call(client: Client, name: str, args: dict[str, Any]) -> types.CallToolResult:
    with anyio.fail_after(DEADLINE):
        return await client.call_tool(name, args)


async def test_a_google_adk_function_tool_named_by_reference_is_served() -> None:
    async with serving(f"{MODULE}:weather_tool") as client:
        result = await _call(client, "get_weather", {"city": "Paris"})
    assert not result.is_error, result.content
    assert result.structured_content == {"city": "Paris", "celsius": 21}


@pytest.mark.parametrize("mode", MODES)
async def test_a_declined_google_adk_tool_that_requires_confirmation_does_not_run(mode: Mode, tmp_path: Path) -> None:
    marker = tmp_path / "deleted.txt"
    human = Human(["decline"])
    async with serving(f"{MODULE}:delete_tool", mode, human) as client:
        result = await _call(client, "delete_bucket", {"bucket": "photos", "marker": str(marker)})
    assert result.is_error
    assert result.content[0].text == "This tool call is rejected."  # pyright: ignore[reportAttributeAccessIssue]
    assert not marker.exists()
    assert human.asked == [f"Allow the tool call delete_bucket(bucket='photos', marker={str(marker)!r})?"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_accepted_google_adk_tool_that_requires_confirmation_runs_once(mode: Mode, tmp_path: Path) -> None:
    marker = tmp_path / "deleted.txt"
    async with serving(f"{MODULE}:delete_tool", mode, Human(["accept"])) as client:
        result = await _call(client, "delete_bucket", {"bucket": "photos", "marker": str(marker)})
    assert not result.is_error, result.content
    assert result.structured_content == {"deleted": "photos"}
    assert marker.read_text() == "photos"


async def test_an_accepting_answer_sent_before_a_google_adk_tool_asked_is_ignored(tmp_path: Path) -> None:
    marker = tmp_path / "deleted.txt"
    human = Human(["decline"])
    unasked = types.ElicitResult(action="accept", content={"confirm": True})
    async with serving(f"{MODULE}:delete_tool", "auto", human) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool(
                "delete_bucket", {"bucket": "photos", "marker": str(marker)}, input_responses={"elicit-0": unasked}
            )
    assert result.is_error
    assert len(human.asked) == 1
    assert not marker.exists()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("name", "args"), [("shred", {"document": "plans"}), ("wipe", {"disk": "sda"})])
async def test_a_function_whose_confirmed_tool_object_sits_in_an_agent_or_a_list_is_never_served_bare(
    mode: Mode, name: str, args: dict[str, Any], tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    human = Human(["decline"])
    async with serving(str(HERE / "held_tools.py"), mode, human) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        result = await _call(client, name, {**args, "marker": str(marker)})
    assert names == ["shred", "wipe"]
    assert result.is_error
    assert result.content[0].text == "This tool call is rejected."  # pyright: ignore[reportAttributeAccessIssue]
    assert not marker.exists()
    assert len(human.asked) == 1


# -- state ------------------------------------------------------------------------------------------------------


async def _count(client: Client, session: str) -> dict[str, Any]:
    with anyio.fail_after(DEADLINE):
        result = await client.call_tool("count", {}, meta={SESSION_META_KEY: session})
    assert not result.is_error, result.content
    return result.structured_content or {}


@pytest.mark.parametrize("mode", MODES)
async def test_an_adk_tool_counting_in_its_state_keeps_counting_in_every_scope_across_calls_and_a_restart(
    mode: Mode, tmp_path: Path
) -> None:
    state = tmp_path / "state.db"
    session = "chosen-session-0123456789abcdef"
    async with serving(f"{MODULE}:counter_tool", mode, state_store=SqliteStateStore(state)) as client:
        assert await _count(client, session) == {"calls": 1, "user:calls": 1, "app:calls": 1, "temp:seen": 1}
        assert await _count(client, session) == {"calls": 2, "user:calls": 2, "app:calls": 2, "temp:seen": 1}
    async with serving(f"{MODULE}:counter_tool", mode, state_store=SqliteStateStore(state)) as client:
        # A restarted server on the same store: the session, its user and the app keep counting; temp: never does.
        assert await _count(client, session) == {"calls": 3, "user:calls": 3, "app:calls": 3, "temp:seen": 1}
        # Another session of the same user: its own session count, the user's and the app's shared.
        assert await _count(client, "other-session-0123456789abcdef") == {
            "calls": 1,
            "user:calls": 4,
            "app:calls": 4,
            "temp:seen": 1,
        }


# -- confirmations ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_an_adk_tool_that_asks_for_confirmation_itself_runs_again_confirmed_after_an_accept(mode: Mode) -> None:
    human = Human(["accept"])
    async with serving(f"{MODULE}:transfer_tool", mode, human) as client:
        small = await _call(client, "transfer", {"amount": 30})
        big = await _call(client, "transfer", {"amount": 150})
    assert small.structured_content == {"transferred": 30, "confirmed": False}
    assert big.structured_content == {"transferred": 150, "confirmed": True}
    (asked,) = human.asked
    assert asked == "Allow the tool call transfer(amount=150)?\n\nTransfer 150 EUR?"


@pytest.mark.parametrize("mode", MODES)
async def test_a_declined_adk_confirmation_request_gets_adks_rejection_text(mode: Mode) -> None:
    async with serving(f"{MODULE}:transfer_tool", mode, Human(["decline"])) as client:
        result = await _call(client, "transfer", {"amount": 150})
    assert result.is_error
    assert result.content[0].text == "This tool call is rejected."  # pyright: ignore[reportAttributeAccessIssue]


async def test_an_adk_confirmation_predicate_asks_only_when_it_says_so() -> None:
    human = Human(["accept"])
    async with serving(f"{MODULE}:pay_tool", "legacy", human) as client:
        assert (await _call(client, "pay", {"amount": 20})).structured_content == {"paid": 20}
        assert human.asked == []
        assert (await _call(client, "pay", {"amount": 500})).structured_content == {"paid": 500}
    assert human.asked == ["Allow the tool call pay(amount=500)?"]


# -- other kinds of ADK tools -------------------------------------------------------------------------------------


async def test_a_module_of_adk_tools_publishes_each_tool_once_under_its_own_name() -> None:
    async with serving(MODULE) as client:
        listed = (await client.list_tools()).tools
    assert sorted(tool.name for tool in listed) == [
        "count",
        "count_steps",
        "delete_bucket",
        "get_weather",
        "pay",
        "start_job",
        "transfer",
        "watch_job",
    ]


async def test_an_adk_long_running_tool_keeps_adks_note_and_is_marked_long_running() -> None:
    async with serving(f"{MODULE}:job_tool") as client:
        (tool,) = (await client.list_tools()).tools
        result = await _call(client, "start_job", {"name": "backup"})
    assert tool.description is not None
    assert tool.description.endswith(
        "NOTE: This is a long-running operation. Do not call this tool again if it has "
        "already returned some intermediate or pending status."
    )
    assert tool.meta is not None
    assert any("long" in key.lower() for key in tool.meta)
    assert result.structured_content == {"status": "pending", "job": "backup"}


class ProgressLog:
    """A progress callback that keeps every notification."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.updates.append((progress, total, message))


async def _call_watching(client: Client, name: str, args: dict[str, Any]) -> tuple[types.CallToolResult, ProgressLog]:
    log = ProgressLog()
    with anyio.fail_after(DEADLINE):
        result = await client.call_tool(name, args, progress_callback=log)
    progress = [value for value, _, _ in log.updates]
    assert progress == sorted(progress), log.updates
    assert len(set(progress)) == len(progress), log.updates
    return result, log


@pytest.mark.parametrize("mode", MODES)
async def test_an_adk_long_running_async_generator_tools_yields_reach_the_client_as_progress(mode: Mode) -> None:
    async with serving(f"{MODULE}:watch_tool", mode) as client:
        result, log = await _call_watching(client, "watch_job", {"name": "backup"})
    assert not result.is_error, result.content
    # The last yield is the result, not progress.
    assert [json.loads(message or "") for _, _, message in log.updates] == [
        {"status": status, "job": "backup"} for status in ("queued", "running")
    ]
    assert result.structured_content == {"status": "done", "job": "backup"}


@pytest.mark.parametrize("mode", MODES)
async def test_an_adk_generator_tools_yields_are_progress_and_its_return_value_the_result(mode: Mode) -> None:
    async with serving(f"{MODULE}:steps_tool", mode) as client:
        result, log = await _call_watching(client, "count_steps", {"steps": 3})
    assert not result.is_error, result.content
    assert [message for _, _, message in log.updates] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert result.structured_content == {"counted": 3}


# google-adk's AgentTool itself passes the `plugins` argument it deprecates.
@pytest.mark.filterwarnings("ignore:The `plugins` argument is deprecated:DeprecationWarning")
async def test_an_adk_agent_tool_runs_its_agent_with_a_scripted_model() -> None:
    from google.adk.agents import LlmAgent
    from google.adk.tools import AgentTool
    from scripted_model import ScriptedModel, call, say

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedModel(script=[call("add", {"a": 2, "b": 3}), say("2 + 3 = 5")])
    agent = LlmAgent(name="calculator", model=model, tools=[add], description="Does arithmetic.")
    async with ToolServer([AgentTool(agent)]) as server, Client(server.server) as client:
        (tool,) = (await client.list_tools()).tools
        result = await _call(client, "calculator", {"request": "What is 2 + 3?"})
    assert tool.input_schema == {
        "type": "object",
        "properties": {"request": {"type": "string"}},
        "required": ["request"],
    }
    assert not result.is_error, result.content
    assert result.content[0].text == "2 + 3 = 5"  # pyright: ignore[reportAttributeAccessIssue]
    assert model.requests[0].contents[-1].parts[0].text == "What is 2 + 3?"  # pyright: ignore[reportOptionalSubscript, reportOptionalMemberAccess]


async def test_google_adks_own_mcp_toolset_is_served_through_the_gateway() -> None:
    from google.adk.tools.mcp_tool import McpToolset as AdkMcpToolset
    from google.adk.tools.mcp_tool.mcp_session_manager import StdioConnectionParams
    from mcp import StdioServerParameters

    time_server = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "UTC"]
    )
    toolset = AdkMcpToolset(
        connection_params=StdioConnectionParams(server_params=time_server, timeout=DEADLINE), tool_name_prefix="time"
    )
    async with ToolServer([toolset]) as server, Client(server.server) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        result = await _call(client, "time_get_current_time", {"timezone": "Europe/Paris"})
    assert names == ["time_convert_time", "time_get_current_time"]
    assert not result.is_error, result.content
    assert "Europe/Paris" in str(result.structured_content)


async def test_a_gateway_configs_tools_accept_google_adk_tool_objects(tmp_path: Path) -> None:
    from gateway.config import load_config
    from gateway.hub import gateway_tools

    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {}, "tools": [f"{MODULE}:weather_tool", f"{MODULE}:delete_tool"]}))
    async with ToolServer(gateway_tools(load_config(config))) as server, Client(server.server) as client:
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        result = await _call(client, "get_weather", {"city": "Oslo"})
    assert names == ["delete_bucket", "get_weather"]
    assert result.structured_content == {"city": "Oslo", "celsius": 21}
