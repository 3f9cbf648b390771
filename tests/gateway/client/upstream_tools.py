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

from pydantic import BaseModel

from adapters import Media
from gateway.tools import LongRunningFunctionTool, ToolContext
from tests.support.sample_tools import (
    FeatureToolset,
    ask_name,
    count_up,
    summarize,
    toggle_feature,
    wait_forever,
)

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


def quiet_steps() -> Generator[dict[str, int], None, str]:
    """Report progress with numbers only, no message."""
    yield {"progress": 1, "total": 2}
    yield {"progress": 2, "total": 2}
    return "quiet"


def record_call(marker: str) -> str:
    """Append one line to `marker` per call (a side effect a test counts)."""
    with Path(marker).open("a") as handle:
        handle.write("called\n")
    return "recorded"


def whoami(tool_context: ToolContext) -> dict[str, str]:
    """The principal and session key the server sees for this call."""
    return {"principal": tool_context.user_id, "session": tool_context.session_id}


def record_and_exit(marker: str) -> str:
    """Append one line to `marker`, then end the server process at once (a stdio upstream dying mid-call)."""
    record_call(marker)
    os._exit(3)


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
