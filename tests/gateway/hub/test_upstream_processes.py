"""Upstream processes end with the sessions that own them: no strays after hundreds of clients came and went.

Streamable HTTP sessions end with a DELETE, SSE sessions when their connection closes, and sessions that only a
`_meta` session key names (no connection to end them) after the upstream's `sessionIdleTimeout`.

The gateway runs in this process (`serve_async(..., sock=)`), so its stdio upstreams are children of the test
process and `/proc` shows them. The upstream is `hub_tiny_server.py`, which starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import cast

import anyio
import pytest
from hub_harness import DEADLINE, HERE, connect, connect_sse, gateway_http, text_of, write_config
from mcp import types

from gateway.server.identity import SESSION_META_KEY
from tests.support.processes import descendants

pytestmark = pytest.mark.anyio

CYCLES = 200
SSE_CYCLES = 100
SESSION_KEYS = 100
SHORT_IDLE = 0.5
"""Seconds of idleness after which the idle-timeout test's upstream sessions end."""
REAP_DEADLINE = 3.0
"""Seconds allowed for ended sessions' processes to be gone."""


def tiny_upstream(policy: str, **options: object) -> dict[str, object]:
    """A config entry for the tiny stdio server."""
    args = ["-I", "-S", str(HERE / "hub_tiny_server.py")]
    return {"command": sys.executable, "args": args, "sessionPolicy": policy, **options}


async def strays_after_reaping(before: set[int]) -> set[int]:
    """The processes started since `before` that are still alive once they had `REAP_DEADLINE` to go."""
    with anyio.move_on_after(REAP_DEADLINE):
        # Polled: a process ending elsewhere in the tree sends this process no event.
        while strays := descendants() - before:  # noqa: ASYNC110
            await anyio.sleep(0.05)
        return strays
    return descendants() - before


async def connect_and_call(base_url: str) -> None:
    """One downstream session: connect, call the upstream's tool, disconnect."""
    async with connect(base_url, "legacy") as client:
        result = await client.call_tool("tiny_pong", {})
        assert text_of(result) == "pong"


async def test_isolated_upstream_processes_end_with_their_downstream_sessions(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": tiny_upstream("isolated")})
    before = descendants()
    async with gateway_http(config) as base_url:
        with anyio.fail_after(DEADLINE * 8):
            for _ in range(CYCLES):
                await connect_and_call(base_url)
        strays = await strays_after_reaping(before)
    assert strays == set()


async def test_a_shared_upstream_serves_every_session_from_one_process(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": tiny_upstream("shared")})
    before = descendants()
    async with gateway_http(config) as base_url:
        with anyio.fail_after(DEADLINE * 8):
            for _ in range(CYCLES):
                await connect_and_call(base_url)
        assert len(descendants() - before) == 1
    assert await strays_after_reaping(before) == set()


async def test_stopping_the_gateway_ends_every_upstream_process(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": tiny_upstream("isolated")})
    before = descendants()
    async with gateway_http(config) as base_url, contextlib.AsyncExitStack() as open_clients:
        for _ in range(3):
            # Three downstream sessions stay open until the gateway stops: their upstreams must end too.
            client = await open_clients.enter_async_context(connect(base_url, "legacy"))
            with anyio.fail_after(DEADLINE):
                assert text_of(await client.call_tool("tiny_pong", {})) == "pong"
        started = descendants() - before
        assert len(started) == 3
    assert await strays_after_reaping(before) == set()


async def test_closing_sse_connections_ends_their_isolated_upstream_processes(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": tiny_upstream("isolated")})
    before = descendants()
    async with gateway_http(config) as base_url:
        with anyio.fail_after(DEADLINE * 8):
            for _ in range(SSE_CYCLES):
                async with connect_sse(base_url) as client:
                    assert text_of(await client.call_tool("tiny_pong", {})) == "pong"
        strays = await strays_after_reaping(before)
    assert strays == set()


async def test_upstream_sessions_of_distinct_session_keys_end_after_the_idle_timeout(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tiny": tiny_upstream("isolated", sessionIdleTimeout=SHORT_IDLE)})
    before = descendants()
    async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
        with anyio.fail_after(DEADLINE * 8):
            for index in range(SESSION_KEYS):
                meta = cast("types.RequestParamsMeta", {SESSION_META_KEY: f"key-{index}"})
                assert text_of(await client.call_tool("tiny_pong", {}, meta=meta)) == "pong"
        # The downstream connection stays open: only the idle timeout can end these sessions.
        strays = await strays_after_reaping(before)
    assert strays == set()
