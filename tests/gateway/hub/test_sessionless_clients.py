"""Sessionless clients through the gateway's default config: no upstream process per call, and bounded sessions.

A default `mcp.Client` over streamable HTTP speaks 2026-07-28 without a session key: every call is an anonymous
session of its own. The tiny stdio upstream writes its process id to a file as it starts, so the tests count the
processes started (and, with `/proc`, those alive), never time.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest
from hub_harness import (
    DEADLINE,
    HERE,
    ROOT,
    connect,
    gateway_http,
    gateway_server,
    structured,
    text_of,
    upstream_http,
    write_config,
)
from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client

from gateway.client.sessions.limits import SESSION_LIMIT
from gateway.server.identity import SESSION_META_KEY
from tests.support.client_callbacks import ClientCallbacks
from tests.support.loopback import serving_tools
from tests.support.processes import alive

pytestmark = pytest.mark.anyio

ALICE = "tok-alice-0123456789abcdef"
BOB = "tok-bob-0123456789abcdef00"
WARM_UP = 2
CALLS = 20


def counted_upstream(started: Path, **options: object) -> dict[str, object]:
    """The tiny stdio server, default session policy, writing each of its processes' ids to `started`."""
    return {"command": sys.executable, "args": ["-I", "-S", str(HERE / "hub_tiny_server.py"), str(started)], **options}


def started_in(started: Path) -> list[int]:
    """The ids of the upstream processes started so far."""
    return [int(line) for line in started.read_text().split()] if started.exists() else []


async def pong(client: Client, meta: dict[str, Any] | None = None) -> None:
    result = await client.call_tool("tiny_pong", {}, meta=cast("types.RequestParamsMeta | None", meta))
    assert text_of(result) == "pong"


async def test_a_default_sessionless_client_starts_no_upstream_process_per_call(tmp_path: Path) -> None:
    started = tmp_path / "started"
    config = write_config(tmp_path, {"tiny": counted_upstream(started)})
    with anyio.fail_after(DEADLINE * 4):
        async with serving_tools(gateway_server(config)) as base_url, connect(base_url, "auto") as client:
            assert client.protocol_version == "2026-07-28"
            for _ in range(WARM_UP):
                await pong(client)
            after_warm_up = len(started_in(started))
            for _ in range(CALLS):
                await pong(client)
            after_calls = len(started_in(started))
    assert after_calls == after_warm_up


async def test_an_anonymous_call_borrows_a_warm_upstream_session_and_none_of_its_state(tmp_path: Path) -> None:
    async with upstream_http() as url:
        tool_server = gateway_server(write_config(tmp_path, {"up": {"url": url}}))
        with anyio.fail_after(DEADLINE):
            async with serving_tools(tool_server) as base_url, connect(base_url, "auto") as client:
                counts = [structured(await client.call_tool("up_tally", {}))["result"] for _ in range(3)]
                status = tool_server.upstream_status()["up"]
    assert counts == [1, 1, 1]  # a fresh upstream session each time (a new key in `_meta`) ...
    assert status["warm"] == {"lent": 0, "free": 1, "kept": 2}  # ... on one connection kept warm
    assert status["limits"] == {"maxSessions": 32, "maxSessionsPerClient": 8}


async def test_an_upstream_result_carries_no_issued_key_and_a_chosen_key_keeps_the_session_upstream(
    tmp_path: Path,
) -> None:
    # A forwarded result crosses as the upstream sent it: the gateway issues keys only for what it runs itself.
    async with upstream_http() as url:
        tool_server = gateway_server(write_config(tmp_path, {"up": {"url": url}}))
        with anyio.fail_after(DEADLINE):
            async with serving_tools(tool_server) as base_url, connect(base_url, "auto") as client:
                first = await client.call_tool("up_tally", {})
                meta = cast("types.RequestParamsMeta", {SESSION_META_KEY: secrets.token_urlsafe(32)})
                chosen = [await client.call_tool("up_tally", {}, meta=meta) for _ in range(2)]
    assert SESSION_META_KEY not in (first.meta or {})
    assert structured(first)["result"] == 1
    assert [structured(result)["result"] for result in chosen] == [1, 2]


