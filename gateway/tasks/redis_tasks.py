"""`RedisTaskStore`: task records in the state store's Redis, one key per task that expires with the task's TTL."""

from __future__ import annotations

import time
from typing import Final

from gateway.state.redis_client import redis_client
from gateway.tasks.records import Change, TaskRecord, next_version

__all__ = ["RedisTaskStore"]

_CHANGE_ATTEMPTS: Final = 50

# KEYS: the task's key. ARGV: the new body, the version the writer read (0: the key must not exist), milliseconds to
# keep it. Returns 1 when written, 0 when another writer came first.
_PUT: Final = """
local current = redis.call('GET', KEYS[1])
local expected = tonumber(ARGV[2])
if current then
    if cjson.decode(current)['version'] ~= expected then return 0 end
elseif expected ~= 0 then
    return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 1
"""


class RedisTaskStore:
    """Task records in Redis (see `gateway.tasks.records.TaskStore`); every replica on that Redis sees them.

    Args:
        url: the state store's Redis URL.
        prefix: the state store's key prefix.
    """

    def __init__(self, url: str, *, prefix: str) -> None:
        self._client, self._redis = redis_client(
            url,
            advice="Check that Redis is running and reachable at the state store's URL.",
            closed_message="The Redis task store is closed.",
            decode_responses=True,
        )
        self._prefix = prefix
        self._put = self._client.register_script(_PUT)

    @property
    def shared(self) -> bool:
        return True

    def _key(self, task_id: str) -> str:
        return f"{self._prefix}:task:{task_id}"

    async def _write(self, record: TaskRecord, expected: int) -> bool:
        keep_ms = max(1, int((record.expires_at - time.time()) * 1000))
        key = self._key(record.task_id)
        written = await self._redis.run(
            lambda: self._put(keys=[key], args=[record.model_dump_json(), expected, keep_ms]), "Cannot store a task"
        )
        return bool(written)

    async def create(self, record: TaskRecord) -> None:
        if not await self._write(record.model_copy(update={"version": 1}), 0):
            raise RuntimeError(f"Task {record.task_id} exists already.")

    async def get(self, task_id: str) -> TaskRecord | None:
        key = self._key(task_id)
        body = await self._redis.run(lambda: self._client.get(key), "Cannot read a task")
        if body is None:
            return None
        record = TaskRecord.model_validate_json(body)
        # Redis drops the key at the TTL's end, to the millisecond but lazily: a read in between is answered here.
        return None if record.expires_at <= time.time() else record

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        for _ in range(_CHANGE_ATTEMPTS):
            record = await self.get(task_id)
            if record is None:
                return None
            stored = next_version(record, change)
            if stored is None:
                return record
            if await self._write(stored, record.version):
                return stored
        raise RuntimeError(f"Task {task_id} changed {_CHANGE_ATTEMPTS} times while one change was applied to it.")

    async def aclose(self) -> None:
        await self._redis.aclose()
