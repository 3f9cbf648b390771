"""`HttpSessions`: the open streamable HTTP sessions and SSE connections of each client, limited and ended.

The SDK's session manager keeps sessions but tells nobody when one ends, and counts them only in total, so one
client can fill it and lock everyone else out. This ASGI wrapper around `/mcp` (and `/sse`) keeps its own book:

* **Limit per client.** A client is its authenticated principal, or its address when anonymous. Opening one more
  session (`POST /mcp` without `mcp-session-id`, handshake era) or SSE connection than `max_sessions_per_client`
  is refused with HTTP 429 and a JSON-RPC error naming the limit and what to do.
* **Reclaim under pressure.** Before refusing, the client's streamable HTTP sessions idle (no request in flight)
  for at least `reclaim_idle_after` seconds are ended, oldest first, to make room.
* **Ends.** A session ends on `DELETE`, when reclaimed, and when idle for the session idle timeout (the SDK's rule:
  no request in flight, no open GET stream); each end calls `ToolServer.end_session`, which deletes the session's
  state and releases what toolsets held for it.

Modern (2026-07-28) requests open no session and pass straight through.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.types import INVALID_REQUEST
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import ConfigError
from gateway.server.identity import client_address, client_share_key

__all__ = ["DEFAULT_MAX_SESSIONS_PER_CLIENT", "DEFAULT_RECLAIM_IDLE_AFTER", "HttpSessions"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_SESSIONS_PER_CLIENT: Final = 100
DEFAULT_RECLAIM_IDLE_AFTER: Final = 60.0
_SESSION_HEADER: Final = "mcp-session-id"
_EXPIRY_GRACE: Final = 1.0
"""Seconds past the idle timeout before a session counts as ended here, so the SDK has ended it first."""

EndSession = Callable[[str], Awaitable[None]]


@dataclass
class _Session:
    client: str
    in_flight: int = 0
    idle_since: float = field(default_factory=anyio.current_time)
    template: Scope | None = None
    """The scope of a request of this session (its headers, its principal), to end it with a DELETE of our own."""
    requestor: object = None
    """Who opened it, as the SDK's session manager tells (`authorization_context`; None when anonymous)."""
    sdk_seen: float = field(default_factory=anyio.current_time)
    """When the SDK's session manager last served one of its requests (the fast lane answers some itself)."""


