"""The downstream client's bearer token stays at the gateway: upstreams see only the headers their config gives."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hub_harness import DEADLINE, gateway_server, text_of, write_config
from hub_upstream_tools import TOOLS
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.server import ToolServer, create_app
from gateway.state import InMemoryStateStore
from tests.support.loopback import serving_asgi, serving_tools

pytestmark = pytest.mark.anyio

CLIENT_TOKEN = "client-secret-token"


class HeaderLog:
    """ASGI middleware remembering the `authorization` header of every HTTP request (None when absent)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[str | None] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            value = headers.get(b"authorization")
            self.seen.append(value.decode() if value is not None else None)
        await self.app(scope, receive, send)


@asynccontextmanager
async def logged_upstream() -> AsyncGenerator[tuple[str, HeaderLog]]:
    """Our server mode over HTTP behind a `HeaderLog`; yields its `/mcp` URL and the log."""
    log = HeaderLog(create_app(ToolServer(TOOLS, name="upstream", state_store=InMemoryStateStore()), auth_tokens={}))
    async with serving_asgi(log) as base_url:
        yield f"{base_url}/mcp", log


async def echo_through(base_url: str) -> str:
    """Call the upstream's `echo` through the gateway as the client holding `CLIENT_TOKEN`."""
    headers = {"Authorization": f"Bearer {CLIENT_TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=DEADLINE) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode="legacy") as client,
    ):
        return text_of(await client.call_tool("up_echo", {"text": "hi"}))


@pytest.mark.parametrize(
    ("configured", "expected"),
    [({}, None), ({"headers": {"Authorization": "Bearer upstream-token"}}, "Bearer upstream-token")],
    ids=["no-headers", "own-header"],
)
async def test_the_clients_token_is_never_forwarded_upstream(
    configured: dict[str, Any], expected: str | None, tmp_path: Path
) -> None:
    with anyio.fail_after(DEADLINE):
        async with logged_upstream() as (url, log):
            config = write_config(tmp_path, {"up": {"url": url, **configured}})
            async with serving_tools(gateway_server(config), auth_tokens={CLIENT_TOKEN: "alice"}) as base_url:
                assert await echo_through(base_url) == "hi"
    assert log.seen, "the upstream saw no request"
    assert set(log.seen) == {expected}
