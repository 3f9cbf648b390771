"""`StateAttempts`: a state-using tool call runs under its state locks, and again when its state went stale.

Calls of one session that use state run one at a time (and of one app or user, for contended tools). When another
process sharing the state store saved changes to what a call read before the call saved its own, the call's
changes are dropped and it runs again on fresh state, after a short random back-off, up to `MAX_STATE_ATTEMPTS`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
from mcp import types

from gateway.server.tool_call import StaleState, ToolCall, error_result
from gateway.state import StateScope, StateStore
from gateway.state.state_locks import StateLocks
from gateway.tools import ToolConfirmation

__all__ = ["MAX_STATE_ATTEMPTS", "STATE_BACKOFF", "STATE_BACKOFF_CAP", "StateAttempts"]

logger = logging.getLogger(__name__)

MAX_STATE_ATTEMPTS: Final = 16
"""How often a state-using call runs before giving up on state that other processes keep changing under it."""
STATE_BACKOFF: Final = 0.005
"""Seconds of back-off after the first state conflict; it doubles with each further conflict, up to the cap."""
STATE_BACKOFF_CAP: Final = 0.25
"""The most a back-off can be, in seconds: sixteen attempts then wait at most about three seconds in all."""


class StateAttempts:
    """Runs state-using calls under the state locks, again on fresh state after a conflict."""

    def __init__(self, state_store: StateStore) -> None:
        self._state_store = state_store
        self._locks = StateLocks()

    async def run(
        self,
        tool_name: str,
        scope: StateScope,
        make_call: Callable[[dict[str, Any]], ToolCall],
        run: Callable[[ToolCall, ToolConfirmation | None], Awaitable[types.CallToolResult]],
    ) -> types.CallToolResult:
        """Run `run(make_call(state), confirmation)` until its state changes are saved (or give up with an error)."""
        confirmation: ToolConfirmation | None = None
        for attempt in range(MAX_STATE_ATTEMPTS):
            if attempt:
                # Another process on the state file won the race: let it finish before trying again.
                # Random within a window that doubles ("full jitter"), so many contenders spread out quickly.
                window = min(STATE_BACKOFF_CAP, STATE_BACKOFF * 2 ** (attempt - 1))
                await anyio.sleep(random.uniform(0, window))
            async with self._locks.hold(scope, tool_name):
                # Loaded again under the locks: the state loaded before may predate the session's previous call.
                call = make_call(await self._state_store.load(scope))
                try:
                    return await run(call, confirmation)
                except StaleState as stale:
                    logger.info("Tool %s ran on stale state (%s); running it again", tool_name, stale)
                    self._locks.remember_conflict(tool_name, stale.conflict.keys)
                    confirmation = stale.confirmation
        return error_result(
            f"Tool {tool_name} ran {MAX_STATE_ATTEMPTS} times, and each time another process changed the "
            "state it read before its changes were saved; none of its state changes were saved. Call it again."
        )
