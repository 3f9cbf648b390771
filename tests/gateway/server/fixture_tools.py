"""Tools the server-mode tests publish, in-process and from a real `adk-mcp-gateway serve` child.

Side effects that a test must observe from another process go to files whose paths are tool arguments.
Tools that must be seen running before a test acts (to cancel them, to stop the server) send a progress
notification first, so the test waits on an event rather than a sleep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from gateway.tools import FunctionTool, LongRunningFunctionTool, ToolContext
from tests.support.sample_tools import (
    STARTED,
    FeatureToolset,
    ask_name,
    count_up,
    summarize,
    toggle_feature,
    wait_forever,
)


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return a + b


def greet(name: str, punctuation: str = "!") -> str:
    """Greet someone by name."""
    return f"Hello, {name}{punctuation}"


def remove_item(item: str, marker: str, tool_context: ToolContext) -> dict[str, Any]:
    """Remove an item (a destructive action that a human must confirm); records the removal in `marker`."""
    confirmation = tool_context.tool_confirmation
    Path(marker).write_text(item)
    return {"removed": item, "confirmed": confirmation is not None and confirmation.confirmed}


remove_item_tool = FunctionTool(remove_item, require_confirmation=True)


def transfer(amount: int, marker: str, tool_context: ToolContext) -> dict[str, Any]:
    """Move money, after asking for a confirmation that carries a payload."""
    confirmation = tool_context.tool_confirmation
    if confirmation is None:
        tool_context.request_confirmation(hint=f"Transfer {amount} EUR?", payload={"amount": amount, "to": "bob"})
        return {"status": "awaiting confirmation"}
    if not confirmation.confirmed:
        return {"error": "The transfer was rejected."}
    Path(marker).write_text(str(amount))
    return {"transferred": amount, "payload": confirmation.payload, "confirmed": confirmation.confirmed}


count_up_tool = LongRunningFunctionTool(count_up)


async def slow_job(seconds: float, tool_context: ToolContext) -> str:
    """Work for `seconds`, after announcing that it started."""
    await tool_context.report_progress(0, message=STARTED)
    await anyio.sleep(seconds)
    return "finished"


def bump(tool_context: ToolContext) -> dict[str, int]:
    """Increment a session, a `user:` and an `app:` counter; returns the three new values."""
    state = tool_context.state
    for key in ("count", "user:count", "app:count"):
        state[key] = int(state.get(key, 0)) + 1
    return {"session": state["count"], "user": state["user:count"], "app": state["app:count"]}


def set_key(key: str, value: str, tool_context: ToolContext) -> str:
    """Store one session key."""
    tool_context.state[key] = value
    return value


def read_state(tool_context: ToolContext) -> dict[str, Any]:
    """Every state key this call sees."""
    return {"state": tool_context.state.to_dict()}


async def chatty(tool_context: ToolContext) -> str:
    """Send a log message to the client."""
    await tool_context.log("info", {"said": "hello from a tool"}, logger="chatty")
    return "logged"


feature_toggle = FeatureToolset()

TOOLS: list[Any] = [
    add,
    greet,
    remove_item_tool,
    transfer,
    count_up_tool,
    wait_forever,
    slow_job,
    bump,
    set_key,
    read_state,
    ask_name,
    summarize,
    chatty,
    toggle_feature,
    feature_toggle,
]
"""Everything, in publishing order (what `--tools tests/gateway/server/fixture_tools.py:TOOLS` serves)."""
