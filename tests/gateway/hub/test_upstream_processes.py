"""Upstream processes end with the sessions that own them: no strays after 200 clients came and went.

The gateway runs in this process (`serve_async(..., sock=)`), so its stdio upstreams are children of the test
process and `/proc` shows them. The upstream is `hub_tiny_server.py`, which starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import anyio
import pytest
from hub_harness import DEADLINE, HERE, connect, descendants, gateway_http, text_of, write_config

pytestmark = pytest.mark.anyio

CYCLES = 200
REAP_DEADLINE = 3.0
"""Seconds allowed for ended sessions' processes to be gone."""


def tiny_upstream(policy: str) -> dict[str, object]:
    """A config entry for the tiny stdio server."""
    return {"command": sys.executable, "args": ["-I", "-S", str(HERE / "hub_tiny_server.py")], "sessionPolicy": policy}


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
