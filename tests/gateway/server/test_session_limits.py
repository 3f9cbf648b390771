"""One client cannot lock everyone out: open sessions are limited per principal (per address when anonymous).

Sessions are opened with plain `initialize` POSTs on loopback, in bounded loops; a refused one gets HTTP 429 and a
JSON-RPC error that names the limit.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from fixture_tools import TOOLS
from server_harness import DEADLINE, TOOLS_REF, http_server, run_serve

from gateway.errors import ConfigError
from gateway.server import ToolServer
from gateway.server.http.app import create_app
from gateway.state import SqliteStateStore

pytestmark = pytest.mark.anyio


LIMIT = 5
ALICE = "tok-alice-0123456789abcdef"
BOB = "tok-bob-0123456789abcdef00"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def _client(token: str | None = None) -> httpx2.AsyncClient:
    headers = dict(HEADERS)
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(headers=headers, timeout=DEADLINE)


async def _open(http: httpx2.AsyncClient, base_url: str) -> httpx2.Response:
    return await http.post(f"{base_url}/mcp", json=INITIALIZE)


async def _open_until_refused(http: httpx2.AsyncClient, base_url: str) -> list[str]:
    """Open sessions until one is refused (at most twice the limit); returns the ids of those opened."""
    opened: list[str] = []
    for _ in range(2 * LIMIT):
        response = await _open(http, base_url)
        if response.status_code != 200:
            break
        opened.append(response.headers["mcp-session-id"])
    return opened


def _refusal(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 429, response.text
    body = response.json()
    assert body["id"] is None
    return body["error"]


async def test_an_anonymous_client_gets_its_limit_of_sessions_then_a_429_naming_the_limit() -> None:
    async with http_server(max_sessions_per_client=LIMIT, reclaim_idle_after=3600) as base_url, _client() as http:
        opened = await _open_until_refused(http, base_url)
        assert len(opened) == LIMIT
        error = _refusal(await _open(http, base_url))
        assert f"({LIMIT}, the limit per client address)" in error["message"]
        assert "DELETE" in error["message"]
        assert error["data"] == {"maxSessionsPerClient": LIMIT}
        # Ending a session makes room for another.
        assert (await http.delete(f"{base_url}/mcp", headers={"mcp-session-id": opened[0]})).status_code == 200
        assert (await _open(http, base_url)).status_code == 200
        _refusal(await _open(http, base_url))


async def test_a_principal_at_its_limit_does_not_lock_out_another_principal() -> None:
    tokens = {ALICE: "alice", BOB: "bob"}
    async with (
        http_server(auth_tokens=tokens, max_sessions_per_client=LIMIT, reclaim_idle_after=3600) as base_url,
        _client(ALICE) as alice,
        _client(BOB) as bob,
    ):
        assert len(await _open_until_refused(alice, base_url)) == LIMIT
        error = _refusal(await _open(alice, base_url))
        assert "the limit per principal" in error["message"]
        assert (await _open(bob, base_url)).status_code == 200


async def test_a_client_at_its_limit_gets_room_from_its_idle_sessions_whose_state_goes_with_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    server = ToolServer(TOOLS, state_store=SqliteStateStore(path))
    async with http_server(server, max_sessions_per_client=LIMIT, reclaim_idle_after=0) as base_url, _client() as http:
        opened = [(await _open(http, base_url)).headers["mcp-session-id"] for _ in range(LIMIT)]
        oldest = opened[0]
        headers = {"mcp-session-id": oldest, "mcp-protocol-version": "2025-11-25"}
        await http.post(
            f"{base_url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
        )
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "bump", "arguments": {}}}
        assert (await http.post(f"{base_url}/mcp", json=call, headers=headers)).status_code == 200
        # Every session is idle now: opening one more ends the one idle longest instead of refusing.
        for _ in range(3 * LIMIT):
            assert (await _open(http, base_url)).status_code == 200
        assert (await http.post(f"{base_url}/mcp", json=call, headers=headers)).status_code == 404
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM state WHERE scope = 'session'").fetchone() == (0,)


async def test_sse_connections_count_against_the_limit() -> None:
    async with http_server(max_sessions_per_client=2, reclaim_idle_after=3600) as base_url, _client() as http:
        async with (
            http.stream("GET", f"{base_url}/sse") as first,
            http.stream("GET", f"{base_url}/sse") as second,
        ):
            assert (first.status_code, second.status_code) == (200, 200)
            _refusal(await _open(http, base_url))
        # Closed streams no longer count, once the server has seen them close (no event tells the client when).
        with anyio.fail_after(DEADLINE):
            while True:
                if (await _open(http, base_url)).status_code == 200:
                    break
                await anyio.sleep(0.02)


def test_a_limit_below_one_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="max_sessions_per_client"):
        create_app(ToolServer(TOOLS), max_sessions_per_client=0)


async def test_by_default_a_principal_that_opened_a_hundred_sessions_is_refused_and_others_are_not() -> None:
    tokens = {ALICE: "alice", BOB: "bob"}
    async with http_server(auth_tokens=tokens) as base_url, _client(ALICE) as alice, _client(BOB) as bob:
        for _ in range(100):
            assert (await _open(alice, base_url)).status_code == 200
        assert "(100, the limit per principal)" in _refusal(await _open(alice, base_url))["message"]
        assert (await _open(bob, base_url)).status_code == 200


def test_the_serve_command_takes_the_limit_and_refuses_one_below_one() -> None:
    done = run_serve("--tools", TOOLS_REF, "--transport", "http", "--port", "0", "--max-sessions-per-client", "0")
    assert done.returncode == 2, done.stderr
    assert "--max-sessions-per-client" in done.stderr
    assert "Traceback" not in done.stderr
