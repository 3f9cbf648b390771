"""`SessionPool`: the upstream sessions of one toolset — one per identity, opened on demand, backed off while failing.

An identity is the `session_key`, the headers that `header_provider` give a context, whom the `credential`
speaks for and what the session declares for it (all callers share one session when there is none of these). A
session whose transport ended (a stdio child that exited, a closed SSE stream) is replaced before the next
request; idempotent requests (`request`) are sent once more on a fresh session when the session turns out dead. A
failed connection backs off: 0.5 s, 1 s, 2 s ... 30 s, during which requests fail at once with the last error. A
session with nothing in flight for `idle_timeout` seconds closes itself.

Where the sessions' owner tasks live: in the task group of `async with pool` when the pool is entered (an
`McpToolset` used as a context manager); otherwise in a `DetachedTaskGroup` started on first use, which `close()`
ends — as does the pool being garbage-collected, or the event loop shutting down.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import secrets
import time
import weakref
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Final, Self, TypeVar, cast

import anyio
import anyio.abc
from mcp import MCPError, types

from gateway.client.connection import ConnectionParams, SseConnectionParams, StreamableHTTPConnectionParams
from gateway.client.credentials import Credential
from gateway.client.sessions._detached import DetachedTaskGroup, run_within
from gateway.client.sessions.limits import SessionLimits
from gateway.client.sessions.slot import SessionSlot, identity_of, slot_key
from gateway.client.sessions.upstream_session import ClientCallbacks, UpstreamSession, open_upstream
from gateway.errors import UpstreamUnavailableError
from gateway.tools import ReadonlyContext

__all__ = ["Declared", "HeaderProvider", "SessionCallbacks", "SessionPool"]

logger = logging.getLogger(__name__)

HeaderProvider = Callable[[ReadonlyContext], dict[str, str] | Awaitable[dict[str, str]]]
SessionCallbacks = Callable[[SessionSlot, ReadonlyContext | None], ClientCallbacks]
"""The callbacks a new session of a slot gets, given the context that opens it."""
Mode = str | Callable[[ReadonlyContext | None], str]
"""A protocol era for every session, or a function choosing it for the context that opens a session."""
Declared = Callable[[ReadonlyContext | None], types.ClientCapabilities | None]
"""What a session opened for a context declares (None: what its callbacks can answer)."""
_T = TypeVar("_T")
_Read = Callable[[SessionSlot, UpstreamSession], _T | None]

_FIRST_BACKOFF: Final = 0.5
_MAX_BACKOFF: Final = 30.0


class SessionPool:
    """Upstream sessions by identity, and the task group their owner tasks run in.

    Args:
        params: how to reach the upstream.
        callbacks: the client callbacks for a new session.
        mode: the protocol era to ask for (`auto`, `legacy`, `2026-07-28`, `HANDSHAKE_FIRST`), or a function
            choosing it for the context that opens a session.
        header_provider: headers for a context; each distinct set gets its own session.
        session_key: a key for a context; each distinct key gets its own session.
        session_meta_key: a `_meta` key carrying the slot's key on every request to a modern upstream: a secret
            derived from the identity with this pool's random secret, so an identity whose session was released and
            opened again (an anonymous call's next round) is the same session to the upstream.
        idle_timeout: seconds without a request in flight after which a session closes itself (None: never).
        credential: how to authenticate to an HTTP upstream (its identity for a context keeps sessions apart).
        declared: the capabilities a session opened for a context declares; contexts that declare differently
            never share a session (None: every session declares what its callbacks can answer).
        limits: caps on the sessions open at once, in all and per client (`SessionLimits`; none by default).
    """

    def __init__(
        self,
        params: ConnectionParams,
        callbacks: SessionCallbacks,
        *,
        mode: Mode = "auto",
        header_provider: HeaderProvider | None = None,
        session_key: Callable[[ReadonlyContext], str] | None = None,
        session_meta_key: str | None = None,
        idle_timeout: float | None = None,
        credential: Credential | None = None,
        declared: Declared | None = None,
        limits: SessionLimits | None = None,
    ) -> None:
        self.params = params
        self.declared: Declared = declared or (lambda _context: None)
        self.credential = credential
        self.mode = mode
        self.header_provider = header_provider
        self.session_key = session_key
        self.session_meta_key = session_meta_key
        self.idle_timeout = idle_timeout
        self.limits = limits or SessionLimits()
        self.borrower: Callable[[ReadonlyContext], str | None] | None = None
        """Who borrows a context's slot, for slots lent to one caller at a time (None: slots are not lent)."""
        self._callbacks = callbacks
        self._slots: dict[str, SessionSlot] = {}
        self._slot_secret = secrets.token_bytes(32)
        self._task_group: anyio.abc.TaskGroup | None = None
        self._detached: DetachedTaskGroup | None = None
        self._detached_lock = anyio.Lock()
        self._failures = 0
        self._last_error: str | None = None
        self._retry_at = 0.0
        self._lost: set[SessionSlot] = set()
        self.opened = self.reconnects = self.connect_failures = 0
        """Sessions opened (stdio: processes started); those opened to replace one the upstream lost (its process
        exited, it forgot the session); connection attempts that failed. All since the pool was made."""

    # --- where owner tasks run ----------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        task_group, self._task_group = self._task_group, None
        with anyio.CancelScope(shield=True):
            await self.close()
        if task_group is not None:
            task_group.cancel_scope.cancel()
            # The block's own exception propagates as it is; the owner tasks never raise into the group.
            await task_group.__aexit__(None, None, None)

    async def _owners(self) -> anyio.abc.TaskGroup:
        """The task group new sessions' owner tasks start in (a detached one, started now, outside `async with`)."""
        if self._task_group is not None:
            return self._task_group
        async with self._detached_lock:
            if self._detached is None or not self._detached.open:
                detached = await DetachedTaskGroup.start()
                # A pool dropped without close still ends its sessions (and their stdio children).
                weakref.finalize(self, detached.stop_soon)
                self._detached = detached
            return self._detached.task_group

    async def close(self) -> None:
        """End every session (stdio children are killed with their process group); the pool stays usable.

        What failed before is forgotten with them: the next use starts afresh (and `status()` says `idle`).
        """
        slots, self._slots = list(self._slots.values()), {}
        self._lost.clear()
        self._failures, self._last_error, self._retry_at = 0, None, 0.0
        async with anyio.create_task_group() as tg:
            for slot in slots:
                if slot.session is not None:
                    tg.start_soon(slot.session.aclose)
        detached, self._detached = self._detached, None
        if detached is not None:
            await detached.aclose()

    async def within(self, seconds: float | None, work: Callable[[], Awaitable[_T]]) -> _T:
        """`work()`, waited for at most `seconds`; past that it goes on in the pool's task group (`run_within`).

        So a slow start (a stdio server installing itself, an upstream slow to answer) is not cut short by a
        caller in a hurry: the connection it makes serves the next caller.

        Raises:
            TimeoutError: `work` did not finish in time (it is still running).
        """
        if seconds is None:
            return await work()
        return await run_within(await self._owners(), seconds, work)

    # --- identities ---------------------------------------------------------------------------------------------

    async def _headers(self, context: ReadonlyContext | None) -> dict[str, str] | None:
        if self.header_provider is None or context is None:
            return None
        headers = self.header_provider(context)
        return dict(await headers if inspect.isawaitable(headers) else headers)

    async def _identity(self, context: ReadonlyContext | None) -> tuple[str, str, dict[str, str] | None]:
        """The slot key, the session key and the headers of a context."""
        headers = await self._headers(context)
        identity = self._session_identity(context)
        speaks_for = self.credential.identity(context) if self.credential is not None else ""
        return slot_key(identity, headers, speaks_for, self.declared(context)), identity, headers

    def _session_identity(self, context: ReadonlyContext | None) -> str:
        return self.session_key(context) if self.session_key is not None and context is not None else ""

    def cached_tools_now(self, context: ReadonlyContext | None) -> list[types.Tool] | None:
        """`cached_tools` without awaiting anything: None also when a context's identity takes a header provider or a
        credential to tell. The same list object while the listing it holds is current."""
        return self._cached_now(context, SessionSlot.cached_tools)

    def cached_hint_now(self, context: ReadonlyContext | None) -> types.CacheableResult | None:
        """How fresh the listing `cached_tools_now` gives is, and its scope (None when it gives none)."""
        return self._cached_now(context, SessionSlot.tools_hint)

    def _cached_now(self, context: ReadonlyContext | None, read: _Read[_T]) -> _T | None:
        if self.credential is not None or (self.header_provider is not None and context is not None):
            return None
        return self._cached_in(slot_key(self._session_identity(context), None, "", self.declared(context)), read)

    def _cached_in(self, key: str, read: _Read[_T]) -> _T | None:
        slot = self._slots.get(key)
        session = slot.session if slot is not None else None
        return None if slot is None or session is None or not session.alive else read(slot, session)

    def _params_for(self, context: ReadonlyContext | None) -> ConnectionParams:
        """The connection parameters for a context: with the credential's auth for it (asked on every request, so a
        per-principal credential sees the principal's latest token)."""
        if self.credential is None or not isinstance(self.params, StreamableHTTPConnectionParams | SseConnectionParams):
            return self.params
        return self.params.model_copy(update={"auth": self.credential.auth(context)})

    def _session_meta(self, slot: SessionSlot, session: UpstreamSession) -> types.RequestParamsMeta | None:
        # The slot's own random key, a bearer secret for the upstream's session: never the downstream's identity.
        if not self.session_meta_key or not session.modern:
            return None
        return cast("types.RequestParamsMeta", {self.session_meta_key: slot.session_key})

    # --- sessions -----------------------------------------------------------------------------------------------

    async def slot(self, context: ReadonlyContext | None) -> tuple[SessionSlot, UpstreamSession]:
        """The slot of a context's identity and its live session (opened now if it has none).

        Raises:
            UpstreamUnavailableError: the upstream cannot be reached (or failed moments ago and is backed off).
        """
        key, _, headers = await self._identity(context)
        params = self._params_for(context)
        # Kept in order of use, least recent first: the order `SessionLimits` ends idle sessions in.
        slot = self._slots.pop(key, None)
        if slot is None:
            self._forget_ended_slots()
            slot = SessionSlot.derived(self._slot_secret, key)
            slot.client = self.limits.client_of(context)
        self._slots[key] = slot
        async with slot.lock:
            self._lend(slot, context)
            if slot.session is None or not slot.session.alive:
                stale, slot.session, slot.tools = slot.session, None, None
                if stale is not None:
                    if _lost(stale):
                        self._lost.add(slot)
                    await stale.aclose()
                wait = self._retry_at - time.monotonic()
                if wait > 0 and self._last_error is not None:
                    raise UpstreamUnavailableError(f"{self._last_error} (next attempt in {wait:.1f} s)")
                await self.limits.make_room(self._slots, slot)
                owners = await self._owners()
                callbacks = self._callbacks(slot, context)
                if (declared := self.declared(context)) is not None:
                    callbacks = dataclasses.replace(callbacks, declared=declared)
                try:
                    session = await open_upstream(
                        owners,
                        params,
                        callbacks,
                        headers=headers,
                        mode=self.mode(context) if callable(self.mode) else self.mode,
                        idle_timeout=self.idle_timeout,
                    )
                except UpstreamUnavailableError as exc:
                    if self.credential is None or not self.credential.refused(context):
                        self.record_failure(str(exc))  # not for one user's refused sign-in: others still connect
                    raise
                self._failures, self._last_error, self._retry_at = 0, None, 0.0
                self.opened += 1
                if slot in self._lost:
                    self._lost.discard(slot)
                    self.reconnects += 1
                session.meta = self._session_meta(slot, session)
                slot.session = session
            return slot, slot.session

    def record_failure(self, reason: str) -> None:
        """The upstream failed (a connection, or an answer that did not come in time): back off before the next."""
        self._failures += 1
        self.connect_failures += 1
        self._last_error = reason
        self._retry_at = time.monotonic() + min(_MAX_BACKOFF, _FIRST_BACKOFF * 2 ** (self._failures - 1))

    async def open_session(self, context: ReadonlyContext | None) -> UpstreamSession | None:
        """The live session of a context's identity if one is open (none is opened)."""
        key, _, _ = await self._identity(context)
        slot = self._slots.get(key)
        session = slot.session if slot is not None else None
        return session if session is not None and session.alive else None

    def _forget_ended_slots(self) -> None:
        """Drop the slots of identities whose session ended (idle, closed) and that nobody is using."""
        for key, slot in list(self._slots.items()):
            if slot.session is not None and not slot.session.alive and not slot.lock.locked() and not slot.active:
                del self._slots[key]
                self._lost.discard(slot)

    async def release(self, context: ReadonlyContext | None) -> None:
        """End the session of a context's identity now (not a session every context shares)."""
        if self.session_key is None and self.header_provider is None and self.credential is None:
            return
        key, _, _ = await self._identity(context)
        # Every slot of the identity, whatever its sessions declared (a modern client may declare anew each request).
        whose = identity_of(key)
        # Taken out all at once, before any close is awaited, so that nothing else ends one of them meanwhile.
        for slot in [self._slots.pop(other) for other in list(self._slots) if identity_of(other) == whose]:
            self._lost.discard(slot)
            if slot.session is not None:
                await slot.session.aclose()

    def _lend(self, slot: SessionSlot, context: ReadonlyContext | None) -> None:
        """A slot lent to one caller at a time (`borrower`) is known to a sessionless upstream by a key derived from
        its current borrower: each borrower a session of its own there, the same in each of its rounds."""
        borrower = self.borrower(context) if self.borrower is not None and context is not None else None
        if borrower is None or slot.borrower == borrower:
            return
        slot.borrower = borrower
        slot.session_key = SessionSlot.derived(self._slot_secret, borrower).session_key
        if slot.session is not None:
            slot.session.meta = self._session_meta(slot, slot.session)

    async def discard(self, slot: SessionSlot, session: UpstreamSession) -> None:
        """Drop a session found dead, so the slot's next request opens a fresh one."""
        if slot.session is session:
            slot.session = None
            slot.tools = None
            self._lost.add(slot)
        await session.aclose()

    @staticmethod
    def is_dead(session: UpstreamSession, error: MCPError) -> bool:
        """Whether an error means the session is gone (rather than the request failing)."""
        return error.code == types.CONNECTION_CLOSED or not session.alive

    async def cached_tools(self, context: ReadonlyContext | None) -> list[types.Tool] | None:
        """The tool listing cached on the live session of a context's identity, if there is one (nothing is sent)."""
        key, _, _ = await self._identity(context)
        return self._cached_in(key, SessionSlot.cached_tools)

    async def request(
        self,
        context: ReadonlyContext | None,
        what: str,
        send: Callable[[SessionSlot, UpstreamSession], Awaitable[_T]],
    ) -> _T:
        """Send an idempotent request; if the session turns out dead, send it once more on a fresh session."""
        for attempt in range(2):
            slot, session = await self.slot(context)
            try:
                with session.busy():
                    return await send(slot, session)
            except MCPError as exc:
                if not self.is_dead(session, exc):
                    raise
                await self.discard(slot, session)
                if attempt:
                    raise UpstreamUnavailableError(
                        f"{what} failed: the session with {session.description} ended twice in a row ({exc.message})."
                    ) from exc
                logger.info("The session with %s ended (%s); reconnecting for %s.", session.description, exc, what)
        raise AssertionError("unreachable")  # pragma: no cover

    # --- health -------------------------------------------------------------------------------------------------

    @property
    def live_sessions(self) -> int:
        """How many sessions are open now."""
        return sum(1 for slot in self._slots.values() if slot.session is not None and slot.session.alive)

    @property
    def in_flight(self) -> int:
        """How many requests are in flight on the open sessions now."""
        return sum(slot.session.in_flight for slot in self._slots.values() if slot.session is not None)

    async def drained(self) -> None:
        """Return once no request is in flight on the open sessions (callers bound the wait)."""
        while busy := [slot.session for slot in self._slots.values() if slot.session and slot.session.in_flight]:
            await busy[0].idle.wait()

    @property
    def last_error(self) -> str | None:
        """Why the last connection attempt failed (None once one succeeded)."""
        return self._last_error

    @property
    def failures(self) -> int:
        """Connection attempts failed in a row."""
        return self._failures


def _lost(session: UpstreamSession) -> bool:
    """Whether a session ended because the upstream went away (not closed by us, nor for idleness)."""
    return session.transport_ended or session.expired or session.error is not None
