"""Where the state lives: a SQLite file (the default) or a Redis server, chosen by one string.

`state_location` picks it: `--state`, else `$ADK_MCP_GATEWAY_STATE`, else the config file's `state`, else the
default SQLite file (`default_state_path`). `open_state_store` opens it: `redis://`, `rediss://` and `unix://`
URLs name a Redis server (the `redis` extra); anything else is a SQLite file path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from gateway.state.sqlite_store import STATE_PATH_ENV, SqliteStateStore, default_state_path
from gateway.state.store import StateStore

__all__ = [
    "REDIS_SCHEMES",
    "SQLITE_IN_MEMORY",
    "is_redis",
    "network_filesystem",
    "open_state_store",
    "state_location",
]

_NETWORK_FILESYSTEMS: Final = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "fuse.sshfs", "afs", "ceph"})

REDIS_SCHEMES: Final = ("redis://", "rediss://", "unix://")
SQLITE_IN_MEMORY: Final = ":memory:"
"""The SQLite path of a database that lives in one process's memory."""


def state_location(explicit: str | os.PathLike[str] | None = None, configured: str | None = None) -> str:
    """The state location in force: `explicit` (`--state`), `$ADK_MCP_GATEWAY_STATE`, `configured`, the default."""
    if explicit:
        return os.fspath(explicit)
    from_env = os.environ.get(STATE_PATH_ENV)
    if from_env:
        return from_env
    if configured:
        return configured
    return str(default_state_path())


def is_redis(location: str) -> bool:
    """Whether `location` names a Redis server rather than a SQLite file."""
    return location.lower().startswith(REDIS_SCHEMES)


def network_filesystem(path: str | os.PathLike[str]) -> str | None:
    """The type of the network filesystem `path` lives on (where SQLite locks are unreliable), or None.

    Read from `/proc/mounts` (Linux); elsewhere, and for a path that does not exist yet, its nearest existing
    parent counts; None when nothing can be told.
    """
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            table = [line.split() for line in mounts]
    except OSError:
        return None
    target = str(Path(path).expanduser().resolve())
    best, kind = "", None
    for fields in table:
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind if kind in _NETWORK_FILESYSTEMS else None


def open_state_store(location: str | os.PathLike[str]) -> StateStore:
    """The store at `location` (not yet connected: the first call, or entering it, connects).

    Raises:
        MissingExtraError: a Redis URL without the `redis` extra installed.
        ConfigError: a Redis URL that redis-py cannot use.
    """
    where = os.fspath(location)
    if is_redis(where):
        from gateway.state.redis_store import RedisStateStore

        return RedisStateStore(where)
    return SqliteStateStore(os.path.expanduser(where))
