"""`task_store_for`: the task store that lives where a state store lives."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

from gateway.state import SqliteStateStore, StateStore
from gateway.tasks.records import InMemoryTaskStore, TaskStore
from gateway.tasks.sqlite_tasks import SqliteTaskStore

if TYPE_CHECKING:
    from gateway.state.redis_store import RedisStateStore

__all__ = ["task_store_for"]


def task_store_for(state_store: StateStore) -> TaskStore:
    """Tasks in the same SQLite file or Redis server as `state_store`; in memory beside any other store."""
    if isinstance(state_store, SqliteStateStore):
        return SqliteTaskStore(state_store.path)
    # The Redis store's module is loaded whenever one exists; the redis extra may be missing otherwise.
    redis_store = sys.modules.get("gateway.state.redis_store")
    if redis_store is not None and isinstance(state_store, redis_store.RedisStateStore):
        from gateway.tasks.redis_tasks import RedisTaskStore

        redis_state = cast("RedisStateStore", state_store)
        return RedisTaskStore(redis_state.url, prefix=redis_state.prefix)
    return InMemoryTaskStore()
