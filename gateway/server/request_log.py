"""`RequestLine`: one info-level log line per tool call — method, tool, upstream, duration and outcome.

    tools/call time_get_current_time upstream=time 12.3 ms ok

Outcomes: `ok`, `error` (an `isError` result), `input_required` (a modern client's round ended with a question),
`unknown tool`, `rejected` (another JSON-RPC error), `cancelled`, `failed` (an exception). The fields are also
the record's attributes (`method`, `tool`, `upstream`, `duration_ms`, `outcome`) for structured (JSON) logs.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import anyio
from mcp import MCPError, types

__all__ = ["RequestLine"]

logger = logging.getLogger(__name__)


@dataclass
class RequestLine:
    """The log line of one request, written when its `with` block ends."""

    method: str
    tool: str
    upstream: str | None = None
    """The config key of the upstream that owns the tool (None for a local tool, or one not found)."""
    outcome: str = "ok"
    _started: float = field(default_factory=time.perf_counter)

    def finished(self, result: types.CallToolResult | types.InputRequiredResult) -> None:
        """Take the outcome from the result."""
        if isinstance(result, types.InputRequiredResult):
            self.outcome = "input_required"
        elif result.is_error:
            self.outcome = "error"

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                self.outcome = "cancelled"
            elif isinstance(exc, MCPError):
                self.outcome = "unknown tool" if exc.error.code == types.INVALID_PARAMS else "rejected"
            else:
                self.outcome = "failed"
        duration_ms = round((time.perf_counter() - self._started) * 1000, 1)
        logger.info(
            "%s %s upstream=%s %.1f ms %s",
            self.method,
            self.tool,
            self.upstream or "-",
            duration_ms,
            self.outcome,
            extra={
                "method": self.method,
                "tool": self.tool,
                "upstream": self.upstream,
                "duration_ms": duration_ms,
                "outcome": self.outcome,
            },
        )
