"""`RedisArtifactService`: artifacts in the state store's Redis, shared by every replica.

Layout, per app (one hash tag per app, as the state store's keys, so a Redis Cluster keeps them in one slot):

    {PREFIX:APP}:artifact:USER:SESSION:FILE    hash   next -> the next version; d:N -> bytes; m:N -> JSON
    {PREFIX:APP}:artifacts:USER:SESSION        set    the filenames of that owner
    {PREFIX:APP}:artifact-sessions             zset   USER SESSION -> time of the session's last save

A user's `user:` files have an empty SESSION. Each name part is percent-encoded. A save is one Lua script, so two
replicas never hand out the same version.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Final, cast
from urllib.parse import quote, unquote

import anyio

from gateway.artifacts._stored import Owner, StoredArtifactService, StoredRow
from gateway.artifacts.codec import DEFAULT_MAX_ARTIFACT_BYTES, EncodedArtifact
from gateway.errors import ConfigError
from gateway.state.redis_client import redis_client

__all__ = ["RedisArtifactService"]

# KEYS: the file hash, the owner's name set, the app's session zset. ARGV: data, meta JSON, filename, now, the
# session's member ('' for a user's file). Returns the new version.
_PUT: Final = """
local version = redis.call('HINCRBY', KEYS[1], 'next', 1) - 1
redis.call('HSET', KEYS[1], 'd:' .. version, ARGV[1], 'm:' .. version, ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5]) end
return version
"""

# KEYS: the file hash. ARGV: the version, or '' for the latest. Returns {version, data, meta} or nil.
_GET: Final = """
local version = ARGV[1]
if version == '' then
    local next = redis.call('HGET', KEYS[1], 'next')
    if not next then return nil end
    version = tostring(tonumber(next) - 1)
end
local found = redis.call('HMGET', KEYS[1], 'd:' .. version, 'm:' .. version)
if not found[1] then return nil end
return {version, found[1], found[2]}
"""


def _part(name: str) -> str:
    return quote(name, safe="")


class RedisArtifactService(StoredArtifactService):
    """Artifacts in Redis (redis-py's asyncio client; the server must run on the asyncio backend).

    Args:
        url: the state store's Redis URL.
        prefix: the first part of every key (the state store's).
        max_bytes: the largest artifact kept.

    Raises:
        ConfigError: the URL is not a Redis URL.
        StateStoreUnavailableError: (any call) the server cannot be reached.
    """

    def __init__(self, url: str, *, prefix: str, max_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES) -> None:
        super().__init__(max_bytes=max_bytes)
        try:
            self._client, self._redis = redis_client(
                url, advice="Check that Redis is running.", closed_message="The Redis artifact store is closed."
            )
        except ValueError as exc:
            raise ConfigError(f"Cannot keep artifacts in Redis at that URL: {exc}.") from exc
        self._prefix = prefix
        self._put_script = self._client.register_script(_PUT)
        self._get_script = self._client.register_script(_GET)

    def _owner_key(self, kind: str, owner: Owner) -> str:
        base = "{" + f"{_part(self._prefix)}:{_part(owner.app_name)}" + "}"
        return f"{base}:{kind}:{_part(owner.user_id)}:{_part(owner.session_id)}"

    def _file(self, owner: Owner, filename: str) -> str:
        return f"{self._owner_key('artifact', owner)}:{_part(filename)}"

    def _names_key(self, owner: Owner) -> str:
        return self._owner_key("artifacts", owner)

    def _sessions_key(self, app_name: str) -> str:
        return "{" + f"{_part(self._prefix)}:{_part(app_name)}" + "}:artifact-sessions"

    async def _put(self, owner: Owner, filename: str, encoded: EncodedArtifact, metadata: str, now: float) -> int:
        meta = json.dumps({"kind": encoded.kind, "mime": encoded.mime_type, "meta": metadata, "at": now})
        keys = [self._file(owner, filename), self._names_key(owner), self._sessions_key(owner.app_name)]
        member = f"{_part(owner.user_id)} {_part(owner.session_id)}" if owner.session_id else ""
        args = [encoded.data, meta, filename, repr(now), member]
        version: Any = None
        with anyio.CancelScope(shield=True):
            version = await self._command(lambda: self._put_script(keys, args))
        return int(version)

    async def _get(self, owner: Owner, filename: str, version: int | None) -> StoredRow | None:
        args = ["" if version is None else str(version)]
        found = await self._command(lambda: self._get_script([self._file(owner, filename)], args))
        if not found:
            return None
        number, data, meta_text = cast("list[bytes]", found)
        meta = json.loads(meta_text)
        return StoredRow(int(number), meta["kind"], meta["mime"], bytes(data), meta["meta"], float(meta["at"]))

    async def _names(self, owner: Owner) -> list[str]:
        members = cast("set[bytes]", await self._command(lambda: self._client.smembers(self._names_key(owner))))
        return [member.decode() for member in members]

    async def _versions(self, owner: Owner, filename: str) -> list[int]:
        following = await self._command(lambda: self._client.hget(self._file(owner, filename), "next"))
        return list(range(int(following))) if following is not None else []

    async def _delete(self, owner: Owner, filename: str) -> None:
        def delete() -> Awaitable[Any]:
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(self._file(owner, filename))
            pipe.srem(self._names_key(owner), filename)
            return pipe.execute()

        with anyio.CancelScope(shield=True):
            await self._command(delete)

    async def _delete_owner(self, owner: Owner) -> None:
        for name in await self._names(owner):
            await self._delete(owner, name)
        with anyio.CancelScope(shield=True):
            await self._command(lambda: self._client.delete(self._names_key(owner)))

    async def _forget_idle(self, app_name: str, idle_since: float) -> int:
        sessions = self._sessions_key(app_name)
        idle = cast(
            "list[bytes]",
            await self._command(lambda: self._client.zrangebyscore(sessions, "-inf", f"({idle_since!r}")),
        )
        for member in idle:
            user, _, session = member.decode().partition(" ")
            await self._delete_owner(Owner(app_name, unquote(user), unquote(session)))
            with anyio.CancelScope(shield=True):
                await self._command(lambda: self._client.zrem(sessions, member))  # noqa: B023 - awaited at once
        return len(idle)

    async def aclose(self) -> None:
        """Close the connections; calling it again does nothing."""
        await self._redis.aclose()

    async def _command(self, command: Callable[[], Awaitable[Any]]) -> Any:
        return await self._redis.run(command, "Cannot reach the Redis artifact store (the state store's server)")
