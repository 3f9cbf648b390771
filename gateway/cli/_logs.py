"""Where the command line's logs go: stderr, as text or one JSON object per line, at the level asked for.

The level comes from `-v` (debug), else `--log-level`, else `$ADK_MCP_GATEWAY_LOG_LEVEL`, else the command's
default (`serve`: info, so a server's log shows its requests and its upstreams' stderr; the others: warning).

A record is one line: control characters in its message (a client's tool name, an upstream's name or stderr, a
URI) are written as escapes (`\\n`, `\\x1b`, `\\u2028`), so nothing logged can start a line of its own or drive the
terminal. Tracebacks keep their lines.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Final

__all__ = ["LEVELS", "LOG_FORMAT_ENV", "LOG_LEVEL_ENV", "configure_logging", "escape_controls"]

LOG_LEVEL_ENV: Final = "ADK_MCP_GATEWAY_LOG_LEVEL"
LOG_FORMAT_ENV: Final = "ADK_MCP_GATEWAY_LOG_FORMAT"
LEVELS: Final = ("debug", "info", "warning", "error")

_NOISY: Final = ("httpx2", "httpcore2", "mcp", "uvicorn", "sse_starlette")
"""Libraries whose info lines (one per HTTP request, per SDK message) drown the gateway's own; quiet below debug."""
_RECORD_FIELDS: Final = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
_CONTROLS: Final = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""C0 and C1 controls and DEL, and the two Unicode line separators (Python's `splitlines` breaks at all of them)."""
_JSON_RAW: Final = re.compile("[\x7f-\x9f\u2028\u2029]")
"""The characters of `_CONTROLS` that `json.dumps` leaves unescaped."""


def escape_controls(text: str) -> str:
    """`text` with each control character written as its Python escape (`\\n`, `\\x1b`, `\\u2028`)."""
    return _CONTROLS.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


class TextFormatter(logging.Formatter):
    """The text log line: time, level, logger and the message, its control characters escaped."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape_controls(record.message)
        return super().formatMessage(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, the record's `extra` fields, and any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update((key, value) for key, value in vars(record).items() if key not in _RECORD_FIELDS)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        line = json.dumps(entry, default=str, ensure_ascii=False)
        # Only inside strings, where an escape means the same character.
        return _JSON_RAW.sub(lambda found: f"\\u{ord(found.group()):04x}", line)


class _WithoutTraceback(logging.Filter):
    """Keeps a record's message and drops its traceback (`-v` shows tracebacks)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True


def configure_logging(level: str, log_format: str, *, tracebacks: bool) -> None:
    """Send every log record at `level` or above to stderr in `log_format` (`text` or `json`)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    if not tracebacks:
        handler.addFilter(_WithoutTraceback())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in _NOISY:
        logging.getLogger(name).setLevel(logging.NOTSET if level == "debug" else max(logging.WARNING, root.level))
