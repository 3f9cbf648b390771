"""`artifact_service_for`: the artifact store that lives where a state store lives."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

from gateway.artifacts.codec import DEFAULT_MAX_ARTIFACT_BYTES
from gateway.artifacts.sqlite_artifacts import SqliteArtifactService
from gateway.state import SqliteStateStore, StateStore
from gateway.tools.artifacts import ArtifactService, InMemoryArtifactService

if TYPE_CHECKING:
    from gateway.state.redis_store import RedisStateStore

__all__ = ["artifact_service_for"]


def artifact_service_for(state_store: StateStore, *, max_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES) -> ArtifactService:
    """Artifacts in the same SQLite file or Redis server as `state_store`; in memory beside any other store.

    The in-memory store keeps no size limit: it holds the values as given, of any kind.
    """
    if isinstance(state_store, SqliteStateStore):
        return SqliteArtifactService(state_store.path, max_bytes=max_bytes)
    # A Redis store's module is loaded whenever one exists; it is not imported here, since the redis extra may be
    # missing.
    redis_store = sys.modules.get("gateway.state.redis_store")
    if redis_store is not None and isinstance(state_store, redis_store.RedisStateStore):
        from gateway.artifacts.redis_artifacts import RedisArtifactService

        redis_state = cast("RedisStateStore", state_store)
        return RedisArtifactService(redis_state.url, prefix=redis_state.prefix, max_bytes=max_bytes)
    return InMemoryArtifactService()
