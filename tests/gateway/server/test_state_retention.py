"""Session state ends with its session: deleted HTTP sessions, closed SSE connections, idle expiry, retention.

Every test writes state through a real transport onto a real SQLite file and counts the file's rows. `user:` and
`app:` rows outlive every session.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path

import anyio
import pytest
from fixture_tools import TOOLS
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from server_harness import DEADLINE, TOOLS_REF, connect, http_client_for, http_server, run_serve

from gateway.errors import ConfigError
from gateway.server import SESSION_META_KEY, ToolServer
from gateway.state import SqliteStateStore, StateScope

pytestmark = pytest.mark.anyio


KEY = "retention-session-key-6a1d0c7e93f24b58"


def rows(path: Path) -> dict[str, int]:
    """How many rows of each scope the state file holds."""
    with closing(sqlite3.connect(path)) as db:
        counted = dict(db.execute("SELECT scope, count(*) FROM state GROUP BY scope").fetchall())
    return {scope: counted.get(scope, 0) for scope in ("session", "user", "app")}


async def wait_for_rows(path: Path, expected: dict[str, int]) -> None:
    """Wait until the file holds `expected` rows (a session ends after its client saw the end; no event says when)."""
    with anyio.fail_after(DEADLINE):
        while True:
            if rows(path) == expected:
                return
            await anyio.sleep(0.02)


async def test_deleted_http_sessions_and_closed_sse_connections_leave_no_session_rows(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with http_server(ToolServer(TOOLS, state_store=SqliteStateStore(path))) as base_url:
        for transport in ["http"] * 10 + ["sse"] * 5:
            # Leaving the client deletes its HTTP session (`DELETE /mcp`) or closes its SSE stream.
            async with connect(transport, "legacy", base_url) as client:  # type: ignore[arg-type]
                result = await client.call_tool("bump", {})
                assert not result.is_error
        # `count` per session, `user:count` and `app:count` once each.
        await wait_for_rows(path, {"session": 0, "user": 1, "app": 1})
        async with connect("http", "legacy", base_url) as client:
            assert (await client.call_tool("bump", {})).structured_content == {"session": 1, "user": 16, "app": 16}


async def test_an_http_session_that_expires_idle_leaves_no_session_rows(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    server = ToolServer(TOOLS, state_store=SqliteStateStore(path))
    async with http_server(server, session_idle_timeout=0.5) as base_url:
        # A client that goes away without deleting its session (and with no GET stream left open).
        async with http_client_for() as http:
            transport = streamable_http_client(f"{base_url}/mcp", http_client=http, terminate_on_close=False)
            async with Client(transport, mode="legacy") as client:
                await client.call_tool("bump", {})
        assert rows(path) == {"session": 1, "user": 1, "app": 1}
        await wait_for_rows(path, {"session": 0, "user": 1, "app": 1})


async def test_key_addressed_sessions_are_deleted_once_idle_past_the_retention(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    server = ToolServer(TOOLS, state_store=SqliteStateStore(path), session_retention=0.5)
    async with http_server(server) as base_url, connect("http", "modern", base_url) as client:
        for index in range(5):
            await client.call_tool("bump", {}, meta={SESSION_META_KEY: f"{KEY}-{index}"})
        await wait_for_rows(path, {"session": 0, "user": 1, "app": 1})


async def test_a_restarted_server_deletes_sessions_idle_past_the_retention_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    an_hour_ago = time.time() - 3600
    async with SqliteStateStore(path) as store:
        await store.apply(StateScope("adk-mcp-gateway", "local", "local/meta:old"), {"count": 1, "user:count": 1})
        await store.apply(StateScope("adk-mcp-gateway", "local", "local/meta:new"), {"count": 1, "app:count": 1})
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("UPDATE state SET updated_at = ? WHERE session_id = 'local/meta:old'", (an_hour_ago,))
        db.execute("UPDATE state SET updated_at = ? WHERE scope != 'session'", (an_hour_ago,))

    server = ToolServer(TOOLS, state_store=SqliteStateStore(path), session_retention=600)
    async with http_server(server) as base_url:
        # Swept before the server answered its first request.
        assert rows(path) == {"session": 1, "user": 1, "app": 1}
        async with connect("http", "modern", base_url) as client:
            kept = await client.call_tool("read_state", {}, meta={SESSION_META_KEY: "new"})
            gone = await client.call_tool("read_state", {}, meta={SESSION_META_KEY: "old"})
    assert kept.structured_content == {"state": {"count": 1, "user:count": 1, "app:count": 1}}
    assert gone.structured_content == {"state": {"user:count": 1, "app:count": 1}}


def test_session_retention_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="session_retention"):
        ToolServer(TOOLS, session_retention=0)


def test_the_serve_command_takes_the_retention_and_refuses_one_that_is_not_positive(tmp_path: Path) -> None:
    done = run_serve("--tools", TOOLS_REF, "--state", str(tmp_path / "s.db"), "--session-retention", "-1")
    assert done.returncode == 2, done.stderr
    assert "--session-retention" in done.stderr
    assert "Traceback" not in done.stderr
