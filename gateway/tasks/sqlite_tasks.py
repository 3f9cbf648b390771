"""`SqliteTaskStore`: task records in the state store's SQLite file, one row per task, gone after its TTL."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Final

from gateway.state.serial_connection import SerialConnection, transaction
from gateway.state.sqlite_store import open_beside_state
from gateway.tasks.records import Change, TaskRecord, next_version

__all__ = ["SqliteTaskStore"]


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


class SqliteTaskStore:
    """Task records in a SQLite file (see `gateway.tasks.records.TaskStore`).

    Args:
        path: the state store's file.
    """

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        # synchronous = NORMAL, as the state store's connection: a commit waits for the WAL write, not for the disk
        # (the file is in WAL mode, which that store sets).
        self._db = SerialConnection(
            lambda: open_beside_state(self._path, _SCHEMA, "tasks", "synchronous = NORMAL"),
            f"The task store on {str(self._path)!r} is closed.",
        )

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
                stored = next_version(record, change)
                if stored is None:
                    return record
                connection.execute(
                    _UPDATE, (stored.model_dump_json(), stored.version, stored.expires_at, task_id, record.version)
                )
                return stored

        return await self._db.run(apply)

    async def aclose(self) -> None:
        await self._db.aclose()