class HttpSessions:
    """Books the HTTP sessions of each client; see the module docstring.

    Args:
        end_session: called with the session key (`http:<id>`) once a streamable HTTP session ended.
        max_sessions_per_client: open sessions plus SSE connections one client may have.
        reclaim_idle_after: seconds a session must have been idle to be ended for a client at its limit.
        idle_timeout: the streamable HTTP session idle timeout (None: sessions never expire idle).
        stateless: streamable HTTP opens no sessions (then only SSE connections count).

    Raises:
        ConfigError: a limit is not positive.
    """

    def __init__(
        self,
        end_session: EndSession,
        *,
        max_sessions_per_client: int = DEFAULT_MAX_SESSIONS_PER_CLIENT,
        reclaim_idle_after: float = DEFAULT_RECLAIM_IDLE_AFTER,
        idle_timeout: float | None = None,
        stateless: bool = False,
    ) -> None:
        if max_sessions_per_client < 1:
            raise ConfigError(
                f"max_sessions_per_client must be at least 1, got {max_sessions_per_client} "
                "(--max-sessions-per-client)."
            )
        if not reclaim_idle_after >= 0:
            raise ConfigError(f"reclaim_idle_after must be a number of seconds ≥ 0, got {reclaim_idle_after!r}.")
        self._end_session = end_session
        self.max_sessions_per_client = max_sessions_per_client
        self.reclaim_idle_after = reclaim_idle_after
        self.idle_timeout = None if stateless else idle_timeout
        self.stateless = stateless
        self._sessions: dict[str, _Session] = {}
        self._by_client: dict[str, set[str]] = {}
        self._streams: dict[str, int] = {}
        """Open SSE connections per client."""
        self._opening: dict[str, int] = {}
        """Session-opening requests in flight per client (admitted, session id not yet known)."""
        self._app: ASGIApp | None = None

    def open_sessions(self, client: str) -> int:
        """How many sessions and SSE connections `client` has open (or is opening) now."""
        sessions = len(self._by_client.get(client, ()))
        return sessions + self._streams.get(client, 0) + self._opening.get(client, 0)

    @property
    def open_count(self) -> int:
        """How many streamable HTTP sessions and SSE connections are open now, of all clients."""
        return len(self._sessions) + sum(self._streams.values())

    def _add(self, session_id: str, session: _Session) -> None:
        self._sessions[session_id] = session
        self._by_client.setdefault(session.client, set()).add(session_id)

    def _forget(self, session_id: str) -> bool:
        session = self._sessions.pop(session_id, None)
        if session is None:
            return False
        own = self._by_client[session.client]
        own.discard(session_id)
        if not own:
            del self._by_client[session.client]
        return True

    # --- ASGI ---------------------------------------------------------------------------------------------------

    def streamable(self, app: ASGIApp) -> ASGIApp:
        """Wrap the streamable HTTP app (`/mcp`); sessions are also ended through it."""
        self._app = app

        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            client = scope.get("client")
            client_address.set(client[0] if client else None)
            if scope["type"] != "http" or self.stateless:
                await app(scope, receive, send)
                return
            headers = Headers(scope=scope)
            session_id = headers.get(_SESSION_HEADER)
            if session_id is None:
                version = headers.get("mcp-protocol-version")
                opening = scope["method"] == "POST" and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
                if opening:
                    await self._open(app, scope, receive, send)
                else:
                    await app(scope, receive, send)
                return
            await self._serve(app, session_id, scope, receive, send)

        return wrapped

    def sse(self, app: ASGIApp) -> ASGIApp:
        """Wrap the SSE endpoint (`/sse`): each connection counts as a session of its client while it is open."""

        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            client = _client_of(scope)
            if not await self._admit(client):
                await self._refuse(client, send)
                return
            self._streams[client] = self._streams.get(client, 0) + 1
            try:
                await app(scope, receive, send)
            finally:
                self._streams[client] -= 1
                if not self._streams[client]:
                    del self._streams[client]

        return wrapped

    async def _open(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        client = _client_of(scope)
        if not await self._admit(client):
            await self._refuse(client, send)
            return
        created: list[str] = []
        counted = [True]

        def settle_opening() -> None:
            # The response is under way: from now on the session (if any) counts, not the opening request.
            if counted[0]:
                counted[0] = False
                self._opening[client] -= 1
                if not self._opening[client]:
                    del self._opening[client]

        async def record(message: Message) -> None:
            if message["type"] == "http.response.start":
                found = Headers(raw=message.get("headers", [])).get(_SESSION_HEADER)
                if found is not None and message["status"] < 400:
                    created.append(found)
                    session = _Session(client, in_flight=1, template=dict(scope), requestor=_requestor_of(scope))
                    self._add(found, session)
                settle_opening()
            await send(message)

        self._opening[client] = self._opening.get(client, 0) + 1
        try:
            await app(scope, receive, record)
        finally:
            settle_opening()
            for session_id in created:
                self._settle(session_id)

    async def _serve(self, app: ASGIApp, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.in_flight += 1
            session.template = dict(scope)
        statuses: list[int] = []

        async def record(message: Message) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
            await send(message)

        try:
            await app(scope, receive, record)
        finally:
            if session is not None:
                self._settle(session_id)
        status = statuses[0] if statuses else 0
        # Only a deletion the session manager accepted (it checks the session's owner) ends anything.
        if scope["method"] == "DELETE" and 200 <= status < 300:
            self._forget(session_id)
            await self._end_session(f"http:{session_id}")
        elif status == 404 and session is not None:
            # The manager no longer knows it (it expired there first): it ended.
            await self._ended(session_id)

    def _settle(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is not None:
            session.in_flight -= 1
            if not session.in_flight:
                session.idle_since = anyio.current_time()

    async def _ended(self, session_id: str) -> None:
        if self._forget(session_id):
            await self._end_session(f"http:{session_id}")

    # --- the fast lane's questions (`gateway.hub.forwarding.fast_lane`) ----------------------------------------------

    def bound(self, session_id: str, scope: Scope) -> bool:
        """Whether `session_id` is an open session opened by the credential of the request of `scope`."""
        session = self._sessions.get(session_id)
        return session is not None and session.requestor == _requestor_of(scope)

    def served_by_sdk(self, session_id: str) -> None:
        """A request of `session_id` goes to the SDK's session manager now."""
        session = self._sessions.get(session_id)
        if session is not None:
            session.sdk_seen = anyio.current_time()

    def sdk_idle(self, session_id: str) -> float:
        """Seconds since the SDK's session manager last served a request of `session_id` (inf: unknown session)."""
        session = self._sessions.get(session_id)
        return math.inf if session is None else anyio.current_time() - session.sdk_seen

    # --- limits -------------------------------------------------------------------------------------------------

    async def _admit(self, client: str) -> bool:
        """Whether `client` may open one more session, after reclaiming its idle ones if it is at its limit."""
        excess = self.open_sessions(client) - self.max_sessions_per_client + 1
        if excess <= 0:
            return True
        now = anyio.current_time()
        idle = sorted(
            (session.idle_since, session_id)
            for session_id in self._by_client.get(client, ())
            if not (session := self._sessions[session_id]).in_flight
            and now - session.idle_since >= self.reclaim_idle_after
        )
        for _, session_id in idle[:excess]:
            logger.info("Ending idle session %s of %s to make room under its session limit", session_id[:8], client)
            await self._terminate(session_id)
        return self.open_sessions(client) < self.max_sessions_per_client

    async def _refuse(self, client: str, send: Send) -> None:
        limit = self.max_sessions_per_client
        message = (
            f"Too many open sessions for this client ({limit}, the limit per "
            f"{'principal' if get_access_token() is not None else 'client address'}): end sessions you no longer "
            "use (HTTP DELETE, or close the SSE stream) and try again; an operator can raise the limit "
            "(--max-sessions-per-client)."
        )
        logger.warning("Refused a new session of %s: %d open (limit %d)", client, self.open_sessions(client), limit)
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": INVALID_REQUEST, "message": message, "data": {"maxSessionsPerClient": limit}},
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 429,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(max(1, math.ceil(self.reclaim_idle_after))).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    # --- ending sessions ---------------------------------------------------------------------------------------

    async def _terminate(self, session_id: str) -> None:
        """End a session in the session manager with a DELETE of our own (as its client would), then here."""
        session = self._sessions.get(session_id)
        if session is None:
            return
        if self._app is not None and session.template is not None:
            scope = dict(session.template)
            scope["method"] = "DELETE"
            scope["headers"] = [
                (name, value)
                for name, value in session.template.get("headers", [])
                if name not in (b"content-length", b"content-type", b"mcp-session-id")
            ] + [(b"mcp-session-id", session_id.encode())]

            async def receive() -> Message:
                return {"type": "http.request", "body": b"", "more_body": False}

            async def discard(message: Message) -> None:
                del message

            await self._app(scope, receive, discard)
        await self._ended(session_id)

    async def expire_idle(self) -> None:
        """End the sessions that have been idle past the idle timeout (the session manager ended them too)."""
        if self.idle_timeout is None:
            return
        now = anyio.current_time()
        expired = [
            session_id
            for session_id, session in self._sessions.items()
            if not session.in_flight and now - session.idle_since > self.idle_timeout + _EXPIRY_GRACE
        ]
        for session_id in expired:
            await self._ended(session_id)

    async def run(self) -> None:
        """Expire idle sessions until cancelled."""
        if self.idle_timeout is None:
            return
        interval = min(max(self.idle_timeout / 4, 0.05), 5.0)
        while True:
            await anyio.sleep(interval)
            try:
                await self.expire_idle()
            except Exception:
                logger.exception("Ending idle HTTP sessions failed; trying again in %g s", interval)


def _requestor_of(scope: Scope) -> object:
    """The credential of a request as the SDK's session manager compares it with a session's creator."""
    user = scope.get("user")
    return authorization_context(user) if isinstance(user, AuthenticatedUser) else None


def _client_of(scope: Scope) -> str:
    """The authenticated principal, else the client's address."""
    client = scope.get("client")
    return client_share_key(client[0] if client else None)
