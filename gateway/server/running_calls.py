"""`RunningCalls`: the `tools/call` requests a server is running, each in a cancel scope a stopping server cancels.

A server told to stop waits for its calls (`active`) for a grace period, then cancels those still running
(`cancel_all`). A cancelled call is still answered: with the JSON-RPC error of `stopped_error` (code -32800, a cancelled
request, as the SDK answers one on the handshake-era wire), whose message tells its client why it has no result
and that the call may have partly run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from typing import Final

import anyio
from mcp import MCPError

__all__ = ["REQUEST_CANCELLED", "RunningCalls"]

REQUEST_CANCELLED: Final = -32800
"""The JSON-RPC error code of a cancelled request (the SDK's `REQUEST_CANCELLED`)."""


class RunningCalls:
    """The calls in flight, and a way to cancel them all when the server stops."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self.stop_reason: str | None = None
        """Why the calls were cancelled (`cancel_all`), for their answers; None while the server runs."""

    @property
    def active(self) -> int:
        """How many calls are running now."""
        return len(self._scopes)

    @contextlib.contextmanager
    def running(self, scope: anyio.CancelScope | None = None) -> Generator[anyio.CancelScope]:
        """Count a call as running while inside; yields the scope (`scope`, or a new one) `cancel_all` cancels.

        The caller enters the scope around the call's work and answers it after a cancellation (`stopped_error`).
        """
        scope = scope if scope is not None else anyio.CancelScope()
        self._scopes.add(scope)
        try:
            if self.stop_reason is not None:
                # Arrived after the grace period: cancelled like the others, before it starts any work.
                scope.cancel()
            yield scope
        finally:
            self._scopes.discard(scope)

    def cancel_all(self, reason: str) -> int:
        """Cancel every call running now and any that starts from now on; returns how many were running."""
        self.stop_reason = reason
        for scope in self._scopes:
            scope.cancel()
        return len(self._scopes)

    def stopped_error(self) -> MCPError:
        """The error a call cancelled by `cancel_all` is answered with."""
        return MCPError(REQUEST_CANCELLED, self.stop_reason or "Request cancelled")
