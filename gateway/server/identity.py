"""Who is calling and in which session: the keys that scope a tool call's state.

Session key, in order of preference:

1. `_meta["adk-mcp-gateway/session"]` on the request: a client-chosen key. It works on every transport and in
   both protocol eras, and it is the only session key that survives a server restart. It is a **bearer secret**:
   whoever sends the key (as the same principal) reaches the session, so it must be unguessable (e.g.
   `secrets.token_urlsafe(32)`, as this project's own client makes them). At most 256 characters; anything else
   under that name (too long, empty, not a string) is refused with -32602.
2. The `mcp-session-id` header of handshake-era streamable HTTP.
3. The connection, for stdio and SSE (one session per connection).
4. Otherwise (modern 2026-07-28 requests, stateless HTTP): the authenticated principal, whose sessionless
   requests share one session; an anonymous `tools/call` gets a session of its own, named by a key the server
   issues (`issued-` plus a random secret) and returns in the result's `_meta["adk-mcp-gateway/session"]`. An
   anonymous request that echoes an issued key in `_meta` continues that session (its state; on a gateway the
   upstream session is still a warm one lent per call). Its rounds carry it in the sealed `requestState`.
   Anonymous listings and reads (`tools/list`, resources, prompts) without a key share one session that no call
   ever runs in (`anonymous`), so its state is always empty and nothing one client did shows through it.

Principal: the authenticated bearer token's subject (an OAuth token's `sub`, a static token's user; a token
without a subject: its client id), or `local` when the server runs without auth (stdio, unauthenticated loopback
HTTP). An OAuth token's configured claims (`principal_claims`, e.g. `groups`) travel with it (`current_principal`).
Session state is stored under principal *and* session key, so a session key guessed or replayed by another
principal never reaches someone else's state.
"""

from __future__ import annotations

import contextvars
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

from mcp import MCPError, types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext

from adapters.meta_keys import SESSION_META_KEY

__all__ = [
    "ANONYMOUS_SESSION",
    "CALL_SESSION_PREFIX",
    "DEFAULT_PRINCIPAL",
    "ISSUED_KEY_PREFIX",
    "MAX_SESSION_KEY_LENGTH",
    "SESSION_META_KEY",
    "CallIdentity",
    "Principal",
    "client_address",
    "client_share_key",
    "connection_id",
    "connection_session_key",
    "current_client",
    "current_principal",
    "identify",
    "sessionless_call_identity",
]

MAX_SESSION_KEY_LENGTH: Final = 256
DEFAULT_PRINCIPAL: Final = "local"
CALL_SESSION_PREFIX: Final = "call:"
"""The session key prefix of an anonymous sessionless call's own session (then the key issued for it)."""
ISSUED_KEY_PREFIX: Final = "issued-"
"""How a session key the server issued starts (`issued_key`); an anonymous client echoes it to keep its session."""
ANONYMOUS_SESSION: Final = "anonymous"
"""The session key of anonymous sessionless requests other than `tools/call` (no call ever runs in it)."""

connection_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("adk_mcp_gateway_connection", default=None)
"""Set around each stdio or SSE connection's serving loop; handler tasks inherit it."""


def connection_session_key(connection: str) -> str:
    """The session key of every request on one stdio or SSE connection (the `connection_id` it runs under)."""
    return f"connection:{connection}"


@dataclass(frozen=True)
class Principal:
    """Who is calling: a name, and the token claims kept with it (`{}` for static tokens and no auth)."""

    name: str
    claims: Mapping[str, Any] = field(default_factory=dict[str, Any])


def current_principal() -> Principal:
    """The principal of the request being served (`local` without auth)."""
    token = get_access_token()
    if token is None:
        return Principal(DEFAULT_PRINCIPAL)
    return Principal(token.subject or token.client_id, dict(token.claims or {}))


client_address: contextvars.ContextVar[str | None] = contextvars.ContextVar("adk_mcp_gateway_client", default=None)
"""The peer's host of the HTTP request being served (set by `HttpSessions`; None off HTTP)."""


def current_client() -> str:
    """`client_share_key` of the request being served: whose share its upstream sessions count against."""
    return client_share_key(client_address.get())


