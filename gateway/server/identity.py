"""Who is calling and in which session: the keys that scope a tool call's state.

Session key, in order of preference:

1. `_meta["adk-mcp-gateway/session"]` on the request: a client-chosen key. It works on every transport and in
   both protocol eras, and it is the only session key that survives a server restart.
2. The `mcp-session-id` header of handshake-era streamable HTTP.
3. The connection, for stdio and SSE (one session per connection).
4. Otherwise (modern 2026-07-28 requests, stateless HTTP) the principal: sessionless requests of one principal
   share one session.

Principal: the authenticated bearer token's client id, or `local` when the server runs without auth (stdio,
unauthenticated loopback HTTP). Session state is stored under principal *and* session key, so a session key
guessed or replayed by another principal never reaches someone else's state.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, Final, cast

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext

from adapters.meta_keys import SESSION_META_KEY

__all__ = ["DEFAULT_PRINCIPAL", "SESSION_META_KEY", "CallIdentity", "connection_id", "identify"]

DEFAULT_PRINCIPAL: Final = "local"

connection_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("adk_mcp_gateway_connection", default=None)
"""Set around each stdio or SSE connection's serving loop; handler tasks inherit it."""


@dataclass(frozen=True)
class CallIdentity:
    """The principal and session a request belongs to."""

    principal: str
    session_key: str

    @property
    def session_owner(self) -> str:
        """The owner of session-scoped state: principal and session together."""
        return f"{self.principal}/{self.session_key}"


def _principal() -> str:
    token = get_access_token()
    if token is None:
        return DEFAULT_PRINCIPAL
    return token.subject or token.client_id


def identify(ctx: ServerRequestContext[Any, Any]) -> CallIdentity:
    """Resolve the principal and session key of one request."""
    principal = _principal()
    meta = cast("dict[str, Any]", ctx.meta or {})
    chosen = meta.get(SESSION_META_KEY)
    if isinstance(chosen, str) and chosen:
        return CallIdentity(principal, f"meta:{chosen}")
    request: Any = ctx.request
    headers = getattr(request, "headers", None)
    if headers is not None:
        session_id = headers.get("mcp-session-id")
        if session_id:
            return CallIdentity(principal, f"http:{session_id}")
    connection = connection_id.get()
    if connection is not None:
        return CallIdentity(principal, f"connection:{connection}")
    return CallIdentity(principal, f"principal:{principal}")
