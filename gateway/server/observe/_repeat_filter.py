"""`RepeatFilter`: a logging filter that lets one of a run of identical log lines through per interval.

Under descriptor exhaustion asyncio's accept loop logs "socket.accept() out of system resource" with a traceback
once per queued connection, over and over: hundreds of megabytes in seconds, which then costs the disk and the
CPU the server needs to recover. Identical lines (same logger, level, message with its numbers masked, and
exception type; the traceback itself is not compared) after the first are dropped for `interval` seconds; the
next one to pass says how many were dropped.

Only warnings and errors are ever dropped: info and debug lines (one per request in the request log, which differ
only in numbers) all pass.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterable
from typing import Final

__all__ = ["RepeatFilter", "filtering_repeats"]

DEFAULT_INTERVAL: Final = 10.0
_MAX_TRACKED: Final = 1024
"""Distinct lines remembered at once; the least recently seen is forgotten first."""
_NUMBER: Final = re.compile(r"\d+")
_JUDGED: Final = "_adk_mcp_gateway_repeat_passed"


class RepeatFilter(logging.Filter):
    """Drops repeats of a warning or error within `interval` seconds of the one let through, and counts them.

    Thread-safe (worker threads log too). Attach it to handlers (records propagated from child loggers pass a
    handler's filters, not an ancestor logger's) or to the logger that emits the flood.
    """

    def __init__(self, interval: float = DEFAULT_INTERVAL, *, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        # line -> (when it was last let through, how many were dropped since)
        self._seen: OrderedDict[tuple[str, int, str, str], tuple[float, int]] = OrderedDict()

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether the record is logged; a let-through repeat gets a note of how many were dropped."""
        # A record passes a logger's filters and then each handler's: judge it once.
        judged = getattr(record, _JUDGED, None)
        if isinstance(judged, bool):
            return judged
        passed = self._judge(record)
        setattr(record, _JUDGED, passed)
        return passed

    def _judge(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        # Numbers are masked: a flood's lines often differ only in a descriptor, a port or a timer's due time.
        error = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
        key = (record.name, record.levelno, _NUMBER.sub("#", record.getMessage()), error)
        now = self._clock()
        with self._lock:
            passed_at, dropped = self._seen.get(key, (now, 0))
            if key in self._seen and now - passed_at < self._interval:
                self._seen[key] = (passed_at, dropped + 1)
                self._seen.move_to_end(key)
                return False
            self._seen[key] = (now, 0)
            self._seen.move_to_end(key)
            if len(self._seen) > _MAX_TRACKED:
                self._seen.popitem(last=False)
        if dropped:
            messages = "message" if dropped == 1 else "messages"
            note = f"{dropped} identical {messages} suppressed in the last {now - passed_at:.0f} s"
            record.msg, record.args = f"{record.getMessage()} [{note}]", None
        return True


@contextlib.contextmanager
def filtering_repeats(
    filter_: RepeatFilter, loggers: Iterable[logging.Logger], handlers: Iterable[logging.Handler]
) -> Generator[None]:
    """Attach `filter_` to `loggers` and `handlers` for the duration, then detach it."""
    loggers, handlers = list(loggers), list(handlers)
    for target in (*loggers, *handlers):
        target.addFilter(filter_)
    try:
        yield
    finally:
        for target in (*loggers, *handlers):
            target.removeFilter(filter_)
