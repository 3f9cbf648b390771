"""`UpstreamSessions`: the session side of an `McpToolset` — its lifecycle, health and per-context sessions.

A mixin over the toolset's `SessionPool` (`_pool`), as `UpstreamContent` is for resources and prompts: closing,
`/healthz` status, draining before a reload, ending one identity's session and telling an upstream its client's roots
changed.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any, Self

import anyio
from mcp import MCPError, types

from gateway.client.sessions.pool import SessionPool
from gateway.client.sessions.upstream_session import ClientCallbacks, UpstreamSession
from gateway.tools import ReadonlyContext

__all__ = ["UpstreamSessions"]

logger = logging.getLogger(__name__)


class UpstreamSessions:
    """Lifecycle, health and sessions of the upstream that `_pool` reaches."""

    _pool: SessionPool
    _callbacks: ClientCallbacks

    # --- lifecycle ----------------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self._pool.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._pool.__aexit__(exc_type, exc, tb)

    async def close(self) -> None:
        """End every upstream session (stdio children are killed with their process group).

        The toolset stays usable: the next request opens a new session. Call it from any task.
        """
        await self._pool.close()

    @property
    def client_callbacks(self) -> ClientCallbacks:
        """The callbacks given at construction (elicitation, sampling, logging, notifications)."""
        return self._callbacks

    # --- sessions -----------------------------------------------------------------------------------------------

    async def roots_changed(self, readonly_context: ReadonlyContext | None = None) -> None:
        """Tell the upstream session of a context (if one is open) that its client's roots changed."""
        session = await self._pool.open_session(readonly_context)
        if session is None or session.modern:
            return
        try:
            # Sent as a plain notification: `Client.send_roots_list_changed` warns that roots are deprecated,
            # which they are only from 2026-07-28 on (this session is older).
            await session.client.session.send_notification(types.RootsListChangedNotification())
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            logger.debug("Could not tell %s that the roots changed: %s", session.description, exc)

    def status(self) -> dict[str, Any]:
        """Health for `/healthz`: `connected` (a live session), `idle` (none needed yet) or `failing` (why).

        Also the sessions open now, and since the toolset was made: the sessions opened (`opened`; stdio:
        processes started), those opened to replace one the upstream lost (`reconnects`) and the connection
        attempts that failed (`connect_failures`).
        """
        live = self._pool.live_sessions
        error = self._pool.last_error
        state = "connected" if live else "failing" if error is not None else "idle"
        report: dict[str, Any] = {
            "state": state,
            "sessions": live,
            "opened": self._pool.opened,
            "reconnects": self._pool.reconnects,
            "connect_failures": self._pool.connect_failures,
        }
        if error is not None:
            report["error"] = error
            report["failures"] = self._pool.failures
        return report

    @property
    def in_flight(self) -> int:
        """How many requests (tool calls, listings, reads) are in flight on this toolset's sessions now."""
        return self._pool.in_flight

    async def drained(self) -> None:
        """Return once no request is in flight on this toolset's sessions (the caller bounds the wait)."""
        await self._pool.drained()

    async def release(self, readonly_context: ReadonlyContext | None = None) -> None:
        """End the session of a context's identity now (e.g. when the downstream session it served ended)."""
        await self._pool.release(readonly_context)

    async def session(self, readonly_context: ReadonlyContext | None = None) -> UpstreamSession:
        """The live session for a context (opened on first use)."""
        return (await self._pool.slot(readonly_context))[1]
