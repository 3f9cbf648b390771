"""`SqliteArtifactService`: artifacts in the state store's SQLite file, one row per version of a file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from gateway.artifacts._stored import Owner, StoredArtifactService, StoredRow
from gateway.artifacts.codec import DEFAULT_MAX_ARTIFACT_BYTES, EncodedArtifact
from gateway.state.serial_connection import SerialConnection, transaction
from gateway.state.sqlite_store import open_beside_state

__all__ = ["SqliteArtifactService"]

# How long a write waits for another connection (the state store's, another process's) holding the write lock.

# A table of its own beside the state store's: created when missing, whatever the file's schema version.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS artifacts (
    app_name        TEXT    NOT NULL,
    user_id         TEXT    NOT NULL,
    session_id      TEXT    NOT NULL,
    filename        TEXT    NOT NULL,
    version         INTEGER NOT NULL,
    kind            TEXT    NOT NULL,
    mime_type       TEXT    NOT NULL,
    data            BLOB    NOT NULL,
    custom_metadata TEXT    NOT NULL,
    created_at      REAL    NOT NULL,
    PRIMARY KEY (app_name, user_id, session_id, filename, version)
) WITHOUT ROWID
"""
_OWNER = "app_name = ? AND user_id = ? AND session_id = ?"
_NEXT = f"SELECT coalesce(max(version) + 1, 0) FROM artifacts WHERE {_OWNER} AND filename = ?"
_INSERT = "INSERT INTO artifacts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_COLUMNS = "version, kind, mime_type, data, custom_metadata, created_at"
_LATEST = f"SELECT {_COLUMNS} FROM artifacts WHERE {_OWNER} AND filename = ? ORDER BY version DESC LIMIT 1"
_VERSION = f"SELECT {_COLUMNS} FROM artifacts WHERE {_OWNER} AND filename = ? AND version = ?"
_NAMES = f"SELECT DISTINCT filename FROM artifacts WHERE {_OWNER}"
_VERSIONS = f"SELECT version FROM artifacts WHERE {_OWNER} AND filename = ? ORDER BY version"
_DELETE = f"DELETE FROM artifacts WHERE {_OWNER} AND filename = ?"
_DELETE_OWNER = f"DELETE FROM artifacts WHERE {_OWNER}"
_IDLE = """
SELECT user_id, session_id FROM artifacts WHERE app_name = ? AND session_id != ''
GROUP BY user_id, session_id HAVING max(created_at) < ?
"""


class SqliteArtifactService(StoredArtifactService):
    """Artifacts in a SQLite file (the state store's by default), surviving a restart.

    One connection of its own serves every call, from worker threads, one call at a time; saving a version is one
    transaction, so two processes on one file never hand out the same version.

    Args:
        path: the database file.
        max_bytes: the largest artifact kept.

    Raises:
        ConfigError: (on first use) the file cannot be opened or created, or is not a SQLite database.
    """

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES) -> None:
        super().__init__(max_bytes=max_bytes)
        self._path = Path(path)
        self._db = SerialConnection(
            lambda: open_beside_state(self._path, _SCHEMA, "artifacts"),
            f"The artifact store on {str(self._path)!r} is closed.",
        )

    def __repr__(self) -> str:
        return f"SqliteArtifactService({str(self._path)!r})"

    async def _put(self, owner: Owner, filename: str, encoded: EncodedArtifact, metadata: str, now: float) -> int:
        def put(connection: sqlite3.Connection) -> int:
            with transaction(connection):
                (version,) = connection.execute(_NEXT, (*_owner(owner), filename)).fetchone()
                row = (*_owner(owner), filename, version, encoded.kind, encoded.mime_type, encoded.data, metadata, now)
                connection.execute(_INSERT, row)
                return int(version)

        return await self._db.run(put)

    async def _get(self, owner: Owner, filename: str, version: int | None) -> StoredRow | None:
        def get(connection: sqlite3.Connection) -> tuple[int, str, str, bytes, str, float] | None:
            if version is None:
                return connection.execute(_LATEST, (*_owner(owner), filename)).fetchone()
            return connection.execute(_VERSION, (*_owner(owner), filename, version)).fetchone()

        row = await self._db.run(get)
        return None if row is None else StoredRow(*row)

    async def _names(self, owner: Owner) -> list[str]:
        rows = await self._db.run(lambda connection: connection.execute(_NAMES, _owner(owner)).fetchall())
        return [name for (name,) in rows]

    async def _versions(self, owner: Owner, filename: str) -> list[int]:
        rows = await self._db.run(
            lambda connection: connection.execute(_VERSIONS, (*_owner(owner), filename)).fetchall()
        )
        return [version for (version,) in rows]

    async def _delete(self, owner: Owner, filename: str) -> None:
        def delete(connection: sqlite3.Connection) -> None:
            with transaction(connection):
                connection.execute(_DELETE, (*_owner(owner), filename))

        await self._db.run(delete)

    async def _delete_owner(self, owner: Owner) -> None:
        def delete(connection: sqlite3.Connection) -> None:
            with transaction(connection):
                connection.execute(_DELETE_OWNER, _owner(owner))

        await self._db.run(delete)

    async def _forget_idle(self, app_name: str, idle_since: float) -> int:
        def forget(connection: sqlite3.Connection) -> int:
            with transaction(connection):
                idle = connection.execute(_IDLE, (app_name, idle_since)).fetchall()
                connection.executemany(_DELETE_OWNER, [(app_name, *owner) for owner in idle])
                return len(idle)

        return await self._db.run(forget)

    async def aclose(self) -> None:
        """Close the connection; calling it again does nothing."""
        await self._db.aclose()


def _owner(owner: Owner) -> tuple[str, str, str]:
    return (owner.app_name, owner.user_id, owner.session_id)
