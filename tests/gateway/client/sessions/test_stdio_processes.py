"""Stdio upstreams leave no processes behind: not after many sessions, not when a call is cancelled."""

from __future__ import annotations

import anyio
import pytest
from client_harness import DEADLINE, tiny_stdio

from gateway.client import McpToolset
from gateway.tools import ToolContext
from tests.support.client_callbacks import ClientCallbacks
from tests.support.processes import child_pids

CYCLES = 50


@pytest.mark.anyio
async def test_fifty_stdio_sessions_opened_and_closed_leave_no_child_process() -> None:
    before = child_pids()
    with anyio.fail_after(DEADLINE * 3):
        for _ in range(CYCLES):
            async with McpToolset(connection_params=tiny_stdio(), mode="legacy") as toolset:
                assert [tool.name for tool in await toolset.get_tools()] == ["echo", "hang"]
    assert child_pids() == before


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_cancelling_a_task_in_the_middle_of_a_call_leaves_no_child_process(mode: str) -> None:
    before = child_pids()
    recorder = ClientCallbacks()
    children: set[int] = set()

    async def call_and_hang() -> None:
        async with McpToolset(
            connection_params=tiny_stdio(), mode=mode, progress_callback=recorder.on_progress
        ) as toolset:
            [_, hang] = await toolset.get_tools()
            children.update(child_pids() - before)
            await hang.run_async(args={}, tool_context=ToolContext())

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call_and_hang)
            await recorder.started.wait()
            tg.cancel_scope.cancel()
    assert len(children) == 1
    assert child_pids() == before


@pytest.mark.anyio
async def test_an_upstreams_stderr_goes_to_the_log_line_by_line_under_its_name(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level("INFO", logger="gateway.client.stderr")
    with anyio.fail_after(DEADLINE):
        async with McpToolset(connection_params=tiny_stdio(log_name="tiny")) as toolset:
            (echo, _) = await toolset.get_tools()
            for text in ("one", "two"):
                await echo.run_async(args={"text": text}, tool_context=ToolContext())
    # Closed: the child is gone and what it wrote has been read.
    records = [record for record in caplog.records if record.name == "gateway.client.stderr"]
    assert [record.getMessage() for record in records] == ["[tiny] tiny: echo one", "[tiny] tiny: echo two"]
    assert {getattr(record, "upstream", None) for record in records} == {"tiny"}
    assert "tiny: echo" not in capfd.readouterr().err


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_call_whose_arguments_cannot_be_encoded_fails_alone_and_the_stdio_session_serves_on(mode: str) -> None:
    """A lone surrogate has no UTF-8 form: the SDK's stdio writer raised on it and ended the session (and the
    upstream process) that every call shared; only that call fails now, with an error naming the reason."""
    before = child_pids()
    with anyio.fail_after(DEADLINE):
        async with McpToolset(connection_params=tiny_stdio(), mode=mode) as toolset:
            (echo, _) = await toolset.get_tools()
            first = await echo.run_async(args={"text": "first"}, tool_context=ToolContext())
            children = child_pids() - before
            refused = await echo.run_async(args={"text": "lone \ud800"}, tool_context=ToolContext())
            after = await echo.run_async(args={"text": "after"}, tool_context=ToolContext())
            still = child_pids() - before
    assert len(children) == 1
    assert still == children
    assert (first, after) == ({"result": "first"}, {"result": "after"})
    assert "cannot be sent" in refused["error"]
    assert "surrogates not allowed" in refused["error"]
