"""`RequestLog`: one info-level log line per tool call — method, tool, upstream, duration and outcome.

    tools/call time_get_current_time upstream=time 12.3 ms ok

A `RequestObserver` of the server's `RequestObservation`, so the log, the metrics and the traces describe each
call the same way. Outcomes are the observation's (`gateway.server.observe.observation.RequestRecord`): `ok`,
`tool_error` (an `isError` result), `input_required` (a modern client's round ended with a question),
`unknown_tool`, `invalid_params` and the other JSON-RPC errors, `internal_error` (also an exception), `cancelled`.
The tool is the name the client asked for. The fields are also the record's attributes (`method`, `tool`, `upstream`,
`duration_ms`, `outcome`) for structured (JSON) logs.
"""

from __future__ import annotations

import logging

from gateway.server.observe.observation import RequestRecord

__all__ = ["RequestLog"]

logger = logging.getLogger(__name__)


class RequestLog:
    """Logs each `tools/call` when it ended (`RequestObserver`)."""

    def request_done(self, record: RequestRecord) -> None:
        """Write the line of a finished `tools/call` (other requests are not logged here)."""
        if record.method != "tools/call" or not logger.isEnabledFor(logging.INFO):
            return
        duration_ms = round(record.duration * 1000, 1)
        upstream = record.upstream or None
        logger.info(
            "%s %s upstream=%s %.1f ms %s",
            record.method,
            record.name,
            upstream or "-",
            duration_ms,
            record.outcome,
            extra={
                "method": record.method,
                "tool": record.name,
                "upstream": upstream,
                "duration_ms": duration_ms,
                "outcome": record.outcome,
            },
        )