async def test_a_flood_of_session_keys_keeps_upstream_processes_within_the_cap(tmp_path: Path) -> None:
    started = tmp_path / "started"
    config = write_config(tmp_path, {"tiny": counted_upstream(started, maxSessions=3)})
    with anyio.fail_after(DEADLINE * 4):
        async with serving_tools(gateway_server(config)) as base_url, connect(base_url, "auto") as client:
            for index in range(12):
                await pong(client, {SESSION_META_KEY: f"flood-key-{index:04d}-0123456789"})
            living = [pid for pid in started_in(started) if alive(pid)]
    assert len(started_in(started)) >= 12
    assert len(living) <= 3


async def test_past_the_cap_with_every_session_busy_the_newest_request_gets_an_error_naming_the_limit(
    tmp_path: Path,
) -> None:
    downstream = ClientCallbacks()
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url, "maxSessions": 1}})
        with anyio.fail_after(DEADLINE):
            async with (
                gateway_http(config) as base_url,
                connect(base_url, "legacy") as busy,
                connect(base_url, "legacy") as other,
            ):
                async with anyio.create_task_group() as tg:
                    arguments = {"marker": str(tmp_path / "cancelled")}
                    tg.start_soon(
                        partial(busy.call_tool, "up_wait_forever", arguments, progress_callback=downstream.on_progress)
                    )
                    await downstream.started.wait()
                    with pytest.raises(MCPError) as refused:
                        await other.call_tool("up_echo", {"text": "refused"})
                    tg.cancel_scope.cancel()
                after = await other.call_tool("up_echo", {"text": "served"})
    assert refused.value.error.code == SESSION_LIMIT
    assert "mcpServers.up.maxSessions (1)" in refused.value.error.message
    assert text_of(after) == "served"  # the busy session is idle again: it ends to make room


@asynccontextmanager
async def connect_as(base_url: str, token: str) -> AsyncGenerator[Client]:
    """A default (sessionless) `mcp.Client` for a gateway, sending a bearer token."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(DEADLINE, read=300)) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        yield client


async def test_one_principals_flood_of_session_keys_ends_its_own_sessions_never_anothers(tmp_path: Path) -> None:
    started = tmp_path / "started"
    config = write_config(tmp_path, {"tiny": counted_upstream(started, maxSessionsPerClient=2)})
    tokens = {ALICE: "alice", BOB: "bob"}
    with anyio.fail_after(DEADLINE * 4):
        async with (
            serving_tools(gateway_server(config), auth_tokens=tokens) as base_url,
            connect_as(base_url, ALICE) as alice,
            connect_as(base_url, BOB) as bob,
        ):
            await pong(bob)
            bobs = started_in(started)[-1]
            for index in range(10):
                await pong(alice, {SESSION_META_KEY: f"flood-key-{index:04d}-0123456789"})
            alices_alive = [pid for pid in started_in(started) if alive(pid) and pid != bobs]
            bob_kept = alive(bobs)
            before_bobs_next_call = len(started_in(started))
            await pong(bob)
            after_bobs_next_call = len(started_in(started))
    assert len(alices_alive) <= 2  # her flood ended her own least recently used sessions ...
    assert bob_kept  # ... never bob's,
    assert after_bobs_next_call == before_bobs_next_call  # whose next call needed no new process


def test_the_sessions_page_documents_the_sessionless_semantics_and_every_cap() -> None:
    page = (ROOT / "docs" / "gateway" / "sessions.md").read_text(encoding="utf-8")
    section = page[page.index("### Sessionless clients") :]
    for key in ("warmSessions", "maxSessions", "maxSessionsPerClient", "maxHeldCalls", "maxHeldCallsPerClient"):
        assert f"`{key}`" in section, key
    assert "mcp.Client()" in section
    assert "to_adk(McpToolset" in section
    assert "echoes the key issued" in section  # state without a session
    assert "429" in section


def test_a_cap_below_one_is_a_config_error(tmp_path: Path) -> None:
    from gateway.config import load_config
    from gateway.errors import ConfigError

    config = write_config(tmp_path, {"tiny": counted_upstream(tmp_path / "started", maxSessions=0)})
    with pytest.raises(ConfigError, match="maxSessions"):
        load_config(config)