def client_share_key(address: str | None) -> str:
    """Whose share a request counts against in per-client limits: `principal:NAME` when it carries a bearer
    token, else `address:HOST` (`address`: the peer's host; None off HTTP)."""
    token = get_access_token()
    if token is not None:
        return f"principal:{token.subject or token.client_id}"
    return f"address:{address or 'unknown'}"


@dataclass(frozen=True)
class CallIdentity:
    """The principal and session a request belongs to."""

    principal: str
    session_key: str

    @property
    def session_owner(self) -> str:
        """The owner of session-scoped state: principal and session together."""
        return f"{self.principal}/{self.session_key}"

    @property
    def call_scoped(self) -> bool:
        """Whether the session is an anonymous sessionless one (its own or an echoed issued key): what it holds
        upstream is released when its call (and its input rounds) ends; its state is kept for the next echo."""
        return self.session_key.startswith(CALL_SESSION_PREFIX)

    @property
    def issued_key(self) -> str | None:
        """The session key issued to an anonymous sessionless caller, to echo in `_meta` (None: not such a one)."""
        return self.session_key.removeprefix(CALL_SESSION_PREFIX) if self.call_scoped else None


def _chosen_key(meta: dict[str, Any]) -> str | None:
    if SESSION_META_KEY not in meta:
        return None
    chosen = meta[SESSION_META_KEY]
    if not isinstance(chosen, str) or not chosen or len(chosen) > MAX_SESSION_KEY_LENGTH:
        shown = f"{len(chosen)} characters long" if isinstance(chosen, str) else f"a {type(chosen).__name__}"
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=(
                f"The session key in _meta[{SESSION_META_KEY!r}] is {shown}: it must be a string of 1 to "
                f"{MAX_SESSION_KEY_LENGTH} characters (an unguessable one, e.g. secrets.token_urlsafe(32))."
            ),
        )
    return chosen


def identify(ctx: ServerRequestContext[Any, Any], *, call: bool = False, carried: str | None = None) -> CallIdentity:
    """Resolve the principal and session key of one request.

    Args:
        ctx: the request.
        call: the request is a `tools/call` (an anonymous one gets a session of its own).
        carried: the session key an earlier round of the same call used (from its sealed `requestState`); an
            anonymous call's own session continues under it.

    Raises:
        MCPError: -32602, the session key in `_meta` is not a string of 1 to 256 characters.
    """
    token = get_access_token()
    principal = current_principal().name
    chosen = _chosen_key(cast("dict[str, Any]", ctx.meta or {}))
    if chosen is not None:
        if token is None and chosen.startswith(ISSUED_KEY_PREFIX):
            return CallIdentity(principal, f"{CALL_SESSION_PREFIX}{chosen}")
        return CallIdentity(principal, f"meta:{chosen}")
    request: Any = ctx.request
    headers = getattr(request, "headers", None)
    if headers is not None:
        session_id = headers.get("mcp-session-id")
        if session_id:
            return CallIdentity(principal, f"http:{session_id}")
    connection = connection_id.get()
    if connection is not None:
        return CallIdentity(principal, connection_session_key(connection))
    if token is not None:
        return CallIdentity(principal, f"principal:{principal}")
    if not call:
        return CallIdentity(principal, ANONYMOUS_SESSION)
    if carried is not None and carried.startswith(CALL_SESSION_PREFIX):
        return CallIdentity(principal, carried)
    return _own_session(principal)


def sessionless_call_identity() -> CallIdentity:
    """What `identify` resolves for a `tools/call` that names no session (no `_meta` key, no `mcp-session-id`, no
    connection) and continues no earlier round: the principal's session when authenticated, else its own."""
    principal = current_principal().name
    if get_access_token() is not None:
        return CallIdentity(principal, f"principal:{principal}")
    return _own_session(principal)


def _own_session(principal: str) -> CallIdentity:
    """A session of an anonymous call's own, named by a key the server issues."""
    return CallIdentity(principal, f"{CALL_SESSION_PREFIX}{ISSUED_KEY_PREFIX}{secrets.token_urlsafe(32)}")
