"""`SessionRecords`: one record per session (what it last listed, its log level), the newest kept.

Sessions can end without saying so, so a record per session would grow without bound; past
`MAX_TRACKED_SESSIONS` the session written least recently loses its record first.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final, Generic, TypeVar

__all__ = ["MAX_TRACKED_SESSIONS", "SessionRecords"]

MAX_TRACKED_SESSIONS: Final = 10_000
"""Sessions remembered per kind of record (listings, log levels): the SDK's default session cap."""
_Record = TypeVar("_Record")


class SessionRecords(Generic[_Record]):
    """A bounded map from a session owner (`principal/session key`) to its latest record."""

    def __init__(self, limit: int = MAX_TRACKED_SESSIONS) -> None:
        self._limit = limit
        self._records: OrderedDict[str, _Record] = OrderedDict()

    def get(self, owner: str) -> _Record | None:
        """The session's latest record, or None when it has none (never written, or dropped as the oldest)."""
        return self._records.get(owner)

    def put(self, owner: str, record: _Record) -> None:
        """Remember the session's record as its newest, dropping the oldest session's past the limit."""
        self._records[owner] = record
        self._records.move_to_end(owner)
        if len(self._records) > self._limit:
            self._records.popitem(last=False)
