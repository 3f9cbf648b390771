"""Each client's share of the gateway's `subscriptions/listen` streams (`maxListenStreamsPerClient`).

The gateway is `adk-mcp-gateway serve CONFIG`'s server (`reloading_gateway_server`) over HTTP in this process; the
clients speak the modern era. A client is its principal (static bearer tokens here), or its address when anonymous:
the second anonymous client connects from `127.0.0.2`, which is loopback too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hub_harness import DEADLINE, write_config
from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client

from gateway.config import load_config
from gateway.hub.reloader import reloading_gateway_server
from gateway.state import InMemoryStateStore
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

LIMIT = 2
ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"


@asynccontextmanager
async def gateway(tmp_path: Path, **options: Any) -> AsyncGenerator[str]:
    """A gateway without upstreams allowing `LIMIT` listen streams per client; yields its base URL."""
    path = write_config(tmp_path, {})
    document = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**document, "maxListenStreamsPerClient": LIMIT}), encoding="utf-8")
    server = reloading_gateway_server(load_config(path), sighup=False, state_store=InMemoryStateStore())
    async with serving_tools(server, **options) as base_url:
        yield base_url


@asynccontextmanager
async def modern_client(
    base_url: str, *, token: str | None = None, address: str = "127.0.0.1"
) -> AsyncGenerator[Client]:
    """A modern-era client connecting from `address`, presenting `token` if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(
            transport=httpx2.AsyncHTTPTransport(local_address=address),
            headers=headers,
            timeout=httpx2.Timeout(DEADLINE, read=300),
        ) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode="auto") as client,
    ):
        assert client.protocol_version == "2026-07-28"
        yield client


async def listen_once_freed(client: Client) -> bool | None:
    """Open a stream as soon as the gateway has seen closed ones go (it learns of a close a moment after the client)."""
    while True:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                return subscription.honored.tools_list_changed
        except MCPError as exc:
            if exc.error.data != {"maxListenStreamsPerClient": LIMIT}:
                raise
        await anyio.sleep(0.02)


async def refusal(client: Client) -> MCPError:
    with pytest.raises(MCPError) as refused:
        async with client.listen(tools_list_changed=True):
            pass
    return refused.value


async def test_a_principal_flooding_listen_streams_is_refused_past_its_share_and_another_still_gets_one(
    tmp_path: Path,
) -> None:
    tokens = {ALICE: "alice", BOB: "bob"}
    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway(tmp_path, auth_tokens=tokens) as base_url,
            modern_client(base_url, token=ALICE) as alice,
            modern_client(base_url, token=ALICE) as alice_again,
            modern_client(base_url, token=BOB) as bob,
            AsyncExitStack() as held,
        ):
            for _ in range(LIMIT):
                await held.enter_async_context(alice.listen(tools_list_changed=True))
            refused = [await refusal(client) for client in (alice, alice_again, alice_again)]
            async with bob.listen(tools_list_changed=True) as bobs:
                bob_heard = bobs.honored.tools_list_changed
            await held.aclose()
            alice_heard_again = await listen_once_freed(alice_again)
    assert [error.error.code for error in refused] == [types.INVALID_REQUEST] * 3
    message = refused[0].error.message
    assert f"{LIMIT} listen streams open" in message
    assert "per principal" in message
    assert "maxListenStreamsPerClient" in message
    assert refused[0].error.data == {"maxListenStreamsPerClient": LIMIT}
    assert bob_heard is True
    assert alice_heard_again is True  # closing a stream gives its place back


async def test_anonymous_clients_share_listen_streams_by_address(tmp_path: Path) -> None:
    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway(tmp_path) as base_url,
            modern_client(base_url) as first,
            modern_client(base_url) as same_address,
            modern_client(base_url, address="127.0.0.2") as other_address,
            AsyncExitStack() as held,
        ):
            for _ in range(LIMIT):
                await held.enter_async_context(first.listen(tools_list_changed=True))
            refused = await refusal(same_address)
            async with other_address.listen(tools_list_changed=True) as others:
                other_heard = others.honored.tools_list_changed
    assert "per client address" in refused.error.message
    assert other_heard is True
