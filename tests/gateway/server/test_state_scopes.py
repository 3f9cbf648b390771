"""Session, `user:` and `app:` state over real transports: who shares what, what survives a restart."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import pytest
from fixture_tools import TOOLS
from mcp import Client
from server_harness import DEADLINE, ERAS, Era, connect, http_server, stdio_params

from gateway.server import SESSION_META_KEY, ToolServer
from gateway.state import SqliteStateStore

pytestmark = pytest.mark.anyio

ALICE = "tok-alice-0123456789abcdef"
BOB = "tok-bob-0123456789abcdef00"
TOKENS = {ALICE: "alice", BOB: "bob"}
ONE_SESSION: Any = {SESSION_META_KEY: "one-session-0123456789"}
"""A session key, so that a modern client's calls share one session (without one, each call has its own)."""


async def _bump(client: Client, session: str | None = None) -> dict[str, Any]:
    meta: Any = {SESSION_META_KEY: session} if session is not None else None
    with anyio.fail_after(DEADLINE):
        result = await client.call_tool("bump", {}, meta=meta)
    assert not result.is_error, result.content
    return result.structured_content or {}


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_two_handshake_connections_have_their_own_session_but_share_user_and_app_keys(transport: Any) -> None:
    async with (
        http_server() as base_url,
        connect(transport, "legacy", base_url) as first,
        connect(transport, "legacy", base_url) as second,
    ):
        assert await _bump(first) == {"session": 1, "user": 1, "app": 1}
        assert await _bump(first) == {"session": 2, "user": 2, "app": 2}
        assert await _bump(second) == {"session": 1, "user": 3, "app": 3}


async def test_modern_requests_choose_their_session_with_the_documented_meta_key() -> None:
    async with http_server() as base_url, connect("http", "modern", base_url) as client:
        assert await _bump(client, "s1") == {"session": 1, "user": 1, "app": 1}
        assert await _bump(client, "s2") == {"session": 1, "user": 2, "app": 2}
        assert await _bump(client, "s1") == {"session": 2, "user": 3, "app": 3}
        # Without a session key (and without a principal), each call has a session of its own.
        assert await _bump(client) == {"session": 1, "user": 4, "app": 4}
        assert await _bump(client) == {"session": 1, "user": 5, "app": 5}


@pytest.mark.parametrize("era", ERAS)
async def test_user_keys_follow_the_bearer_token_and_app_keys_are_shared_by_everyone(era: Era) -> None:
    async with (
        http_server(auth_tokens=TOKENS) as base_url,
        connect("http", era, base_url, token=ALICE) as alice_1,
        connect("http", era, base_url, token=ALICE) as alice_2,
        connect("http", era, base_url, token=BOB) as bob,
    ):
        assert (await _bump(alice_1, "a1"))["user"] == 1
        assert (await _bump(alice_2, "a2"))["user"] == 2
        assert await _bump(bob, "a1") == {"session": 1, "user": 1, "app": 3}
        assert await _bump(alice_1, "a1") == {"session": 2, "user": 3, "app": 4}


async def test_stdio_children_on_one_state_file_keep_user_app_and_chosen_sessions_across_a_restart(
    state_file: Path,
) -> None:
    async with connect("stdio", "legacy", stdio_params(state_file)) as first:
        assert await _bump(first) == {"session": 1, "user": 1, "app": 1}
        assert await _bump(first, "s1") == {"session": 1, "user": 2, "app": 2}
        assert await _bump(first, "s1") == {"session": 2, "user": 3, "app": 3}

    async with connect("stdio", "modern", stdio_params(state_file)) as restarted:
        # A new connection is a new session; the chosen session key, `user:` and `app:` keys persisted.
        assert await _bump(restarted, "s1") == {"session": 3, "user": 4, "app": 4}
        assert await _bump(restarted) == {"session": 1, "user": 5, "app": 5}


@pytest.mark.parametrize("era", ERAS)
async def test_twenty_concurrent_calls_on_one_session_lose_no_update(era: Era, tmp_path: Path) -> None:
    server = ToolServer(TOOLS, state_store=SqliteStateStore(tmp_path / "state.db"))
    async with http_server(server) as base_url, connect("http", era, base_url) as client:
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                for index in range(20):
                    arguments = {"key": f"k{index:02d}", "value": str(index)}
                    tg.start_soon(functools.partial(client.call_tool, "set_key", arguments, meta=ONE_SESSION))
            result = await client.call_tool("read_state", {}, meta=ONE_SESSION)
    assert result.structured_content == {"state": {f"k{index:02d}": str(index) for index in range(20)}}
