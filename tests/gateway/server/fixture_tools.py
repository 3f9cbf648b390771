"""Tools the server-mode tests publish, in-process and from a real `adk-mcp-gateway serve` child.

Side effects that a test must observe from another process go to files whose paths are tool arguments.
Tools that must be seen running before a test acts (to cancel them, to stop the server) send a progress
notification first, so the test waits on an event rather than a sleep.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import anyio
from mcp import types

from gateway.tools import BaseTool, BaseToolset, FunctionTool, LongRunningFunctionTool, ReadonlyContext, ToolContext

STARTED = "started"
"""The progress message a blocking tool sends once it is running."""


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


def count_up(steps: int = 3) -> Generator[str, None, dict[str, int]]:
    """Count up, reporting each step."""
    for step in range(1, steps + 1):
        yield f"step {step} of {steps}"
    return {"counted": steps}


count_up_tool = LongRunningFunctionTool(count_up)


async def wait_forever(marker: str, tool_context: ToolContext) -> str:
    """Block until cancelled; the `finally` writes `marker` so a test can see it ran."""
    try:
        await tool_context.report_progress(0, message=STARTED)
        await anyio.sleep_forever()
    finally:
        # Synchronous on purpose: the call is being cancelled, so an await here would not run.
        Path(marker).write_text("finally ran")  # noqa: ASYNC240
    return "unreachable"


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


async def ask_name(tool_context: ToolContext) -> dict[str, Any]:
    """Ask the user for their name through elicitation."""
    answer = await tool_context.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    return {"action": answer.action, "name": (answer.content or {}).get("name")}


async def summarize(text: str, tool_context: ToolContext) -> str:
    """Ask the client's model to summarise `text`."""
    reply = await tool_context.sample(f"Summarise: {text}", max_tokens=50)
    content = reply.content
    return content.text if isinstance(content, types.TextContent) else str(content)


async def chatty(tool_context: ToolContext) -> str:
    """Send a log message to the client."""
    await tool_context.log("info", {"said": "hello from a tool"}, logger="chatty")
    return "logged"


def secret_door() -> str:
    """Only listed once the feature is on."""
    return "you found it"


def toggle_feature(tool_context: ToolContext) -> bool:
    """Flip the session's `feature` flag, which changes the tools `FeatureToolset` offers."""
    tool_context.state["feature"] = not tool_context.state.get("feature", False)
    return bool(tool_context.state["feature"])


class FeatureToolset(BaseToolset):
    """Offers `secret_door` only while the session's `feature` state is on."""

    def __init__(self) -> None:
        super().__init__()
        self._door = FunctionTool(secret_door)

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        on = readonly_context is not None and bool(readonly_context.state.get("feature"))
        return [self._door] if on else []


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
