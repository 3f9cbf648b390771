"""`McpToolset(enable_tasks=True)` against a server that answers calls with tasks (SEP-2663), over streamable HTTP.

The server (`tasks_upstream.py`) advances a task only when it is polled, so nothing here waits on a clock.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.client.context import ClientRequestContext
from tasks_upstream import TaskLog, http_app

from gateway import LongRunningFunctionTool
from gateway.client import McpToolset, StreamableHTTPConnectionParams
from gateway.client.task_consumer import POLL_CEILING, POLL_FLOOR, poll_interval
from gateway.server import ToolServer
from gateway.server.tasks import TaskSettings
from gateway.tools import ProgressLog, ToolContext
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_asgi, serving_tools

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def task_toolset(log: TaskLog, **options: Any) -> AsyncIterator[McpToolset]:
    async with serving_asgi(http_app(log)) as base_url:
        toolset = McpToolset(connection_params=StreamableHTTPConnectionParams(url=f"{base_url}/mcp"), **options)
        try:
            yield toolset
        finally:
            await toolset.close()


async def _call(toolset: McpToolset, name: str, args: dict[str, Any], context: ToolContext | None = None) -> Any:
    tool = next(tool for tool in await toolset.get_tools() if tool.name == name)
    with anyio.fail_after(DEADLINE):
        return await tool.run_async(args=args, tool_context=context or ToolContext())


def test_poll_interval_is_the_servers_clamped() -> None:
    assert poll_interval(0) == POLL_FLOOR
    assert poll_interval(2500) == 2.5
    assert poll_interval(3_600_000) == POLL_CEILING
    assert poll_interval(None, 0.7) == 0.7


async def test_a_task_is_polled_to_its_result() -> None:
    log = TaskLog()
    async with task_toolset(log, enable_tasks=True) as toolset:
        context = ToolContext()
        progress = context.progress_sink = ProgressLog()
        response = await _call(toolset, "slow_add", {"a": 2, "b": 3}, context)
    assert response["sum"] == 5
    assert not log.plain_calls
    (task_id,) = log.tasks
    # Two polls found it working (each reported as progress), the third completed it; every poll names the task.
    assert log.polls == [(task_id, task_id)] * 3
    assert [update["progress"] for update in progress.updates] == [1.0, 2.0]


async def test_without_enable_tasks_the_call_stays_synchronous() -> None:
    log = TaskLog()
    async with task_toolset(log) as toolset:
        response = await _call(toolset, "slow_add", {"a": 2, "b": 3})
    assert response == {"result": 5}
    assert log.plain_calls == ["slow_add"]
    assert not log.tasks


async def test_an_input_request_is_answered_by_the_elicitation_callback() -> None:
    log = TaskLog()
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with task_toolset(log, enable_tasks=True, elicitation_callback=elicit) as toolset:
        response = await _call(toolset, "ask_name", {})
    assert response == {"result": "Hello, Ada!"}
    assert asked == ["What is your name?"]
    ((task_id, answers),) = log.updates
    assert task_id in log.tasks
    assert answers == {"name-1": {"action": "accept", "content": {"name": "Ada"}}}


async def test_a_failed_task_is_an_error() -> None:
    log = TaskLog()
    async with task_toolset(log, enable_tasks=True) as toolset:
        response = await _call(toolset, "broken", {})
    assert "the job broke" in response["error"]
    assert not log.cancelled


async def test_cancelling_the_call_cancels_the_task() -> None:
    log = TaskLog()
    async with task_toolset(log, enable_tasks=True) as toolset:
        tool = next(tool for tool in await toolset.get_tools() if tool.name == "endless")
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: tool.run_async(args={}, tool_context=ToolContext()))
                await log.first_poll.wait()
                tg.cancel_scope.cancel()
            await log.cancel_seen.wait()
    (task_id,) = log.tasks
    assert log.cancelled == [task_id]
    assert log.tasks[task_id].status == "cancelled"


async def test_a_long_running_tool_served_by_our_server_is_finished_as_a_task() -> None:
    released = anyio.Event()

    async def crunch(n: int) -> AsyncGenerator[Any]:
        """Report progress, then wait for the test."""
        yield {"progress": 1, "total": 2, "message": "crunching"}
        await released.wait()
        yield n * 2

    # The call becomes a task at its first progress update, never by the clock.
    server = ToolServer([LongRunningFunctionTool(crunch)], tasks=TaskSettings(start_after=DEADLINE, poll_interval=0.05))
    updates: list[Any] = []

    async def on_update(update: Any) -> None:
        updates.append(update)
        released.set()

    async with serving_tools(server) as base_url:
        toolset = McpToolset(connection_params=StreamableHTTPConnectionParams(url=f"{base_url}/mcp"), enable_tasks=True)
        try:
            context = ToolContext()
            context.progress_sink = on_update
            response = await _call(toolset, "crunch", {"n": 21}, context)
        finally:
            await toolset.close()
    assert response == {"result": 42}
    # Progress came from polling the task (its status message, no total), not from the call's own notifications.
    assert updates[0] == {"progress": 1.0, "message": "crunching"}
