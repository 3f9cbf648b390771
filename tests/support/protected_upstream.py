"""Our own server mode on loopback as an OAuth-protected upstream: it only answers tokens of the loopback
`OAuthProvider`.

    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        ...  # upstream.url is http://127.0.0.1:PORT/mcp; upstream.seen lists the tokens it was shown

It is `create_app(..., oauth=OAuthSettings(issuer=provider.issuer, resource=url))`: RFC 9728 metadata naming the
provider, 401 with `WWW-Authenticate: Bearer resource_metadata=...` for a missing or bad token; a token is good when
the provider signed it with a published key, it has not expired, and its `aud` names this server's URL. In front of
it, a thin layer records every request (`requests`, `seen`, `refused`) and answers 401 for tokens the test
`reject()`ed (as if they had been revoked). The tool `whoami` answers with the token's claims (`sub`, `aud`,
`client_id`, `act`, `scope`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.server import ToolServer
from gateway.server.auth.oauth_settings import OAuthSettings
from gateway.server.http.app import create_app
from gateway.state import InMemoryStateStore
from gateway.tools import FunctionTool
from tests.support.loopback import bound_socket, serving_asgi
from tests.support.oauth_provider import OAuthProvider

__all__ = ["ProtectedUpstream", "protected_upstream"]

_UNAUTHORIZED = 401


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

    def guard(self, inner: ASGIApp) -> ASGIApp:
        """The recording, rejecting layer in front of the server."""

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await inner(scope, receive, send)
                return
            headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
            self.requests.append((scope["query_string"].decode(), headers))
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not token:
                await inner(scope, receive, send)
                return
            self.seen.append(token)
            if self.reject_all or token in self.rejected:
                self.refused.append(token)
                challenge = f'Bearer error="invalid_token", resource_metadata="{_metadata_url(self.url)}"'
                refusal = JSONResponse({"error": "invalid_token"}, _UNAUTHORIZED, {"WWW-Authenticate": challenge})
                await refusal(scope, receive, send)
                return

            async def watch(message: Message) -> None:
                if message["type"] == "http.response.start" and message["status"] == _UNAUTHORIZED:
                    self.refused.append(token)
                await send(message)

            await inner(scope, receive, watch)

        return app


def _metadata_url(url: str) -> str:
    origin, _, path = url.partition("://")[2].partition("/")
    return f"http://{origin}/.well-known/oauth-protected-resource/{path}"


async def whoami() -> dict[str, Any]:
    """The claims of the token this call was authorized with."""
    token = get_access_token()
    assert token is not None
    claims = token.claims or {}
    return {
        "sub": token.subject,
        "client_id": token.client_id,
        "scope": " ".join(token.scopes) or None,
        "aud": claims.get("aud"),
        "act": claims.get("act"),
    }


@asynccontextmanager
async def protected_upstream(provider: OAuthProvider) -> AsyncGenerator[ProtectedUpstream]:
    """Serve the protected upstream while the block runs."""
    sock = bound_socket()
    upstream = ProtectedUpstream(url=f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", provider=provider)
    settings = OAuthSettings(issuer=provider.issuer, resource=upstream.url, principal_claims=("aud", "act"))
    app = upstream.guard(
        create_app(
            ToolServer([FunctionTool(whoami)], name="protected", state_store=InMemoryStateStore()), oauth=settings
        )
    )
    async with serving_asgi(app, sock):
        yield upstream
