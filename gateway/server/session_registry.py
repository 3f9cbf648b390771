"""`SessionRegistry`: which sessions the server served, so each is ended when what carried it ends.

A stdio or SSE connection's sessions end with the connection; an anonymous sessionless call's own session ends
with its request, or, when the call is held across rounds, with the call. `meta:` and `principal:` session keys
outlive any one connection (the retention sweep ends them).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import defaultdict
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from gateway.server.identity import CallIdentity

__all__ = ["SessionRegistry"]

_CONNECTION_BOUND: Final = ("http:", "connection:")
"""Session keys that end with their connection; `meta:` and `principal:` keys outlive any one connection."""
_connection_sessions: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "adk_mcp_gateway_connection_sessions", default=None
)
_request_sessions: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "adk_mcp_gateway_request_sessions", default=None
)


class SessionRegistry:
    """The principals seen in each connection- or call-bound session, and the calls running in anonymous ones.

    Args:
        end: ends one session by key (releases what the toolsets hold for it and its own state).
    """

    def __init__(self, end: Callable[[str], Awaitable[None]]) -> None:
        self._end = end
        self._principals_of: defaultdict[str, set[str]] = defaultdict(set)
        # Anonymous calls' own sessions while a call runs in them (they end with it, not with the request).
        self._running: set[str] = set()

    def note(self, identity: CallIdentity) -> None:
        """A request used this session: remember its principal, and tie the session to its connection or request."""
        if identity.session_key.startswith(_CONNECTION_BOUND) or identity.call_scoped:
            self._principals_of[identity.session_key].add(identity.principal)
            seen = (_request_sessions if identity.call_scoped else _connection_sessions).get()
            if seen is not None:
                seen.add(identity.session_key)

    def forget(self, session_key: str) -> set[str]:
        """The principals seen in an ended session, forgotten."""
        return self._principals_of.pop(session_key, set[str]())

    async def run_connection(self, run: Callable[..., Awaitable[None]], *args: Any, **kwargs: Any) -> None:
        """Serve one connection (stdio, SSE) with `run`, ending the sessions it carried when it ends."""
        seen: set[str] = set()
        token = _connection_sessions.set(seen)
        try:
            await run(*args, **kwargs)
        finally:
            _connection_sessions.reset(token)
            for session_key in seen:
                await self._end(session_key)

    async def end_call_sessions(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: the sessions of anonymous sessionless calls end with their request (or their held call)."""
        seen: set[str] = set()
        token = _request_sessions.set(seen)
        try:
            return await call_next(ctx)
        finally:
            _request_sessions.reset(token)
            for session_key in seen - self._running:
                await self._end(session_key)

    @contextlib.asynccontextmanager
    async def running(self, identity: CallIdentity) -> AsyncGenerator[None]:
        """While a call runs: an anonymous call's own session lives (a held call outlives its round), then ends."""
        if not identity.call_scoped:
            yield
            return
        self._running.add(identity.session_key)
        try:
            yield
        finally:
            self._running.discard(identity.session_key)
            await self._end(identity.session_key)
