"""Long-running tools report progress; a call the client abandons is cancelled on the server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, types
from server_harness import (
    DEADLINE,
    ERAS,
    Era,
    StartedSignal,
    Transport,
    connect,
    http_server,
    serve_and_connect,
    wait_for_file,
)

from gateway.server import ToolServer
from gateway.tools import LongRunningFunctionTool

pytestmark = pytest.mark.anyio


class ProgressLog:
    """A progress callback that keeps every notification."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.updates.append((progress, total, message))


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", ["http", "sse", "stdio"])
async def test_a_long_running_tool_reports_each_yield_as_monotonic_progress(
    transport: Transport, era: Era, state_file: Path
) -> None:
    log = ProgressLog()
    async with serve_and_connect(transport, era, state_file) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("count_up", {"steps": 4}, progress_callback=log)
    assert result.structured_content == {"counted": 4}
    assert [message for _, _, message in log.updates] == [f"step {step} of 4" for step in range(1, 5)]
    progress = [value for value, _, _ in log.updates]
    assert progress == sorted(progress)
    assert len(set(progress)) == len(progress)


async def build(steps: int) -> AsyncIterator[dict[str, Any]]:
    """Build in steps, reporting each; the last value is the build's result."""
    for step in range(1, steps + 1):
        yield {"progress": step, "total": steps, "message": f"built {step} of {steps}"}
    yield {"built": steps}


@pytest.mark.parametrize("era", ERAS)
async def test_a_long_running_tools_result_is_not_sent_as_progress(era: Era) -> None:
    log = ProgressLog()
    async with (
        http_server(ToolServer([LongRunningFunctionTool(build)])) as base_url,
        connect("http", era, base_url) as client,
    ):
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("build", {"steps": 3}, progress_callback=log)
    assert result.structured_content == {"built": 3}
    assert log.updates == [(step, 3, f"built {step} of 3") for step in (1, 2, 3)]


async def _cancel_while_running(client: Client, marker: anyio.Path) -> None:
    started = StartedSignal()

    async def call() -> None:
        await client.call_tool("wait_forever", {"marker": str(marker)}, progress_callback=started)

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await started.event.wait()
            tg.cancel_scope.cancel()


async def _still_serving(client: Client) -> None:
    with anyio.fail_after(DEADLINE):
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", ["http", "sse", "stdio"])
async def test_cancelling_the_awaiting_task_cancels_the_tool_and_the_server_keeps_serving(
    transport: Transport, era: Era, state_file: Path, marker: anyio.Path
) -> None:
    async with serve_and_connect(transport, era, state_file) as client:
        await _cancel_while_running(client, marker)
        assert await wait_for_file(marker) == "cancelled"
        await _still_serving(client)


@pytest.mark.parametrize("era", ERAS)
async def test_a_read_timeout_cancels_the_tool_on_the_server(era: Era, marker: anyio.Path) -> None:
    async with http_server() as base_url, connect("http", era, base_url) as client:
        with anyio.fail_after(DEADLINE), pytest.raises(MCPError) as raised:
            await client.call_tool("wait_forever", {"marker": str(marker)}, read_timeout_seconds=1.0)
        assert await wait_for_file(marker) == "cancelled"
        await _still_serving(client)
    assert raised.value.error.code == types.REQUEST_TIMEOUT
