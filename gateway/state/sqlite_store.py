"""`SqliteStateStore`: state in an embedded SQLite file, the default store; it survives a restart."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from gateway.errors import ConfigError, StateConflictError
from gateway.state._json_store import JsonStateStore
from gateway.state.serial_connection import SerialConnection, transaction
from gateway.state.store import StateScope
from gateway.tools.state import Scope

__all__ = ["SqliteStateStore", "default_state_path", "open_beside_state"]

STATE_PATH_ENV = "ADK_MCP_GATEWAY_STATE"
SCHEMA_VERSION = 1
# How long a write waits for another process holding the database's write lock.
BUSY_TIMEOUT_MS = 5_000

# One row per key and owner. A row's owner is the app, the app and user, or the app, user and session;
# the owner columns a scope does not use hold ''. Keys keep their prefix, so a load returns them as written.
_SCHEMA = """
CREATE TABLE state (
    app_name   TEXT NOT NULL,
    scope      TEXT NOT NULL CHECK (scope IN ('app', 'user', 'session')),
    user_id    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (app_name, scope, user_id, session_id, key)
) WITHOUT ROWID
"""

_LOAD = """
SELECT key, value FROM state
WHERE app_name = ?
  AND (scope = 'app'
       OR (scope = 'user' AND user_id = ?)
       OR (scope = 'session' AND user_id = ? AND session_id = ?))
"""

_UPSERT = """
INSERT INTO state (app_name, scope, user_id, session_id, key, value, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (app_name, scope, user_id, session_id, key)
DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
"""

_VALUE = """
SELECT value FROM state WHERE app_name = ? AND scope = ? AND user_id = ? AND session_id = ? AND key = ?
"""

_IDLE_SESSIONS = """
SELECT user_id, session_id FROM state
WHERE app_name = ? AND scope = 'session'
GROUP BY user_id, session_id
HAVING max(updated_at) < ?
"""

_CLEAR_SESSION = "DELETE FROM state WHERE app_name = ? AND scope = 'session' AND user_id = ? AND session_id = ?"


def default_state_path() -> Path:
    """Where the gateway keeps its state unless told otherwise.

    `$ADK_MCP_GATEWAY_STATE` if set; else `$XDG_STATE_HOME/adk-mcp-gateway/state.db`; else
    `~/.local/state/adk-mcp-gateway/state.db`.
    """
    explicit = os.environ.get(STATE_PATH_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg_state = os.environ.get("XDG_STATE_HOME")
    # The XDG spec says to ignore a relative path here.
    base = Path(xdg_state) if xdg_state and os.path.isabs(xdg_state) else Path.home() / ".local" / "state"
    return base / "adk-mcp-gateway" / "state.db"


class SqliteStateStore(JsonStateStore):
    """A `StateStore` in one SQLite file, written ahead (WAL) so reads do not wait for writes.

    The file, its parent directory and the schema are created on first use (entering the store as an async
    context manager opens it at once, so a bad path fails there). Each delta is one transaction. One
    connection serves every call, from worker threads, one call at a time.

    Args:
        path: The database file. Several stores, and several processes, may share one file.

    Raises:
        ConfigError: (on first use) The file cannot be opened or created, is not a SQLite database, or holds a
            newer schema than this version knows.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self._db = SerialConnection(lambda: _open(self._path), f"The state store on {str(self._path)!r} is closed.")

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    def __repr__(self) -> str:
        return f"SqliteStateStore({str(self._path)!r})"

    async def __aenter__(self) -> SqliteStateStore:
        await self._db.run(lambda connection: None)
        return self

    async def load(self, scope: StateScope) -> dict[str, Any]:
        """The merged state of a call (see `StateStore.load`)."""

        def load(connection: sqlite3.Connection) -> list[tuple[str, str]]:
            params = (scope.app_name, scope.user_id, scope.user_id, scope.session_id)
            return connection.execute(_LOAD, params).fetchall()

        rows = await self._db.run(load)
        return {key: json.loads(text) for key, text in rows}

    async def _apply_encoded(
        self, scope: StateScope, writes: list[tuple[Scope, str, str]], checks: list[tuple[Scope, str, str | None]]
    ) -> None:
        """Write the delta in one transaction if what the call read holds (see `StateStore.apply`).

        The check and the write share the transaction, whose write lock also shuts out other processes on the file.
        """
        now = time.time()
        rows = [(*_owner_columns(scope, scope_name), key, text, now) for scope_name, key, text in writes]
        owned_checks = [(_owner_columns(scope, scope_name), key, text) for scope_name, key, text in checks]

        def apply(connection: sqlite3.Connection) -> None:
            with transaction(connection):
                changed: list[str] = []
                for owner, key, text in owned_checks:
                    row = connection.execute(_VALUE, (*owner, key)).fetchone()
                    if (None if row is None else row[0]) != text:
                        changed.append(key)
                if changed:
                    raise StateConflictError(changed)
                connection.executemany(_UPSERT, rows)

        await self._db.run(apply)

    async def clear_session(self, scope: StateScope) -> None:
        """Forget the session's own keys (see `StateStore.clear_session`)."""

        def clear(connection: sqlite3.Connection) -> None:
            with transaction(connection):
                connection.execute(_CLEAR_SESSION, (scope.app_name, scope.user_id, scope.session_id))

        await self._db.run(clear)

    async def forget_idle_sessions(self, app_name: str, idle_since: float) -> int:
        """Forget the sessions not written since `idle_since` (see `StateStore.forget_idle_sessions`)."""

        def forget(connection: sqlite3.Connection) -> int:
            with transaction(connection):
                idle = connection.execute(_IDLE_SESSIONS, (app_name, idle_since)).fetchall()
                connection.executemany(_CLEAR_SESSION, [(app_name, *owner) for owner in idle])
                return len(idle)

        return await self._db.run(forget)

    async def aclose(self) -> None:
        """Close the connection; the store cannot be used afterwards. Calling it again does nothing."""
        await self._db.aclose()


def _owner_columns(scope: StateScope, scope_name: str) -> tuple[str, str, str, str]:
    """`(app_name, scope, user_id, session_id)` of the row that holds a key of `scope_name`."""
    return (
        scope.app_name,
        scope_name,
        "" if scope_name == "app" else scope.user_id,
        scope.session_id if scope_name == "session" else "",
    )


def _open(path: Path) -> sqlite3.Connection:
    where = str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"Cannot create the directory for the state database {where!r}: {exc}. "
            f"Choose another path (${STATE_PATH_ENV}) or fix the permissions."
        ) from exc
    try:
        # isolation_level=None: no implicit transactions; `transaction` begins and ends them explicitly.
        connection = sqlite3.connect(where, check_same_thread=False, isolation_level=None)
    except sqlite3.Error as exc:
        raise ConfigError(
            f"Cannot open the state database {where!r}: {exc}. Choose another path (${STATE_PATH_ENV})."
        ) from exc
    try:
        version = _prepared(connection)
    except sqlite3.Error as exc:
        connection.close()
        raise ConfigError(
            f"Cannot use {where!r} as the state database: {exc}. If it is not a SQLite file written by "
            f"adk-mcp-gateway, choose another path (${STATE_PATH_ENV}); if it is damaged, move it aside."
        ) from exc
    if version > SCHEMA_VERSION:
        connection.close()
        raise ConfigError(
            f"The state database {where!r} has schema version {version}, newer than this adk-mcp-gateway "
            f"knows ({SCHEMA_VERSION}). Upgrade adk-mcp-gateway or choose another path (${STATE_PATH_ENV})."
        )
    return connection


