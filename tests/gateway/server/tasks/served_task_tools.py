"""Long-running tools for the served-task tests, gated by events the tests open (they run in the test's process),
and how the tests poll a task.

`gates[name]` is the event `wait_for(gate=name)` waits on after its first progress update (`gate()` makes one);
`ended` collects the gates whose generator finished or was closed (a cancelled task closes its generator).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncGenerator
from typing import Any

import anyio

from gateway import LongRunningFunctionTool, ToolContext
from gateway.server.tasks import TaskSettings
from gateway.tasks.wire import TASKS_EXTENSION
from tests.support.deadlines import DEADLINE
from tests.support.modern_wire import ModernWire

gates: dict[str, anyio.Event] = {}
ended: dict[str, anyio.Event] = {}

TASKS = {TASKS_EXTENSION: {}}
# Tasks start at their first progress update here, never by the clock.
SETTINGS = TaskSettings(start_after=DEADLINE, poll_interval=0.05, watch=0.05)


def new_gate() -> str:
    """A fresh gate for `wait_for`, closed until the test sets `gates[name]`."""
    name = f"gate-{secrets.token_hex(4)}"
    gates[name] = anyio.Event()
    ended[name] = anyio.Event()
    return name


async def until(wire: ModernWire, task_id: str, *statuses: str) -> dict[str, Any]:
    """Poll `tasks/get` until the task reaches one of `statuses`."""
    with anyio.fail_after(DEADLINE):
        while True:
            task = await wire.request("tasks/get", {"taskId": task_id})
            if task["status"] in statuses:
                return task
            await anyio.sleep(0.02)


async def wait_for(gate: str) -> AsyncGenerator[Any]:
    """Report progress, then wait until the test opens `gate`."""
    yield {"progress": 1, "total": 2, "message": f"waiting for {gate}"}
    try:
        await gates[gate].wait()
        yield f"{gate} opened"
    finally:
        ended[gate].set()


async def archive(name: str, tool_context: ToolContext) -> AsyncGenerator[Any]:
    """Archive `name` once a human confirms it."""
    yield {"progress": 0, "message": f"looking at {name}"}
    confirmation = tool_context.tool_confirmation
    if confirmation is None or not confirmation.confirmed:
        tool_context.request_confirmation(hint=f"Archive {name}?")
        yield {"status": "waiting for a confirmation"}
        return
    yield f"archived {name}"


def quick(text: str) -> str:
    """Answer at once (a long-running tool that never needs a task)."""
    return f"quick {text}"


TOOLS: list[Any] = [
    LongRunningFunctionTool(wait_for),
    LongRunningFunctionTool(archive),
    LongRunningFunctionTool(quick),
]
