"""`SessionRegistry`: which sessions the server served, so each is ended when what carried it ends.

A stdio or SSE connection's sessions end with the connection; an anonymous sessionless session (a call's own, or
an issued key echoed) ends when no request and no held call uses it any more: what the toolsets hold for it is
released then (its state stays for the next echo). `meta:` and `principal:` session keys outlive any one connection
(the retention sweep ends them).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import Counter, defaultdict
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Final

from mcp import types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from gateway.server.identity import CALL_SESSION_PREFIX, SESSION_META_KEY, CallIdentity

__all__ = ["SessionRegistry"]

_CONNECTION_BOUND: Final = ("http:", "connection:")
"""Session keys that end with their connection; `meta:` and `principal:` keys outlive any one connection."""
_connection_sessions: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "adk_mcp_gateway_connection_sessions", default=None
)
_request_sessions: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "adk_mcp_gateway_request_sessions", default=None
)
_request_forwarded: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "adk_mcp_gateway_request_forwarded", default=None
)


class SessionRegistry:
    """The principals seen in each connection- or call-bound session, and the calls running in anonymous ones.

    Args:
        end: ends one session by key (releases what the toolsets hold for it and its own state).
    """

    def __init__(self, end: Callable[[str], Awaitable[None]]) -> None:
        self._end = end
        self._principals_of: defaultdict[str, set[str]] = defaultdict(set)
        # Anonymous sessions in use: how many requests and calls use each (it ends when the last one ends; a call
        # held across rounds outlives its request, and an echoed key may be used by several requests at once).
        self._running: Counter[str] = Counter()

    def note(self, identity: CallIdentity) -> None:
        """A request used this session: remember its principal, and tie the session to its connection or request."""
        if identity.session_key.startswith(_CONNECTION_BOUND) or identity.call_scoped:
            self._principals_of[identity.session_key].add(identity.principal)
            seen = (_request_sessions if identity.call_scoped else _connection_sessions).get()
            if seen is not None and identity.session_key not in seen:
                seen.add(identity.session_key)
                if identity.call_scoped:
                    self._running[identity.session_key] += 1

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
        """Middleware: the sessions of anonymous sessionless calls end with their request (or their held call); the
        result of a call this server ran names its session's issued key in `_meta`, for the client to echo."""
        seen: set[str] = set()
        forwarded = [False]
        token = _request_sessions.set(seen)
        forwarded_token = _request_forwarded.set(forwarded)
        try:
            result = await call_next(ctx)
            issued = [key.removeprefix(CALL_SESSION_PREFIX) for key in seen if key.startswith(CALL_SESSION_PREFIX)]
            if ctx.method != "tools/call" or len(issued) != 1 or forwarded[0]:
                return result
            if isinstance(result, types.CallToolResult):
                # A copy: a result may be a shared constant.
                return result.model_copy(update={"meta": {**(result.meta or {}), SESSION_META_KEY: issued[0]}})
            if isinstance(result, dict) and result.get("resultType", "complete") == "complete":
                meta: Any = result.get("_meta")
                return {**result, "_meta": {**(meta if isinstance(meta, dict) else {}), SESSION_META_KEY: issued[0]}}
            return result
        finally:
            _request_forwarded.reset(forwarded_token)
            _request_sessions.reset(token)
            for session_key in seen:
                await self._done_with(session_key)

    @staticmethod
    def forwarded() -> None:
        """The request's call was forwarded: its result crosses as the upstream sent it, with no key of this
        server's added (a client that wants the session continued sends a key of its own)."""
        forwarded = _request_forwarded.get()
        if forwarded is not None:
            forwarded[0] = True

    @contextlib.asynccontextmanager
    async def running(self, identity: CallIdentity) -> AsyncGenerator[None]:
        """While a call runs: an anonymous call's own session lives (a held call outlives its round), then ends."""
        if not identity.call_scoped:
            yield
            return
        self._running[identity.session_key] += 1
        try:
            yield
        finally:
            await self._done_with(identity.session_key)

    async def _done_with(self, session_key: str) -> None:
        """A request or call no longer uses an anonymous session: it ends if nothing else does."""
        self._running[session_key] -= 1
        if self._running[session_key] <= 0:
            del self._running[session_key]
            await self._end(session_key)
