"""Tools the client, hub and server suites' fixture upstreams all publish (each lists them in its own `TOOLS`).

Tools a test must see running before it acts report a `STARTED` progress message first; effects a test must
observe from another process go to files whose paths are tool arguments.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import anyio
from mcp import types

from gateway.tools import BaseTool, BaseToolset, FunctionTool, ReadonlyContext, ToolContext

__all__ = ["STARTED", "FeatureToolset", "ask_name", "count_up", "summarize", "toggle_feature", "wait_forever"]

STARTED = "started"
"""The progress message a blocking tool sends once it is running."""


def count_up(steps: int = 3) -> Generator[str, None, dict[str, int]]:
    """Count up, reporting each step as progress."""
    for step in range(1, steps + 1):
        yield f"step {step} of {steps}"
    return {"counted": steps}


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


async def wait_forever(marker: str, tool_context: ToolContext) -> str:
    """Block until cancelled; the `finally` writes `cancelled` to `marker` so a test can see the cancellation
    arrived."""
    try:
        await tool_context.report_progress(0, message=STARTED)
        await anyio.sleep_forever()
    finally:
        # Synchronous on purpose: the call is being cancelled, so an await here would not run.
        Path(marker).write_text("cancelled")  # noqa: ASYNC240
    return "unreachable"


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
