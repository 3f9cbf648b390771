"""The tools the conformance suite's `tasks-*` scenarios call (SEP-2663), written with this project's tool API.

`test_task_conformance.py` serves this file with `python -m gateway.cli serve --tools <this file>`; every name
and behaviour is fixed by a scenario of `@modelcontextprotocol/conformance` 0.2.0-alpha.12 (`conformance list
--server`, the `tasks-*` ones). The task-supporting tools are `LongRunningFunctionTool`s: long-running is what
makes a tool's calls tasks. A tool becomes a task at its first progress update (or after a moment), so the ones
that must be tasks before they ask report progress first; `test_tool_with_task` asks first, so its question is a
round of the `tools/call` (MRTR) and the task comes after.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Final, Literal

import anyio

from gateway import LongRunningFunctionTool, ToolContext

__all__ = [
    "confirm_delete",
    "failing_job",
    "greet",
    "multi_input",
    "protocol_error_job",
    "slow_compute",
    "test_tool_with_task",
]

FAILING_TEXT: Final = "failing_job failed on purpose"
_CONFIRM_SCHEMA: Final[dict[str, Any]] = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}
_NAME_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


class TaskOnlyTool(LongRunningFunctionTool):
    """A long-running tool that runs only as a task (`execution.taskSupport: required`)."""

    @property
    def task_support(self) -> Literal["forbidden", "optional", "required"]:
        return "required"


def greet(name: str) -> str:
    """Greet someone (a plain tool: never a task)."""
    return f"Hello, {name}!"


async def _slow_compute(seconds: float, label: str = "") -> str:
    """Sleep `seconds`, then answer (`seconds: 0` answers at once)."""
    await anyio.sleep(seconds)
    return f"{label or 'slow_compute'} computed after {seconds:g} s"


async def _failing_job() -> dict[str, Any]:
    """Fail after about a second, with a tool error."""
    await anyio.sleep(1)
    return {"error": FAILING_TEXT}


async def _protocol_error_job(tool_context: ToolContext) -> AsyncGenerator[Any]:
    """Fail outside the tool: the state it leaves cannot be stored (a set is not JSON), so the server's write fails."""
    yield {"progress": 0, "message": "starting"}
    tool_context.state["protocol_error_job:left"] = {"not", "json"}
    yield "done"


async def _confirm_delete(filename: str, tool_context: ToolContext) -> AsyncGenerator[Any]:
    """Ask before deleting `filename` (nothing is deleted)."""
    yield {"progress": 0, "message": f"about to delete {filename}"}
    answer = await tool_context.elicit(f"Delete {filename}?", _CONFIRM_SCHEMA)
    confirmed = answer.action == "accept" and bool((answer.content or {}).get("confirm"))
    yield f"Deleted {filename}" if confirmed else f"Kept {filename}"


async def _multi_input(tool_context: ToolContext) -> AsyncGenerator[Any]:
    """Ask two questions at once; answer with both names."""
    yield {"progress": 0, "message": "asking twice"}
    names: dict[int, str] = {}

    async def ask(index: int) -> None:
        answer = await tool_context.elicit(f"Name {index}?", _NAME_SCHEMA)
        names[index] = str((answer.content or {}).get("name", ""))

    async with anyio.create_task_group() as group:
        group.start_soon(ask, 1)
        group.start_soon(ask, 2)
    yield f"Got {names[1]} and {names[2]}"


async def _test_tool_with_task(tool_context: ToolContext) -> AsyncGenerator[Any]:
    """Ask for a name (a round of the call), then greet it from a task."""
    answer = await tool_context.elicit("What is your name?", _NAME_SCHEMA)
    name = str((answer.content or {}).get("name", "nobody"))
    yield {"progress": 0, "message": "greeting"}
    yield f"Hello, {name}!"


def _named(tool: LongRunningFunctionTool, name: str) -> LongRunningFunctionTool:
    tool.name = name
    return tool


slow_compute = _named(LongRunningFunctionTool(_slow_compute), "slow_compute")
failing_job = _named(TaskOnlyTool(_failing_job), "failing_job")
protocol_error_job = _named(LongRunningFunctionTool(_protocol_error_job), "protocol_error_job")
confirm_delete = _named(LongRunningFunctionTool(_confirm_delete), "confirm_delete")
multi_input = _named(LongRunningFunctionTool(_multi_input), "multi_input")
test_tool_with_task = _named(TaskOnlyTool(_test_tool_with_task), "test_tool_with_task")
