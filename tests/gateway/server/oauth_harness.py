"""A server-mode gateway protected by the loopback authorization server (`tests.support.oauth_provider`).

`protected_server(provider)` serves the fixture tools over HTTP as an OAuth resource server whose resource is its
own `/mcp` URL and yields a `Protected` (base URL, settings); `token_client(token)` connects with a bearer token.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from fixture_tools import TOOLS
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from server_harness import DEADLINE, bound_socket, wait_until_healthy

from gateway.server import ToolServer, serve_async
from gateway.server.oauth_settings import OAuthSettings
from gateway.state import InMemoryStateStore
from tests.support.oauth_provider import OAuthProvider

__all__ = ["Protected", "protected_server", "token_client"]


@dataclass(frozen=True)
class Protected:
    """A running protected gateway."""

    base_url: str
    settings: OAuthSettings

    @property
    def resource(self) -> str:
        return self.settings.resource


@asynccontextmanager
async def protected_server(
    provider: OAuthProvider,
    *,
    tool_server: ToolServer | None = None,
    serve_options: dict[str, Any] | None = None,
    **settings: Any,
) -> AsyncGenerator[Protected]:
    """Serve `tool_server` (default: the fixture tools) with OAuth settings for `provider` (overridable)."""
    server = tool_server or ToolServer(TOOLS, state_store=InMemoryStateStore())
    with bound_socket() as sock:
        base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        oauth = OAuthSettings(**{"issuer": provider.issuer, "resource": f"{base_url}/mcp", **settings})
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: serve_async(
                    server, transport="http", sock=sock, auth_tokens={}, oauth=oauth, **(serve_options or {})
                )
            )
            await wait_until_healthy(base_url)
            try:
                yield Protected(base_url, oauth)
            finally:
                tg.cancel_scope.cancel()


@asynccontextmanager
async def token_client(base_url: str, token: str, *, mode: str = "legacy") -> AsyncGenerator[Client]:
    """An `mcp.Client` over streamable HTTP presenting `token`."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=DEADLINE) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client
