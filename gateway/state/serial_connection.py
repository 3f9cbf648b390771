"""`SerialConnection`: one SQLite connection serving async callers from worker threads, one call at a time.

The SQLite state store, the SQLite memory and the SQLite artifact store (`gateway.artifacts`) share it (and
`transaction`, the explicit transactions they write in): each opens its connection on first use, runs each operation
in a worker thread under one lock, and closes once.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import TypeVar

import anyio
import anyio.to_thread

__all__ = ["SerialConnection", "transaction"]

_T = TypeVar("_T")


class SerialConnection:
    """A connection `open_connection` makes on first use; operations run on it in worker threads, one at a time.

    Args:
        open_connection: opens and prepares the connection (in a worker thread); its errors reach the caller.
        closed_message: what a call after `aclose()` raises (a `RuntimeError`) with.
    """

    def __init__(self, open_connection: Callable[[], sqlite3.Connection], closed_message: str) -> None:
        self._open = open_connection
        self._closed_message = closed_message
        self._connection: sqlite3.Connection | None = None
        self._closed = False
        # The lock guards the connection; the limiter keeps waiting callers from each holding one of the
        # shared worker threads that synchronous tools run in.
        self._lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(1)

    async def run(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        """`operation(connection)` in a worker thread, the connection opened first if it is not yet."""

        def locked() -> _T:
            with self._lock:
                return operation(self._connect())

        # Not abandoned on cancellation: a transaction always runs to its end, and the lock is released.
        return await anyio.to_thread.run_sync(locked, limiter=self._limiter)

    async def aclose(self) -> None:
        """Close the connection; calls afterwards raise. Calling it again does nothing."""

        def close() -> None:
            with self._lock:
                self._closed = True
                if self._connection is not None:
                    self._connection.close()
                    self._connection = None

        await anyio.to_thread.run_sync(close, limiter=self._limiter)

    def _connect(self) -> sqlite3.Connection:
        if self._closed:
            raise RuntimeError(self._closed_message)
        if self._connection is None:
            self._connection = self._open()
        return self._connection


@contextmanager
def transaction(connection: sqlite3.Connection) -> Generator[None]:
    """`BEGIN IMMEDIATE` … `COMMIT`, or `ROLLBACK` on an error.

    IMMEDIATE takes the write lock at once, so a transaction never fails half way for want of it. The connection
    must have been opened with `isolation_level=None` (no implicit transactions).
    """
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        # SQLite rolls back by itself on some errors (a full disk); a second ROLLBACK would hide the first error.
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
