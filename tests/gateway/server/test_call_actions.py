"""What a tool call asks for besides its result: state writes and `EventActions`, as google-adk keeps them.

google-adk saves a call's `state_delta` with its function-response event, whether the tool wrote `state[...]` or
`actions.state_delta[...]`, and whether it answered data or `{"error": ...}`; a raised exception loses the call. The
actions ADK's flow acts on (`transfer_to_agent`, `escalate`, `skip_summarization`, `artifact_delta`) reach an MCP
client as the result's documented `_meta` keys.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, types
from server_harness import DEADLINE, ERAS, Era

from adapters import Media
from adapters.meta_keys import (
    ARTIFACT_DELTA_META_KEY,
    ESCALATE_META_KEY,
    SKIP_SUMMARIZATION_META_KEY,
    TRANSFER_REASON_META_KEY,
    TRANSFER_TO_AGENT_META_KEY,
)
from gateway import FunctionTool, ToolContext
from gateway.server import SESSION_META_KEY, ToolServer

pytestmark = pytest.mark.anyio

SESSION: Any = {SESSION_META_KEY: "actions-session-0123456789"}
OUR_PREFIX = "adk-mcp-gateway/"


def note_directly(note: str, tool_context: ToolContext) -> dict[str, Any]:
    """Record a note through the actions, as ADK's docs show for `state_delta`."""
    notes = [*tool_context.state.get("notes", []), note]
    tool_context.actions.state_delta["notes"] = notes
    tool_context.actions.state_delta["user:last_note"] = note
    tool_context.actions.state_delta["temp:scratch"] = note
    return {"noted": note}


def read_notes(tool_context: ToolContext) -> dict[str, Any]:
    """Read what the session holds."""
    state = tool_context.state
    return {key: state.get(key) for key in ("notes", "user:last_note", "temp:scratch", "tries")}


def try_hard(tool_context: ToolContext) -> dict[str, Any]:
    """Count an attempt, then fail."""
    tool_context.state["tries"] = tool_context.state.get("tries", 0) + 1
    return {"error": "It did not work this time."}


def crash(tool_context: ToolContext) -> dict[str, Any]:
    """Count an attempt, then raise."""
    tool_context.state["tries"] = 100
    raise RuntimeError("boom")


async def route(tool_context: ToolContext) -> dict[str, Any]:
    """Hand over to billing, escalate, show the answer as it is and save a file."""
    actions = tool_context.actions
    actions.transfer_to_agent = "billing"
    actions.transfer_reason = "an invoice question"
    actions.escalate = True
    actions.skip_summarization = True
    await tool_context.save_artifact("invoice.txt", Media(b"42 EUR", "text/plain"))
    return {"routed": True}


def plain() -> dict[str, Any]:
    """Ask for nothing."""
    return {"plain": True}


TOOLS = [FunctionTool(f) for f in (note_directly, read_notes, try_hard, crash, route, plain)]


async def _call(client: Client, name: str, args: dict[str, Any] | None = None) -> types.CallToolResult:
    with anyio.fail_after(DEADLINE):
        return await client.call_tool(name, args or {}, meta=SESSION)


@pytest.mark.parametrize("era", ERAS)
async def test_direct_state_delta_writes_are_saved_for_the_next_call_and_temp_keys_are_not(era: Era) -> None:
    mode = "legacy" if era == "legacy" else "auto"
    async with ToolServer(TOOLS) as server, Client(server.server, mode=mode) as client:
        await _call(client, "note_directly", {"note": "first"})
        await _call(client, "note_directly", {"note": "second"})
        read = await _call(client, "read_notes")
    assert read.structured_content == {
        "notes": ["first", "second"],
        "user:last_note": "second",
        "temp:scratch": None,
        "tries": None,
    }


@pytest.mark.parametrize("era", ERAS)
async def test_a_call_answering_an_error_keeps_its_state_writes_and_one_that_raises_does_not(era: Era) -> None:
    mode = "legacy" if era == "legacy" else "auto"
    async with ToolServer(TOOLS) as server, Client(server.server, mode=mode) as client:
        first = await _call(client, "try_hard")
        await _call(client, "try_hard")
        raised = await _call(client, "crash")
        read = await _call(client, "read_notes")
    assert first.is_error
    assert raised.is_error
    assert read.structured_content is not None
    assert read.structured_content["tries"] == 2


@pytest.mark.parametrize("era", ERAS)
async def test_a_tools_event_actions_reach_the_client_as_documented_meta_keys(era: Era) -> None:
    mode = "legacy" if era == "legacy" else "auto"
    async with ToolServer(TOOLS) as server, Client(server.server, mode=mode) as client:
        routed = await _call(client, "route")
        plain_result = await _call(client, "plain")
    assert not routed.is_error, routed.content
    assert routed.structured_content == {"routed": True}
    meta = routed.meta or {}
    assert {key: value for key, value in meta.items() if key.startswith(OUR_PREFIX)} == {
        TRANSFER_TO_AGENT_META_KEY: "billing",
        TRANSFER_REASON_META_KEY: "an invoice question",
        ESCALATE_META_KEY: True,
        SKIP_SUMMARIZATION_META_KEY: True,
        ARTIFACT_DELTA_META_KEY: {"invoice.txt": 0},
    }
    assert not [key for key in plain_result.meta or {} if key.startswith(OUR_PREFIX)]
