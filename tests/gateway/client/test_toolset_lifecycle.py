"""`McpToolset` used as ADK users use it: no `async with`, closed from any task, or never closed at all.

Construct it, `await toolset.get_tools()`, call tools, `await toolset.close()`; a toolset that is garbage-collected
or still open when the interpreter exits leaves no child process behind. The upstreams are real stdio children.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from client_harness import DEADLINE, HERE, ROOT, tiny_stdio

from gateway.client import McpToolset
from gateway.tools import ToolContext
from tests.support.processes import alive, child_pids

pytestmark = pytest.mark.anyio


async def children_gone(before: set[int]) -> set[int]:
    """The children started since `before` that are still alive once they had `DEADLINE` seconds to end."""
    with anyio.move_on_after(DEADLINE):
        # Polled: a child ending sends this process no event it could wait on here.
        while strays := child_pids() - before:  # noqa: ASYNC110
            await anyio.sleep(0.05)
        return strays
    return child_pids() - before


async def test_a_toolset_works_without_async_with_and_close_ends_its_child() -> None:
    before = child_pids()
    toolset = McpToolset(connection_params=tiny_stdio(), mode="legacy")
    with anyio.fail_after(DEADLINE):
        tools = {tool.name: tool for tool in await toolset.get_tools()}
        assert await tools["echo"].run_async(args={"text": "hi"}, tool_context=ToolContext()) == {"result": "hi"}
        assert len(child_pids() - before) == 1
        await toolset.close()
    assert child_pids() == before


async def test_a_toolset_opened_in_one_task_is_closed_from_another() -> None:
    before = child_pids()
    toolset = McpToolset(connection_params=tiny_stdio(), mode="legacy")
    names: list[str] = []

    async def list_tools() -> None:
        names.extend(tool.name for tool in await toolset.get_tools())

    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:
            tg.start_soon(list_tools)
        # The task that opened the session has ended; the session lives on until close.
        assert names == ["echo", "hang"]
        [echo, _] = await toolset.get_tools()
        assert await echo.run_async(args={"text": "again"}, tool_context=ToolContext()) == {"result": "again"}
        assert len(child_pids() - before) == 1
        async with anyio.create_task_group() as tg:
            tg.start_soon(toolset.close)
    assert child_pids() == before


async def test_a_closed_toolset_opens_a_new_session_when_used_again() -> None:
    before = child_pids()
    toolset = McpToolset(connection_params=tiny_stdio(), mode="legacy")
    with anyio.fail_after(DEADLINE):
        await toolset.get_tools()
        await toolset.close()
        assert [tool.name for tool in await toolset.get_tools()] == ["echo", "hang"]
        await toolset.close()
    assert child_pids() == before


async def test_a_garbage_collected_toolset_leaves_no_child_process() -> None:
    before = child_pids()
    toolset = McpToolset(connection_params=tiny_stdio("--linger"), mode="legacy")
    with anyio.fail_after(DEADLINE):
        await toolset.get_tools()
    assert len(child_pids() - before) == 1
    del toolset
    gc.collect()
    assert await children_gone(before) == set()


async def test_async_with_still_owns_the_sessions_of_its_block() -> None:
    before = child_pids()
    with anyio.fail_after(DEADLINE):
        async with McpToolset(connection_params=tiny_stdio(), mode="legacy") as toolset:
            assert [tool.name for tool in await toolset.get_tools()] == ["echo", "hang"]
            assert len(child_pids() - before) == 1
    assert child_pids() == before


LEFT_OPEN = textwrap.dedent(
    """
    import asyncio, os, sys
    from pathlib import Path

    sys.path.insert(0, {here!r})
    from client_harness import tiny_stdio
    from gateway.client import McpToolset
    from tests.support.processes import child_pids

    async def main():
        toolset = McpToolset(connection_params=tiny_stdio("--linger"), mode="legacy")
        await toolset.get_tools()
        Path({pids!r}).write_text(" ".join(str(pid) for pid in child_pids()))
        # No close: the interpreter exits with the toolset open.

    asyncio.run(main())
    """
)


async def test_a_toolset_left_open_at_interpreter_exit_leaves_no_child_process(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    script = LEFT_OPEN.format(here=str(HERE), pids=str(pids_file))
    with anyio.fail_after(DEADLINE):
        finished = await anyio.run_process(
            [sys.executable, "-c", script], cwd=ROOT, check=False, stderr=subprocess.STDOUT
        )
    assert finished.returncode == 0, finished.stdout.decode()
    [pid] = [int(pid) for pid in pids_file.read_text().split()]
    try:
        with anyio.move_on_after(DEADLINE):
            while alive(pid):  # noqa: ASYNC110 - another process's child sends no event
                await anyio.sleep(0.05)
        assert not alive(pid)
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
