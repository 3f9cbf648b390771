"""`RunningCalls`: the `tools/call` requests a server is running, each in a cancel scope a stopping server cancels.

A server told to stop refuses new calls at once (`refuse_new`: answered with `refused_error`, code -32000, so a
client can retry elsewhere at once instead of having its call cut off later), waits for its calls (`active`) for a
grace period, then cancels those still running (`cancel_all`). A cancelled call is still answered: with the
JSON-RPC error of `stopped_error` (code -32800, a cancelled request, as the SDK answers one on the handshake-era
wire), whose message tells its client why it has no result and that the call may have partly run. The log lines
and that message are the same for every transport (`log_stopping`, `log_cancelling`, `stopping_reason`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Generator
from typing import Final

import anyio
from mcp import MCPError

__all__ = [
    "REFUSAL",
    "REQUEST_CANCELLED",
    "SERVER_STOPPING",
    "RunningCalls",
    "log_cancelling",
    "log_stopping",
    "stopping_reason",
]

logger = logging.getLogger(__name__)

REQUEST_CANCELLED: Final = -32800
"""The JSON-RPC error code of a cancelled request (the SDK's `REQUEST_CANCELLED`)."""
SERVER_STOPPING: Final = -32000
"""The JSON-RPC error code (implementation-defined server error) of a call refused because the server stops."""
REFUSAL: Final = (
    "The server is stopping and takes no new tool calls; this call did not run. Retry it on another replica, or "
    "once the server is back."
)
"""The message of a call refused because the server stops."""


class RunningCalls:
    """The calls in flight, and a way to cancel them all when the server stops."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        self._ended: anyio.Event | None = None
        self.stop_reason: str | None = None
        """Why the calls were cancelled (`cancel_all`), for their answers; None while the server runs."""
        self.refusing = False
        """Whether new calls are refused (`refuse_new`): the server stops."""

    @property
    def active(self) -> int:
        """How many calls are running now."""
        return len(self._scopes)

    @contextlib.contextmanager
    def running(self, scope: anyio.CancelScope | None = None) -> Generator[anyio.CancelScope]:
        """Count a call as running while inside; yields the scope (`scope`, or a new one) `cancel_all` cancels.

        The caller enters the scope around the call's work and answers it after a cancellation (`stopped_error`).

        Raises:
            MCPError: the server stops and refuses new calls (`refused_error`); the call must not start.
        """
        if self.refusing:
            raise self.refused_error()
        scope = scope if scope is not None else anyio.CancelScope()
        self._scopes.add(scope)
        try:
            if self.stop_reason is not None:
                # Arrived after the grace period: cancelled like the others, before it starts any work.
                scope.cancel()
            yield scope
        finally:
            self._scopes.discard(scope)
            if not self._scopes and self._ended is not None:
                self._ended.set()
                self._ended = None

    async def ended(self) -> None:
        """Return once no call is running."""
        while self._scopes:
            if self._ended is None:
                self._ended = anyio.Event()
            await self._ended.wait()

    def refuse_new(self) -> None:
        """Refuse every call from now on (`running` raises `refused_error`); the calls running now go on."""
        self.refusing = True

    @staticmethod
    def refused_error() -> MCPError:
        """The error a call arriving at a stopping server is answered with."""
        return MCPError(SERVER_STOPPING, REFUSAL)

    def cancel_all(self, reason: str) -> int:
        """Cancel every call running now and any that starts from now on; returns how many were running."""
        self.stop_reason = reason
        for scope in self._scopes:
            scope.cancel()
        return len(self._scopes)

    def stopped_error(self) -> MCPError:
        """The error a call cancelled by `cancel_all` is answered with."""
        return MCPError(REQUEST_CANCELLED, self.stop_reason or "Request cancelled")


def stopping_reason(grace: float | None) -> str:
    """What the client of a call a stopping server cancelled is told: after `grace` seconds, or (None) at once."""
    when = "at once (the server was told twice)" if grace is None else f"after the {grace:g} s it was given to finish"
    return (
        f"The server is stopping: this call was cancelled {when}, and may have partly run. Call it again once the "
        "server is back."
    )


def log_stopping(cause: str, grace: float, running: int) -> None:
    """Log that the server stops (on signal `cause`) and how many calls it waits for."""
    if running:
        logger.info(
            "Stopping (%s): waiting up to %g s for %d tool call%s in flight; a second signal cancels %s now.",
            cause,
            grace,
            running,
            "" if running == 1 else "s",
            "it" if running == 1 else "them",
        )
    else:
        logger.info("Stopping (%s): no tool call in flight.", cause)


def log_cancelling(cancelled: int, grace: float | None) -> None:
    """Log that `cancelled` calls still ran after `grace` seconds (None: a second signal) and are cancelled now."""
    logger.warning(
        "Cancelling %d tool call%s still running %s; %s told the server is stopping.",
        cancelled,
        "" if cancelled == 1 else "s",
        "on a second signal" if grace is None else f"after {grace:g} s",
        "its client is" if cancelled == 1 else "their clients are",
    )
