"""`RedisStateStore`: state in Redis, shared by every gateway replica that points at the same server.

Layout, per app (all keys of one app carry one hash tag, so a Redis Cluster keeps them in one slot and the
scripts below may touch them together):

    {PREFIX:APP}:app                      hash   app: key -> JSON text
    {PREFIX:APP}:user:USER                hash   user: key -> JSON text
    {PREFIX:APP}:session:USER:SESSION     hash   session key -> JSON text
    {PREFIX:APP}:sessions                 zset   USER:SESSION -> time of the session's last write

Each name part is percent-encoded, so no app, user or session name can reach into another's keys.

Concurrency is the SQLite store's: `apply` checks what the call read and writes the delta in one Lua script,
which Redis runs atomically, so no replica ever writes over a value another replica changed after this call read
it (no read-then-write across a network round trip). Session expiry is the retention sweep's
(`forget_idle_sessions`), with the last-write times kept in the `sessions` sorted set.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, cast
from urllib.parse import quote

import anyio

from gateway.errors import ConfigError, StateConflictError
from gateway.state._json_store import JsonStateStore
from gateway.state.redis_client import redis_client
from gateway.state.store import StateScope
from gateway.tools.state import Scope

__all__ = ["DEFAULT_PREFIX", "RedisStateStore"]

DEFAULT_PREFIX: Final = "adk-mcp-gateway"

# KEYS: app hash, user hash, session hash, sessions zset.
# ARGV: now, the session's member in the zset, the number of checks, then per check (owner index 1-3, key,
# "1" + JSON text or "0" for absent), then per write (owner index, key, JSON text).
# Returns the keys whose value is not what the call read (nothing written then), else an empty list.
_APPLY: Final = """
local checks = tonumber(ARGV[3])
local changed = {}
local at = 4
for _ = 1, checks do
    local current = redis.call('HGET', KEYS[tonumber(ARGV[at])], ARGV[at + 1])
    local expected = ARGV[at + 2]
    if expected == '0' then
        if current then table.insert(changed, ARGV[at + 1]) end
    elseif (not current) or current ~= string.sub(expected, 2) then
        table.insert(changed, ARGV[at + 1])
    end
    at = at + 3
end
if #changed > 0 then return changed end
local session_written = false
while at <= #ARGV do
    local owner = tonumber(ARGV[at])
    redis.call('HSET', KEYS[owner], ARGV[at + 1], ARGV[at + 2])
    if owner == 3 then session_written = true end
    at = at + 3
end
if session_written then redis.call('ZADD', KEYS[4], ARGV[1], ARGV[2]) end
return changed
"""

# KEYS: sessions zset, then one session hash per candidate. ARGV: idle_since, then the candidates' members.
# Deletes each candidate still idle (a write since the caller looked makes it stay); returns how many.
_FORGET: Final = """
local forgotten = 0
for i = 2, #ARGV do
    local written = redis.call('ZSCORE', KEYS[1], ARGV[i])
    if written and tonumber(written) < tonumber(ARGV[1]) then
        redis.call('DEL', KEYS[i])
        redis.call('ZREM', KEYS[1], ARGV[i])
        forgotten = forgotten + 1
    end
