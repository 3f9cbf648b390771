"""Sessionless clients past the caps: HTTP 429, warm sessions per client address, floods, concurrent openings.

Clients on other loopback addresses (127.0.0.2, 127.0.0.3: Linux routes all of 127/8 to loopback) are other
clients to the gateway, which counts anonymous callers by address. The tests count outcomes and processes, never
time.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import httpx2
import pytest
from hub_harness import (
    DEADLINE,
    HERE,
    gateway_http,
    gateway_server,
    text_of,
    upstream_http,
    upstream_stdio,
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

MODERN = "2026-07-28"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
A_CLIENT = "127.0.0.2"
ANOTHER_CLIENT = "127.0.0.3"


@asynccontextmanager
async def connect_from(
    base_url: str, address: str, mode: Literal["auto", "legacy"] = "auto", **options: Any
) -> AsyncGenerator[Client]:
    """An `mcp.Client` for a gateway, its connections from `address`."""
    transport = httpx2.AsyncHTTPTransport(local_address=address)
    async with (
        httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(DEADLINE, read=300)) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode, **options) as client,
    ):
        yield client


async def modern_post(http: httpx2.AsyncClient, tool: str, arguments: dict[str, Any], key: str) -> httpx2.Response:
    """One 2026-07-28 `tools/call` POST with `_meta` session key `key`, as `mcp.Client` sends it."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": {**MODERN_META, SESSION_META_KEY: key}},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    return await http.post("/mcp", json=body, headers=headers)


@asynccontextmanager
async def busy_sessions(base_url: str, address: str, count: int, marker: Path) -> AsyncGenerator[None]:
    """`count` handshake-era sessions from `address`, each with a call running on its upstream session."""
    async with anyio.create_task_group() as tg:
        for index in range(count):
            callbacks = ClientCallbacks()

            async def hold(callbacks: ClientCallbacks, index: int) -> None:
                async with connect_from(base_url, address, "legacy") as client:
                    arguments = {"marker": f"{marker}-{index}"}
                    await client.call_tool("up_wait_forever", arguments, progress_callback=callbacks.on_progress)

            tg.start_soon(hold, callbacks, index)
            await callbacks.started.wait()
        yield
        tg.cancel_scope.cancel()


async def test_a_streamable_http_request_refused_by_a_cap_gets_429_with_the_json_rpc_error(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url, "maxSessions": 1}})
        with anyio.fail_after(DEADLINE):
            async with (
                gateway_http(config) as base_url,
                busy_sessions(base_url, A_CLIENT, 1, tmp_path / "cancelled"),
                httpx2.AsyncClient(base_url=base_url, timeout=DEADLINE) as http,
            ):
                refused = await modern_post(http, "up_echo", {"text": "refused"}, "a-key-of-its-own-0123456789")
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    error = refused.json()["error"]
    assert error["code"] == SESSION_LIMIT
    assert error["data"]["limit"] == "mcpServers.up.maxSessions"


async def test_an_answered_call_and_other_errors_keep_their_status(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        with anyio.fail_after(DEADLINE):
            async with (
                gateway_http(config) as base_url,
                httpx2.AsyncClient(base_url=base_url, timeout=DEADLINE) as http,
            ):
                served = await modern_post(http, "up_echo", {"text": "served"}, "a-key-of-its-own-0123456789")
                unknown = await modern_post(http, "no_such_tool", {}, "a-key-of-its-own-0123456789")
    assert served.status_code == 200
    assert served.json()["result"]["content"][0]["text"] == "served"
    assert unknown.status_code != 429
    assert "retry-after" not in unknown.headers


async def test_anonymous_callers_at_other_addresses_never_share_a_warm_upstream_session(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"up": upstream_stdio(tmp_path / "upstream-state")})

    async def pid(client: Client) -> int:
        return int(text_of(await client.call_tool("up_process_id", {})))

    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway_http(config) as base_url,
            connect_from(base_url, A_CLIENT) as first,
            connect_from(base_url, ANOTHER_CLIENT) as second,
        ):
            assert first.protocol_version == MODERN
            firsts = [await pid(first)]
            seconds = [await pid(second)]
            firsts.append(await pid(first))
            seconds.append(await pid(second))
    assert firsts[0] == firsts[1]  # each address's warm session is kept for its next call ...
    assert seconds[0] == seconds[1]
    assert firsts[0] != seconds[0]  # ... and never lent to another address


