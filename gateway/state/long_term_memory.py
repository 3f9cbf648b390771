"""`SqliteMemoryService`: long-term memory (ADK's memory, not state) found by SQLite full-text search (FTS5).

The default memory of a server: its tables sit in the state's SQLite file, beside the state, so memory survives a
restart with it and one file holds both. A search matches the query's words (case and accents aside) against each
entry's text and ranks the matches by BM25, best first, at most `max_results` of them; the query is read as words,
never as FTS syntax, so any text a model sends is a valid query.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from gateway.errors import ConfigError
from gateway.state.memory_store import InMemoryStateStore
from gateway.state.serial_connection import SerialConnection, transaction
from gateway.state.sqlite_store import BUSY_TIMEOUT_MS, SqliteStateStore
from gateway.state.store import StateStore
from gateway.tools.memory_service import MemoryEntry, MemoryService, ScopedMemoryService, SearchMemoryResponse

__all__ = ["DEFAULT_MAX_RESULTS", "SqliteMemoryService", "default_memory_service"]

DEFAULT_MAX_RESULTS: Final = 10
"""As many memories as google-adk's in-memory service answers at most (a preloading agent puts all in its prompt)."""
_SQLITE_IN_MEMORY: Final = ":memory:"
_WORD = re.compile(r"\w+")

# One row per memory; the full-text index shares the row ids. The owner columns scope every query.
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS memory_entries (
    id         INTEGER PRIMARY KEY,
    app_name   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    memory_id  TEXT NOT NULL,
    entry      TEXT NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (app_name, user_id, memory_id)
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_text USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
"""

_FIND_ROW = "SELECT id FROM memory_entries WHERE app_name = ? AND user_id = ? AND memory_id = ?"
_INSERT = "INSERT INTO memory_entries (app_name, user_id, memory_id, entry, created_at) VALUES (?, ?, ?, ?, ?)"
_SEARCH = """
SELECT memory_entries.entry FROM memory_text JOIN memory_entries ON memory_entries.id = memory_text.rowid
WHERE memory_text MATCH ? AND memory_entries.app_name = ? AND memory_entries.user_id = ?
ORDER BY bm25(memory_text), memory_entries.id
LIMIT ?
"""


def default_memory_service(state_store: StateStore) -> MemoryService | None:
    """The memory a server keeps beside `state_store`: in its SQLite file, in memory beside an in-memory store;
    None beside any other store (a Redis server), which needs one named (the config's `memory`)."""
    if isinstance(state_store, SqliteStateStore):
        return SqliteMemoryService(state_store.path)
    if isinstance(state_store, InMemoryStateStore):
        return SqliteMemoryService(_SQLITE_IN_MEMORY)
    return None


def _match_query(query: str) -> str:
    """The words of `query` as an FTS5 query matching any of them (each quoted, so none is an operator)."""
    words = dict.fromkeys(word.lower() for word in _WORD.findall(query))
    return " OR ".join(f'"{word}"' for word in words)


class SqliteMemoryService(ScopedMemoryService):
    """A `MemoryService` in a SQLite file (`":memory:"`: in this process only), searched with FTS5.

    One connection serves every call, from worker threads, one call at a time; the file and its tables are created on
    first use. Several services, stores and processes may share the file.

    Args:
        path: the database file (a server's state file), or `":memory:"`.
        max_results: the most memories a search answers.
    """

    def __init__(self, path: str | os.PathLike[str], *, max_results: int = DEFAULT_MAX_RESULTS) -> None:
        self._path = os.fspath(path)
        self._max_results = max_results
        self._db = SerialConnection(lambda: _open(self._path), f"The memory service on {self._path!r} is closed.")

    def __repr__(self) -> str:
        return f"SqliteMemoryService({self._path!r})"

    async def _add(
        self, app_name: str, user_id: str, memories: Sequence[MemoryEntry], metadata: Mapping[str, object] | None
    ) -> None:
        # `metadata` is added to each entry's own.
        now = time.time()
        stamp = datetime.fromtimestamp(now, UTC).isoformat()
        rows: list[tuple[str, str, str]] = []
        for memory in memories:
            entry = memory.model_copy(
                update={
                    "id": memory.id or uuid.uuid4().hex,
                    "timestamp": memory.timestamp or stamp,
                    "custom_metadata": {**(metadata or {}), **memory.custom_metadata},
                }
            )
            rows.append((entry.id or "", entry.model_dump_json(exclude_none=True), entry.content.text()))

        def add(connection: sqlite3.Connection) -> None:
            with transaction(connection):
                for memory_id, entry, text in rows:
                    _delete(connection, app_name, user_id, memory_id)
                    cursor = connection.execute(_INSERT, (app_name, user_id, memory_id, entry, now))
                    connection.execute("INSERT INTO memory_text (rowid, text) VALUES (?, ?)", (cursor.lastrowid, text))

        await self._db.run(add)

    async def _search(self, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        # The memories sharing words with `query` (none for a query without words).
        match = _match_query(query)
        if not match:
            return SearchMemoryResponse()

        def search(connection: sqlite3.Connection) -> list[str]:
            rows = connection.execute(_SEARCH, (match, app_name, user_id, self._max_results)).fetchall()
            return [row[0] for row in rows]

        found = await self._db.run(search)
        return SearchMemoryResponse(memories=[MemoryEntry.model_validate(json.loads(text)) for text in found])

    async def _delete(self, app_name: str, user_id: str, memory_id: str | None) -> None:
        if not memory_id:
            return

        def delete(connection: sqlite3.Connection) -> None:
            with transaction(connection):
                _delete(connection, app_name, user_id, memory_id)

        await self._db.run(delete)

    async def aclose(self) -> None:
        """Close the connection (an in-memory database is gone with it); calling it again does nothing."""
        await self._db.aclose()


def _delete(connection: sqlite3.Connection, app_name: str, user_id: str, memory_id: str) -> None:
    row = connection.execute(_FIND_ROW, (app_name, user_id, memory_id)).fetchone()
    if row is not None:
        connection.execute("DELETE FROM memory_text WHERE rowid = ?", row)
        connection.execute("DELETE FROM memory_entries WHERE id = ?", row)


def _open(path: str) -> sqlite3.Connection:
    try:
        if path != _SQLITE_IN_MEMORY:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: no implicit transactions; `transaction` begins and ends them.
        connection = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        connection.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} COMMIT;")
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(
            f"Cannot keep memory in {path!r}: {exc}. It is the state's SQLite file unless the config's \"memory\" "
            "key names another; choose a writable SQLite path."
        ) from exc
    return connection
