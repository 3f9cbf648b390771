"""Every task store keeps a record until its TTL ends and applies each change to the newest record."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from gateway.tasks.records import InMemoryTaskStore, TaskOwner, TaskRecord, TaskStore
from gateway.tasks.sqlite_tasks import SqliteTaskStore

pytestmark = pytest.mark.anyio


def _record(*, age: float = 0.0, ttl_ms: int = 60_000) -> TaskRecord:
    created = time.time() - age
    return TaskRecord(
        task_id=uuid.uuid4().hex,
        app_name="app",
        principal="alice",
        session=None,
        tool="job",
        created_at=created,
        updated_at=created,
        ttl_ms=ttl_ms,
        poll_interval_ms=500,
    )


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    made: TaskStore
    if request.param == "memory":
        made = InMemoryTaskStore()
    elif request.param == "sqlite":
        made = SqliteTaskStore(tmp_path / "state.db")
    else:
        from gateway.tasks.redis_tasks import RedisTaskStore

        made = RedisTaskStore(request.getfixturevalue("redis_url"), prefix=f"records-{uuid.uuid4().hex[:8]}")
    try:
        yield made
    finally:
        await made.aclose()


async def test_a_record_is_read_back_until_its_ttl_ends(store: TaskStore) -> None:
    living, expired = _record(), _record(age=2.0, ttl_ms=1_000)
    await store.create(living)
    await store.create(expired)

    found = await store.get(living.task_id)
    assert found is not None
    assert found.model_copy(update={"version": 0}) == living
    assert await store.get(expired.task_id) is None
    assert await store.change(expired.task_id, lambda r: r.changed(status="cancelled")) is None


async def test_concurrent_changes_each_apply_to_the_newest_record(store: TaskStore) -> None:
    record = _record()
    await store.create(record)

    async def answer(key: str) -> None:
        await store.change(record.task_id, lambda r: r.changed(responses={**r.responses, key: {"action": "accept"}}))

    async with anyio.create_task_group() as group:
        for index in range(10):
            group.start_soon(answer, f"k{index}")

    stored = await store.get(record.task_id)
    assert stored is not None
    assert sorted(stored.responses) == sorted(f"k{index}" for index in range(10))
    assert stored.version == 11


def test_a_task_admits_its_principal_and_only_its_session_when_it_has_one() -> None:
    anywhere, one_session = TaskOwner("alice", None), TaskOwner("alice", "alice/meta:s1")

    assert anywhere.admits("alice", "alice/meta:s2")
    assert not anywhere.admits("bob", "bob/meta:s1")
    assert one_session.admits("alice", "alice/meta:s1")
    assert not one_session.admits("alice", "alice/meta:s2")