async def test_a_flood_from_one_client_address_never_refuses_another_clients_calls(tmp_path: Path) -> None:
    flood, served = 10, 6
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url, "maxSessionsPerClient": 2}})
        with anyio.fail_after(DEADLINE * 2):
            async with (
                gateway_http(config) as base_url,
                busy_sessions(base_url, A_CLIENT, 2, tmp_path / "cancelled"),
                httpx2.AsyncClient(
                    base_url=base_url, timeout=DEADLINE, transport=httpx2.AsyncHTTPTransport(local_address=A_CLIENT)
                ) as flooding,
                connect_from(base_url, ANOTHER_CLIENT) as other,
            ):
                codes: list[int] = []
                answers: list[str] = []

                async def flood_one(index: int) -> None:
                    response = await modern_post(
                        flooding, "up_echo", {"text": "x"}, f"flood-key-{index:04d}-0123456789"
                    )
                    codes.append(response.json()["error"]["code"] if "error" in response.json() else 0)

                async def serve_all() -> None:
                    # One call after another, anonymous and with a key: within the other client's own share.
                    for index in range(served):
                        meta = {SESSION_META_KEY: "the-other-clients-key-0123456789"} if index % 2 else None
                        result = await other.call_tool(
                            "up_echo", {"text": f"served {index}"}, meta=cast("types.RequestParamsMeta | None", meta)
                        )
                        answers.append(text_of(result))

                async with anyio.create_task_group() as tg:
                    for index in range(flood):
                        tg.start_soon(flood_one, index)
                    tg.start_soon(serve_all)
    assert codes == [SESSION_LIMIT] * flood  # every session of the flooding address is busy ...
    assert answers == [f"served {index}" for index in range(served)]  # ... and the other client is served


def tiny_upstream(started: Path, **options: object) -> dict[str, object]:
    """The tiny stdio server, writing each of its processes' ids to `started`."""
    return {"command": sys.executable, "args": ["-I", "-S", str(HERE / "hub_tiny_server.py"), str(started)], **options}


async def test_concurrent_openings_at_the_cap_end_no_session_twice_and_never_pass_it(tmp_path: Path) -> None:
    started = tmp_path / "started"
    cap, waves, wide = 2, 3, 12
    config = write_config(tmp_path, {"tiny": tiny_upstream(started, maxSessions=cap, maxSessionsPerClient=cap)})
    outcomes: list[str] = []

    async def open_one(client: Client, key: str) -> None:
        meta = cast("types.RequestParamsMeta", {SESSION_META_KEY: key})
        try:
            outcomes.append(text_of(await client.call_tool("tiny_pong", {}, meta=meta)))
        except MCPError as exc:
            outcomes.append("refused" if exc.error.code == SESSION_LIMIT else f"{exc.error.code}: {exc.error.message}")

    with anyio.fail_after(DEADLINE * 4):
        async with gateway_http(config) as base_url, connect_from(base_url, A_CLIENT) as client:
            for wave in range(waves):
                async with anyio.create_task_group() as tg:
                    for index in range(wide):
                        tg.start_soon(partial(open_one, client, f"wave-{wave}-key-{index:04d}-0123456789"))
            living = [int(pid) for pid in started.read_text().split() if alive(int(pid))]
    assert set(outcomes) <= {"pong", "refused"}, outcomes  # no other error: no session ended twice
    assert "pong" in outcomes
    assert len(living) <= cap


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_each_new_session_key_opens_one_upstream_session_not_two(
    tmp_path: Path, mode: Literal["auto", "legacy"]
) -> None:
    # A lookup ahead of the call (an app's call by its upstream's name) once opened a session of its own per key.
    config = write_config(tmp_path, {"up": {"command": sys.executable, "args": [str(HERE / "hub_tiny_server.py")]}})
    tool_server = gateway_server(config)
    with anyio.fail_after(DEADLINE * 2):
        async with serving_tools(tool_server) as base_url, connect_from(base_url, A_CLIENT, mode) as client:
            await client.call_tool("up_pong", {})
            before = tool_server.upstream_status()["up"]["opened"]
            for index in range(5):
                await client.call_tool("up_pong", {}, meta={SESSION_META_KEY: f"key-{index}"})
            opened = tool_server.upstream_status()["up"]["opened"] - before
    assert opened == 5