end
return forgotten
"""

_OWNER_INDEX: Final = {"app": "1", "user": "2", "session": "3"}
_FORGET_BATCH: Final = 500


def _part(name: str) -> str:
    return quote(name, safe="")


class RedisStateStore(JsonStateStore):
    """A `StateStore` in Redis (redis-py's asyncio client; the server must run on the asyncio backend).

    Args:
        url: `redis://[[user]:password@]host[:port][/db]`, `rediss://…` (TLS) or `unix:///path/to/socket`.
        prefix: the first part of every key, to keep several deployments apart on one Redis.

    Raises:
        ConfigError: the URL is not a Redis URL.
        StateStoreUnavailableError: (entering the store, or any call) the server cannot be reached.
    """

    def __init__(self, url: str, *, prefix: str = DEFAULT_PREFIX) -> None:
        try:
            self._client, self._redis = redis_client(
                url,
                advice="Check that Redis is running and reachable at that URL (--state, $ADK_MCP_GATEWAY_STATE or "
                "the config's 'state').",
                closed_message=f"The state store on {_shown(url)!r} is closed.",
                decode_responses=True,
                health_check_interval=30,
            )
        except ValueError as exc:
            raise ConfigError(
                f"Cannot use {_shown(url)!r} as the Redis state store: {exc}. Give a URL such as "
                "redis://localhost:6379/0 (--state, $ADK_MCP_GATEWAY_STATE or the config's 'state')."
            ) from exc
        self._url = url
        self._prefix = prefix
        self._apply = self._client.register_script(_APPLY)
        self._forget = self._client.register_script(_FORGET)

    def __repr__(self) -> str:
        return f"RedisStateStore({_shown(self._url)!r})"

    @property
    def url(self) -> str:
        """The Redis URL (with its password: never log it)."""
        return self._url

    @property
    def prefix(self) -> str:
        """The first part of every key."""
        return self._prefix

    async def __aenter__(self) -> RedisStateStore:
        await self._command("connect to", self._client.ping)
        return self

    # --- keys ---------------------------------------------------------------------------------------------------

    def _base(self, app_name: str) -> str:
        return "{" + f"{_part(self._prefix)}:{_part(app_name)}" + "}"

    def _keys(self, scope: StateScope) -> list[str]:
        """The app hash, user hash, session hash and sessions zset of `scope`."""
        base = self._base(scope.app_name)
        return [
            f"{base}:app",
            f"{base}:user:{_part(scope.user_id)}",
            f"{base}:session:{_member(scope.user_id, scope.session_id)}",
            f"{base}:sessions",
        ]

    # --- the protocol -------------------------------------------------------------------------------------------

    async def load(self, scope: StateScope) -> dict[str, Any]:
        """The merged state of a call (see `StateStore.load`), read in one transaction."""
        app, user, session, _ = self._keys(scope)

        def read() -> Awaitable[Any]:
            pipe = self._client.pipeline(transaction=True)
            pipe.hgetall(session)
            pipe.hgetall(user)
            pipe.hgetall(app)
            return pipe.execute()

        rows = cast("list[dict[str, str]]", await self._command("read state from", read))
        merged: dict[str, str] = {}
        for owner in rows:
            merged.update(owner)
        return {key: json.loads(text) for key, text in merged.items()}

    async def _apply_encoded(
        self, scope: StateScope, writes: list[tuple[Scope, str, str]], checks: list[tuple[Scope, str, str | None]]
    ) -> None:
        """Check what the call read and write the delta in one atomic script (see `StateStore.apply`)."""
        args: list[str] = [repr(time.time()), _member(scope.user_id, scope.session_id), str(len(checks))]
        for scope_name, key, text in checks:
            args += [_OWNER_INDEX[scope_name], key, "0" if text is None else "1" + text]
        for scope_name, key, text in writes:
            args += [_OWNER_INDEX[scope_name], key, text]
        # Shielded: once sent, the script runs to its end on the server whatever happens here; the socket
        # timeout bounds the wait.
        changed: list[str] = []
        with anyio.CancelScope(shield=True):
            changed = cast(
                "list[str]", await self._command("write state to", lambda: self._apply(self._keys(scope), args))
            )
        if changed:
            raise StateConflictError(changed)

    async def clear_session(self, scope: StateScope) -> None:
        """Forget the session's own keys (see `StateStore.clear_session`)."""
        _, _, session, sessions = self._keys(scope)

        def clear() -> Awaitable[Any]:
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(session)
            pipe.zrem(sessions, _member(scope.user_id, scope.session_id))
            return pipe.execute()

        with anyio.CancelScope(shield=True):
            await self._command("clear a session in", clear)

    async def forget_idle_sessions(self, app_name: str, idle_since: float) -> int:
        """Forget the sessions not written since `idle_since` (see `StateStore.forget_idle_sessions`)."""
        base = self._base(app_name)
        sessions = f"{base}:sessions"
        idle = cast(
            "list[str]",
            await self._command(
                "find idle sessions in", lambda: self._client.zrangebyscore(sessions, "-inf", f"({idle_since!r}")
            ),
        )
        forgotten = 0
        for start in range(0, len(idle), _FORGET_BATCH):
            batch = idle[start : start + _FORGET_BATCH]
            keys = [sessions, *(f"{base}:session:{member}" for member in batch)]
            with anyio.CancelScope(shield=True):
                forget = functools.partial(self._forget, keys, [repr(idle_since), *batch])
                forgotten += int(await self._command("forget idle sessions in", forget))
        return forgotten

    async def aclose(self) -> None:
        """Close the connections; calling it again does nothing."""
        await self._redis.aclose()

    async def _command(self, what: str, command: Callable[[], Awaitable[Any]]) -> Any:
        """Run one Redis command, turning a lost or refused connection into an error that names the store."""
        return await self._redis.run(command, f"Cannot {what} in the Redis state store {_shown(self._url)!r}")


def _member(user_id: str, session_id: str) -> str:
    """A session's name within its app: user and session, each percent-encoded."""
    return f"{_part(user_id)}:{_part(session_id)}"


def _shown(url: str) -> str:
    """`url` without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    credentials, at, location = rest.rpartition("@")
    if not at:
        return url
    user = credentials.partition(":")[0]
    return f"{scheme}{sep}{user}:***@{location}" if ":" in credentials else f"{scheme}{sep}***@{location}"
