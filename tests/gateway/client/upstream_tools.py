"""Tools our server mode publishes as the upstream of the client tests (in-process over HTTP, or a stdio child).

`sdk_upstream.py` publishes the same names and behaviour with the SDK's `MCPServer`, so one test body runs against
both. Effects a test must observe from another process go to files whose paths are tool arguments. Tools a test
must see running before it acts send a `STARTED` progress notification first.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from enum import StrEnum
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from pydantic import BaseModel

from adapters import Media
from gateway.tools import BaseTool, BaseToolset, FunctionTool, LongRunningFunctionTool, ReadonlyContext, ToolContext

STARTED = "started"
"""The progress message a blocking tool sends once it is running."""

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
"""A 1x1 transparent PNG."""


class Size(StrEnum):
    """Pizza sizes."""

    SMALL = "small"
    LARGE = "large"


class Order(BaseModel):
    """One pizza order."""

    size: Size
    toppings: list[str] = []


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def place_order(order: Order) -> str:
    """Place an order (its schema has `$defs`)."""
    return f"{order.size.value} pizza with {len(order.toppings)} toppings"


def fail(reason: str) -> dict[str, str]:
    """Always fail, saying why."""
    return {"error": reason}


def weather(city: str) -> dict[str, Any]:
    """Structured weather for a city."""
    return {"city": city, "celsius": 21}


def tiny_image() -> Media:
    """A 1x1 PNG."""
    return Media(PNG, "image/png")


def count_up(steps: int = 3) -> Generator[str, None, dict[str, int]]:
    """Count up, reporting each step as progress."""
    for step in range(1, steps + 1):
        yield f"step {step} of {steps}"
    return {"counted": steps}


def quiet_steps() -> Generator[dict[str, int], None, str]:
    """Report progress with numbers only, no message."""
    yield {"progress": 1, "total": 2}
    yield {"progress": 2, "total": 2}
    return "quiet"


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


def record_call(marker: str) -> str:
    """Append one line to `marker` per call (a side effect a test counts)."""
    with Path(marker).open("a") as handle:
        handle.write("called\n")
    return "recorded"


async def wait_forever(marker: str, tool_context: ToolContext) -> str:
    """Block until cancelled; the `finally` writes `marker` so a test can see the cancellation arrived."""
    try:
        await tool_context.report_progress(0, message=STARTED)
        await anyio.sleep_forever()
    finally:
        # Synchronous on purpose: the call is being cancelled, so an await here would not run.
        Path(marker).write_text("cancelled")  # noqa: ASYNC240
    return "unreachable"


def whoami(tool_context: ToolContext) -> dict[str, str]:
    """The principal and session key the server sees for this call."""
    return {"principal": tool_context.user_id, "session": tool_context.session_id}


def record_and_exit(marker: str) -> str:
    """Append one line to `marker`, then end the server process at once (a stdio upstream dying mid-call)."""
    record_call(marker)
    os._exit(3)


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


TOOLS: list[Any] = [
    add,
    place_order,
    fail,
    weather,
    tiny_image,
    LongRunningFunctionTool(count_up),
    LongRunningFunctionTool(quiet_steps),
    ask_name,
    summarize,
    record_call,
    wait_forever,
    whoami,
    record_and_exit,
    toggle_feature,
    FeatureToolset(),
]
"""What `adk-mcp-gateway serve --tools tests/gateway/client/upstream_tools.py:TOOLS` publishes."""