def _prepared(connection: sqlite3.Connection) -> int:
    """`_prepare`, tried again while the file is locked by another connection setting it up (bounded).

    Two connections switching a new file to WAL at once deadlock on its lock; SQLite then answers one of them
    "database is locked" at once instead of waiting (the busy timeout does not apply), so the loser waits a moment
    and asks again. Runs in a worker thread, like every use of the connection.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause = 0.005
    while True:
        try:
            return _prepare(connection)
        except sqlite3.OperationalError as exc:
            if connection.in_transaction:
                connection.rollback()
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)  # in the worker thread, like the rest of the set-up
        pause = min(pause * 2, 0.1)


def _prepare(connection: sqlite3.Connection) -> int:
    """Set the connection up and create the schema if the file has none; returns the file's schema version."""
    connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # Reading the header here is what rejects a file that is not a database.
    connection.execute("PRAGMA journal_mode = WAL").fetchone()
    connection.execute("PRAGMA synchronous = NORMAL")
    with transaction(connection):
        (version,) = connection.execute("PRAGMA user_version").fetchone()
        if version == 0:
            connection.execute(_SCHEMA)
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            version = SCHEMA_VERSION
    return int(version)


def open_beside_state(path: Path, schema: str, what: str, *pragmas: str) -> sqlite3.Connection:
    """A connection to the state store's file `path` whose own tables (`schema`) are created when missing.

    The journal mode is the state store's to set (switching it races with that store's connection); `pragmas` are
    this connection's own settings.

    Raises:
        ConfigError: the file cannot be opened or holds no such tables (the message names `what` is kept there).
    """
    where = str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: `transaction` begins and ends transactions explicitly.
        connection = sqlite3.connect(where, check_same_thread=False, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(f"Cannot open {where!r} for {what}: {exc}. Choose another state path (--state).") from exc
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        for pragma in pragmas:
            connection.execute(f"PRAGMA {pragma}")
        with transaction(connection):
            connection.execute(schema)
    except sqlite3.Error as exc:
        connection.close()
        raise ConfigError(
            f"Cannot keep {what} in {where!r}: {exc}. If it is not a SQLite file written by adk-mcp-gateway, "
            "choose another state path (--state)."
        ) from exc
    return connection
