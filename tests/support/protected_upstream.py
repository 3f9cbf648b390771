"""An MCP server on loopback that only answers requests bearing a token of the loopback `OAuthProvider`.

    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        ...  # upstream.url is http://127.0.0.1:PORT/mcp; upstream.seen lists the tokens it was shown

It is the MCP SDK's `MCPServer` as an OAuth resource server: RFC 9728 metadata naming the provider, a 401 with
`WWW-Authenticate: Bearer resource_metadata=...` for a missing or bad token. A token is good when the provider
signed it with a published key, it has not expired, its `aud` names this server's URL, and the test has not
`reject()`ed it. Every request's headers and query are recorded (`requests`). The tool `whoami` answers with the
token's claims (`sub`, `aud`, `client_id`, `act`, `scope`); two resources (`readme`, markdown text, and `logo`, a PNG
blob) are there for resource readers.
"""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.types import Receive, Scope, Send

from tests.support.oauth_provider import OAuthProvider

__all__ = ["LOGO", "README", "ProtectedUpstream", "protected_upstream"]

README = "# Docs\n\nEverything about the docs server."
LOGO = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


@dataclass
class ProtectedUpstream:
    """The running server and what it saw."""

    url: str
    provider: OAuthProvider
    seen: list[str] = field(default_factory=list[str])
    """Every bearer token presented, in order (good or not)."""
    refused: list[str] = field(default_factory=list[str])
    """The tokens it answered with 401."""
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list[tuple[str, dict[str, str]]])
    """Every HTTP request's query string and headers (lower-case names), in order."""
    rejected: set[str] = field(default_factory=set[str])
    reject_all: bool = False

    def reject(self, token: str) -> None:
        """Refuse this token from now on, as if it had been revoked."""
        self.rejected.add(token)

    def claims(self, token: str) -> dict[str, Any] | None:
        claims = self.provider.decode(token)
        if claims is None or claims.get("exp", 0) < time.time() or self.reject_all or token in self.rejected:
            return None
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else list(audience or [])
        return claims if self.url in audiences else None

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's `TokenVerifier`."""
        self.seen.append(token)
        claims = self.claims(token)
        if claims is None:
            self.refused.append(token)
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=int(claims["exp"]),
            resource=self.url,
            subject=str(claims["sub"]),
            claims=claims,
        )


@asynccontextmanager
async def protected_upstream(provider: OAuthProvider) -> AsyncGenerator[ProtectedUpstream]:
    """Serve the protected upstream while the block runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        upstream = ProtectedUpstream(url=f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", provider=provider)
        server = MCPServer(
            "protected",
            token_verifier=upstream,
            auth=AuthSettings(
                issuer_url=provider.issuer,  # type: ignore[arg-type]
                resource_server_url=upstream.url,  # type: ignore[arg-type]
                validate_token_resource=True,
            ),
            log_level="WARNING",
        )

        @server.tool()
        def whoami() -> dict[str, Any]:
            """The claims of the token this call was authorized with."""
            token = get_access_token()
            assert token is not None
            claims = token.claims or {}
            return {key: claims.get(key) for key in ("sub", "aud", "client_id", "act", "scope")}

        @server.resource("docs://readme", name="readme", mime_type="text/markdown")
        def readme() -> str:
            return README

        @server.resource("docs://logo.png", name="logo", mime_type="image/png")
        def logo() -> bytes:
            return LOGO

        inner = server.streamable_http_app()

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
                upstream.requests.append((scope["query_string"].decode(), headers))
            await inner(scope, receive, send)

        uv = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1))
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: uv.serve(sockets=[sock]))
            try:
                yield upstream
            finally:
                uv.should_exit = True
