"""Parallel tool calls and state: no update is lost, and calls that do not use state still run side by side.

LLM clients call tools in parallel in one session. Each test here makes its calls through a real MCP transport
(streamable HTTP on loopback) onto a real SQLite file and checks the totals end exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from fixture_tools import TOOLS
from mcp import Client
from server_harness import DEADLINE, Era, connect, http_server

from gateway.config.references import load_tools
from gateway.server import SESSION_META_KEY, ToolServer
from gateway.state import SqliteStateStore
from gateway.tools import ToolContext

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "functions.py"
SESSION_KEY = "parallel-state-session-5f0c2a8e9d174b36"


async def _bump_many(client: Client, calls: int, meta: dict[str, Any] | None) -> None:
    for _ in range(calls):
        result = await client.call_tool("bump", {}, meta=meta)
        assert not result.is_error, result.content


async def _bump_in_parallel(client: Client, tasks: int, calls: int, meta: dict[str, Any] | None = None) -> None:
    with anyio.fail_after(DEADLINE * 6):
        async with anyio.create_task_group() as tg:
            for _ in range(tasks):
                tg.start_soon(_bump_many, client, calls, meta)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_sixteen_tasks_of_fifty_counter_calls_in_one_session_end_exact(era: Era, tmp_path: Path) -> None:
    server = ToolServer(TOOLS, state_store=SqliteStateStore(tmp_path / "state.db"))
    # The handshake era's session is its `mcp-session-id`; the modern era's, the documented `_meta` key.
    meta = {SESSION_META_KEY: SESSION_KEY} if era == "modern" else None
    async with http_server(server) as base_url, connect("http", era, base_url) as client:
        await _bump_in_parallel(client, 16, 50, meta)
        result = await client.call_tool("bump", {}, meta=meta)
    assert result.structured_content == {"session": 801, "user": 801, "app": 801}


async def test_parallel_sessions_lose_no_user_or_app_increment(tmp_path: Path) -> None:
    server = ToolServer(TOOLS, state_store=SqliteStateStore(tmp_path / "state.db"))
    async with http_server(server) as base_url:

        async def one_session(index: int) -> None:
            meta = {SESSION_META_KEY: f"{SESSION_KEY}-{index}"}
            async with connect("http", "modern", base_url) as client:
                await _bump_in_parallel(client, 2, 10, meta)
                result = await client.call_tool("read_state", {}, meta=meta)
            assert result.structured_content is not None
            assert result.structured_content["state"]["count"] == 20

        async with anyio.create_task_group() as tg:
            for index in range(8):
                tg.start_soon(one_session, index)

        async with connect("http", "modern", base_url) as client:
            result = await client.call_tool("bump", {}, meta={SESSION_META_KEY: f"{SESSION_KEY}-0"})
    assert result.structured_content == {"session": 21, "user": 161, "app": 161}


async def test_two_processes_sharing_one_state_file_lose_no_update_of_one_session(tmp_path: Path) -> None:
    # Two servers on one SQLite file stand for two processes: no in-process lock spans them.
    first = ToolServer(TOOLS, state_store=SqliteStateStore(tmp_path / "state.db"))
    second = ToolServer(TOOLS, state_store=SqliteStateStore(tmp_path / "state.db"))
    meta = {SESSION_META_KEY: SESSION_KEY}
    async with (
        http_server(first) as first_url,
        http_server(second) as second_url,
        connect("http", "modern", first_url) as one,
        connect("http", "modern", second_url) as other,
    ):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_bump_in_parallel, one, 4, 25, meta)
            tg.start_soon(_bump_in_parallel, other, 4, 25, meta)
        result = await one.call_tool("bump", {}, meta=meta)
    assert result.structured_content == {"session": 201, "user": 201, "app": 201}


async def test_five_parallel_remember_calls_keep_every_note(tmp_path: Path) -> None:
    server = ToolServer(load_tools(str(EXAMPLE)), state_store=SqliteStateStore(tmp_path / "state.db"))
    notes = [f"note {index}" for index in range(5)]
    async with http_server(server) as base_url, connect("http", "legacy", base_url) as client:
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                for note in notes:
                    tg.start_soon(client.call_tool, "remember", {"note": note})
            result = await client.call_tool("remember", {"note": "last"})
    assert result.structured_content is not None
    remembered = result.structured_content["notes"]
    assert sorted(remembered) == sorted([*notes, "last"])
    assert remembered[-1] == "last"


async def test_calls_that_do_not_use_state_run_in_parallel_in_one_session(tmp_path: Path) -> None:
    ping_arrived, pong_arrived = anyio.Event(), anyio.Event()

    async def ping() -> str:
        """Wait for pong."""
        ping_arrived.set()
        await pong_arrived.wait()
        return "ping"

    async def pong() -> str:
        """Wait for ping."""
        pong_arrived.set()
        await ping_arrived.wait()
        return "pong"

    server = ToolServer([ping, pong], state_store=SqliteStateStore(tmp_path / "state.db"))
    answers: list[str] = []

    async def call(client: Client, name: str) -> None:
        result = await client.call_tool(name, {})
        answers.append(result.content[0].text)  # type: ignore[union-attr]

    async with http_server(server) as base_url, connect("http", "legacy", base_url) as client:
        # Each call waits for the other: serialising them would never finish.
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, client, "ping")
                tg.start_soon(call, client, "pong")
    assert sorted(answers) == ["ping", "pong"]


async def test_a_state_using_call_does_not_hold_up_another_sessions_calls(tmp_path: Path) -> None:
    release, holding = anyio.Event(), anyio.Event()

    async def hold(tool_context: ToolContext) -> int:
        """Increment the session counter once released."""
        holding.set()
        await release.wait()
        tool_context.state["n"] = int(tool_context.state.get("n", 0)) + 1
        return int(tool_context.state["n"])

    def peek(tool_context: ToolContext) -> int:
        """The session counter."""
        return int(tool_context.state.get("n", 0))

    server = ToolServer([hold, peek], state_store=SqliteStateStore(tmp_path / "state.db"))
    async with (
        http_server(server) as base_url,
        connect("http", "legacy", base_url) as client,
        connect("http", "legacy", base_url) as other_session,
    ):
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "hold", {})
                await holding.wait()
                assert (await other_session.call_tool("peek", {})).structured_content == {"result": 0}
                release.set()
            assert (await client.call_tool("peek", {})).structured_content == {"result": 1}
