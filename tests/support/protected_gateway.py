"""Our server mode (or a whole gateway) over HTTP as an OAuth resource server of the loopback `OAuthProvider`.

    async with OAuthProvider() as provider, protected_gateway(provider, ToolServer(TOOLS)) as gateway:
        token = provider.mint("alice", audience=gateway.resource)
        async with token_client(gateway.base_url, token) as client:
            ...

The gateway's resource is its own `/mcp` URL; keyword arguments override any `OAuthSettings` field.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.server import ToolServer, serve_async
from gateway.server.auth.oauth_settings import OAuthSettings
from tests.support.deadlines import DEADLINE
from tests.support.oauth_provider import OAuthProvider

__all__ = ["DEADLINE", "ProtectedGateway", "protected_gateway", "token_client"]


@dataclass(frozen=True)
class ProtectedGateway:
    """A running protected gateway."""

    base_url: str
    settings: OAuthSettings

    @property
    def resource(self) -> str:
        """Its resource URL (what tokens must name as `aud`)."""
        return self.settings.resource


async def _until_healthy(base_url: str) -> None:
    async with httpx2.AsyncClient(timeout=2.0) as http:
        with anyio.fail_after(DEADLINE):
            while True:
                try:
                    if (await http.get(f"{base_url}/healthz")).status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                await anyio.sleep(0.02)


@asynccontextmanager
async def protected_gateway(
    provider: OAuthProvider,
    tool_server: ToolServer,
    *,
    serve_options: dict[str, Any] | None = None,
    **settings: Any,
) -> AsyncGenerator[ProtectedGateway]:
    """Serve `tool_server` over HTTP accepting `provider`'s tokens for its own `/mcp` URL."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        oauth = OAuthSettings(**{"issuer": provider.issuer, "resource": f"{base_url}/mcp", **settings})
        options: dict[str, Any] = {"auth_tokens": {}, **(serve_options or {})}
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_async(tool_server, transport="http", sock=sock, oauth=oauth, **options))
            await _until_healthy(base_url)
            try:
                yield ProtectedGateway(base_url, oauth)
            finally:
                tg.cancel_scope.cancel()


@asynccontextmanager
async def token_client(
    base_url: str, token: str, *, mode: str = "legacy", **client_options: Any
) -> AsyncGenerator[Client]:
    """An `mcp.Client` over streamable HTTP presenting `token` (`mode`: `legacy` or `auto`; options: callbacks)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=DEADLINE) as http,
        Client(
            streamable_http_client(f"{base_url}/mcp", http_client=http),
            mode=mode,  # type: ignore[arg-type]
            **client_options,
        ) as client,
    ):
        yield client
