"""`SqliteTaskStore`: task records in the state store's SQLite file, one row per task, gone after its TTL."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Final

from gateway.errors import ConfigError
from gateway.state.serial_connection import SerialConnection, transaction
from gateway.tasks.records import Change, TaskRecord

__all__ = ["SqliteTaskStore"]

_BUSY_TIMEOUT_MS: Final = 5_000

# A table of its own beside the state store's: created when missing, whatever the file's schema version.
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS tasks (
    task_id    TEXT    PRIMARY KEY,
    body       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    expires_at REAL    NOT NULL
)
"""
_SELECT: Final = "SELECT body FROM tasks WHERE task_id = ? AND expires_at > ?"
_UPDATE: Final = "UPDATE tasks SET body = ?, version = ?, expires_at = ? WHERE task_id = ? AND version = ?"


def _open(path: Path) -> sqlite3.Connection:
    where = str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(where, check_same_thread=False, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(f"Cannot open {where!r} for tasks: {exc}. Choose another state path (--state).") from exc
    try:
        connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        # As the state store's connection: a commit waits for the WAL write, not for the disk (the file is in WAL
        # mode, which that store sets).
        connection.execute("PRAGMA synchronous = NORMAL")
        with transaction(connection):
            connection.execute(_SCHEMA)
    except sqlite3.Error as exc:
        connection.close()
        raise ConfigError(
            f"Cannot keep tasks in {where!r}: {exc}. If it is not a SQLite file written by adk-mcp-gateway, "
            "choose another state path (--state)."
        ) from exc
    return connection


class SqliteTaskStore:
    """Task records in a SQLite file (see `gateway.tasks.records.TaskStore`).

    Args:
        path: the state store's file.
    """

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        self._db = SerialConnection(lambda: _open(self._path), f"The task store on {str(self._path)!r} is closed.")

    @property
    def shared(self) -> bool:
        return True  # several processes may serve one file

    async def create(self, record: TaskRecord) -> None:
        stored = record.model_copy(update={"version": 1})

        def insert(connection: sqlite3.Connection) -> None:
            with transaction(connection):
                connection.execute("DELETE FROM tasks WHERE expires_at <= ?", (time.time(),))
                connection.execute(
                    "INSERT INTO tasks VALUES (?, ?, ?, ?)",
                    (stored.task_id, stored.model_dump_json(), stored.version, stored.expires_at),
                )

        await self._db.run(insert)

    async def get(self, task_id: str) -> TaskRecord | None:
        row = await self._db.run(lambda connection: connection.execute(_SELECT, (task_id, time.time())).fetchone())
        return None if row is None else TaskRecord.model_validate_json(row[0])

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        def apply(connection: sqlite3.Connection) -> TaskRecord | None:
            # Read and write in one transaction: its write lock keeps other connections out in between.
            with transaction(connection):
                row = connection.execute(_SELECT, (task_id, time.time())).fetchone()
                if row is None:
                    return None
                record = TaskRecord.model_validate_json(row[0])
                changed = change(record)
                if changed is None:
                    return record
                stored = changed.model_copy(update={"version": record.version + 1})
                connection.execute(
                    _UPDATE, (stored.model_dump_json(), stored.version, stored.expires_at, task_id, record.version)
                )
                return stored

        return await self._db.run(apply)

    async def aclose(self) -> None:
        await self._db.aclose()
