"""`SessionRetention`: how long the state of a session nobody ends explicitly is kept.

A session that ends (a deleted or expired streamable HTTP session, a closed stdio or SSE connection) has its
session keys deleted there and then. A session addressed by a client-chosen key (`_meta` session key) or by the
principal never ends that way: its keys are deleted once nothing has written them for the retention period. The
same sweep removes what a crashed process left of its connection sessions. `user:` and `app:` keys are never swept.
Other stores of per-session data (the artifacts beside the state) are swept with it (`also`).
"""

from __future__ import annotations

import logging
import time
from typing import Final, Protocol

import anyio

from gateway.errors import ConfigError
from gateway.state.store import StateStore

__all__ = ["DEFAULT_SESSION_RETENTION", "IdleSessions", "SessionRetention"]

logger = logging.getLogger(__name__)

DEFAULT_SESSION_RETENTION: Final = 30 * 24 * 3600.0
"""Thirty days."""
_MAX_SWEEP_INTERVAL: Final = 3600.0


class IdleSessions(Protocol):
    """A store of per-session data that forgets the sessions idle since a time (as `StateStore` does)."""

    async def forget_idle_sessions(self, app_name: str, idle_since: float) -> int: ...


class SessionRetention:
    """Deletes the session state of `app_name` idle for longer than `retention` seconds, now and periodically.

    Args:
        store: the state store.
        app_name: the server whose sessions are swept.
        retention: seconds a session's keys are kept after their last write; must be positive.

    Raises:
        ConfigError: `retention` is not a positive number of seconds.
    """

    def __init__(self, store: StateStore, app_name: str, retention: float = DEFAULT_SESSION_RETENTION) -> None:
        if not retention > 0:
            raise ConfigError(
                f"session_retention must be a positive number of seconds, got {retention!r} (--session-retention)."
            )
        self.store = store
        self.app_name = app_name
        self.retention = retention
        self.also: list[IdleSessions] = []
        """Other stores swept with the state (each forgets what its sessions idle as long hold)."""

    async def sweep(self) -> int:
        """Delete the sessions idle past the retention now; returns how many."""
        idle_since = time.time() - self.retention
        forgotten = await self.store.forget_idle_sessions(self.app_name, idle_since)
        for other in self.also:
            await other.forget_idle_sessions(self.app_name, idle_since)
        if forgotten:
            logger.info("Deleted the state of %d sessions idle for more than %g s", forgotten, self.retention)
        return forgotten

    async def run(self) -> None:
        """Sweep every half retention period (at most hourly) until cancelled; a failed sweep is logged and retried."""
        interval = min(self.retention / 2, _MAX_SWEEP_INTERVAL)
        while True:
            await anyio.sleep(interval)
            try:
                await self.sweep()
            except Exception:
                logger.exception("Sweeping idle session state failed; trying again in %g s", interval)
