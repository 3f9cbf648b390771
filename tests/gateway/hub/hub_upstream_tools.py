"""Tools our server mode publishes as an upstream of the gateway tests (in-process over HTTP, or a stdio child).

Effects a test must observe from another process go to files whose paths are tool arguments. Tools a test must
see running before it acts report a `STARTED` progress message first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from adapters import FunctionDeclaration
from gateway.tools import FunctionTool, LongRunningFunctionTool, ToolContext
from tests.support.sample_tools import ask_name, count_up, summarize, wait_forever


class ReadOnlyFunctionTool(FunctionTool):
    """A `FunctionTool` that says `readOnlyHint: true` (our tool model has no keyword for annotations)."""

    def _get_declaration(self) -> FunctionDeclaration:
        return super()._get_declaration().model_copy(update={"annotations": {"readOnlyHint": True}})


def echo(text: str) -> str:
    """Say `text` back."""
    return text


def record(marker: str) -> str:
    """Append one line to `marker` per call (a side effect a test counts). Says nothing about being safe."""
    with Path(marker).open("a") as handle:
        handle.write("called\n")
    return "recorded"


def peek(marker: str) -> str:
    """Read `marker` without changing anything (published with `readOnlyHint: true`)."""
    path = Path(marker)
    return path.read_text() if path.exists() else ""


def tally(tool_context: ToolContext) -> int:
    """Count the calls of this upstream session, in session-scoped state."""
    count = int(tool_context.state.get("count", 0)) + 1
    tool_context.state["count"] = count
    return count


def process_id() -> int:
    """The id of the process serving this call (a restarted upstream answers with another)."""
    return os.getpid()


def crash() -> str:
    """End this server's process at once (an upstream dying in the middle of a call)."""
    os._exit(1)


async def quiet_progress(tool_context: ToolContext) -> str:
    """Report progress without messages."""
    await tool_context.report_progress(1, 2)
    await tool_context.report_progress(2, 2)
    return "done"


TOOLS: list[Any] = [
    echo,
    record,
    ReadOnlyFunctionTool(peek),
    tally,
    LongRunningFunctionTool(count_up),
    ask_name,
    summarize,
    wait_forever,
    process_id,
    crash,
    quiet_progress,
]
"""What `adk-mcp-gateway serve --tools tests/gateway/hub/hub_upstream_tools.py:TOOLS` publishes."""
