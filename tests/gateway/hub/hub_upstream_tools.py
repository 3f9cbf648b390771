"""Tools our server mode publishes as an upstream of the gateway tests (in-process over HTTP, or a stdio child).

Effects a test must observe from another process go to files whose paths are tool arguments. Tools a test must
see running before it acts report a `STARTED` progress message first.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import anyio
from mcp import types

from adapters import FunctionDeclaration
from gateway.tools import FunctionTool, LongRunningFunctionTool, ToolContext

STARTED = "started"
"""The progress message a blocking tool sends once it is running."""


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
    """Block until cancelled; the `finally` writes `marker` so a test can see the cancellation arrived."""
    try:
        await tool_context.report_progress(0, message=STARTED)
        await anyio.sleep_forever()
    finally:
        # Synchronous on purpose: the call is being cancelled, so an await here would not run.
        Path(marker).write_text("cancelled")  # noqa: ASYNC240
    return "unreachable"


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
