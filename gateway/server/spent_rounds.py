"""`SpentRounds`: the rounds of modern (2026-07-28) calls already answered, so that each is answered once.

A round's sealed `requestState` stays valid for its lifetime (`RequestStateSecurity.ttl`, ten minutes), and every
process holding the sealing key opens it. A round answered once could otherwise be sent again — to another replica,
or to the same one after a restart — to run the confirmed call a second time (uncounted by rate limits too, which
count a call's first round only). So the first process to receive a round records the round's id in the state
store every replica shares (SQLite, Redis), under an app of its own (`<app>#rounds`), with a write that succeeds
only while there is no record (`StateStore.apply` with the key `expected` absent: one SQLite transaction, one Redis
script). Of any number of requests carrying one round, in one process or in several, exactly one goes on; the
others get -32602 saying the round was already answered.

A record is swept once its round cannot be valid any more (its lifetime, plus a margin for clocks that differ
between replicas, after it was received).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

from mcp import MCPError, types

from gateway.errors import StateConflictError
from gateway.state.store import ABSENT, StateScope, StateStore

__all__ = ["SpentRounds"]

logger = logging.getLogger(__name__)

_SPENT: Final = "spent"
_CLOCK_SKEW: Final = 60.0
"""Seconds by which replicas' clocks may differ: a record outlives its round's lifetime by this much."""
_SWEEP_EVERY: Final = 60.0


class SpentRounds:
    """The ids of the rounds already received, as rows of the state store (see the module docstring).

    Args:
        store: the server's state store (shared by every process that holds the sealing key).
        app_name: the server's name; its records live under `<app>#rounds`.
        ttl: seconds a round's `requestState` is valid.
        clock: the wall clock (`time.time`), which the state stores date their rows by.
    """

    def __init__(self, store: StateStore, *, app_name: str, ttl: float, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._app = f"{app_name}#rounds"
        self._ttl = ttl
        self._clock = clock
        self._swept = 0.0

    async def spend(self, round_id: str) -> None:
        """Accept a round once, in this process and every other one on the same state store.

        Raises:
            MCPError: -32602, the round was already received (a replayed `requestState`).
            StateStoreUnavailableError: the store cannot be reached (the round is not accepted).
        """
        scope = StateScope(app_name=self._app, user_id="", session_id=round_id)
        now = self._clock()
        try:
            await self._store.apply(scope, {_SPENT: now}, expected={_SPENT: ABSENT})
        except StateConflictError:
            logger.info("Refused a round of a modern call that was already answered (a replayed requestState)")
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="This requestState was already answered once; call the tool again to be asked again.",
            ) from None
        if now - self._swept > _SWEEP_EVERY:
            self._swept = now
            await self._store.forget_idle_sessions(self._app, now - self._ttl - _CLOCK_SKEW)
