"""The Redis store beyond the store protocol's suite (`test_stores.py`): several replicas, and Redis going away."""

from __future__ import annotations

import socket
import uuid

import anyio
import pytest

from gateway.errors import ConfigError, StateConflictError, StateStoreUnavailableError
from gateway.state import StateScope
from gateway.state.redis_store import RedisStateStore
from gateway.tools.state import State

ALICE = StateScope("app", "alice", "session-1")
BOB = StateScope("app", "bob", "session-9")


@pytest.fixture
def prefix() -> str:
    return f"test-{uuid.uuid4().hex}"


@pytest.mark.anyio
async def test_state_written_through_one_replica_is_read_through_another_and_outlives_it(
    redis_url: str, prefix: str
) -> None:
    async with RedisStateStore(redis_url, prefix=prefix) as first:
        await first.apply(ALICE, {"cart": ["apple"], "user:name": "Alice", "app:motd": "hi", "temp:x": 1})
    async with RedisStateStore(redis_url, prefix=prefix) as second:
        assert await second.load(ALICE) == {"cart": ["apple"], "user:name": "Alice", "app:motd": "hi"}


@pytest.mark.anyio
async def test_replicas_incrementing_one_shared_key_lose_no_update(redis_url: str, prefix: str) -> None:
    replicas = [RedisStateStore(redis_url, prefix=prefix) for _ in range(3)]
    conflicts = 0

    async def increment(store: RedisStateStore, scope: StateScope) -> None:
        nonlocal conflicts
        while True:
            state = State(await store.load(scope))
            await anyio.lowlevel.checkpoint()  # let the others read the same value first
            state["app:count"] = (state.get("app:count") or 0) + 1
            try:
                await store.apply(scope, state.persistent_delta(), expected=state.reads())
                return
            except StateConflictError:
                conflicts += 1

    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for index in range(60):
                    tg.start_soon(increment, replicas[index % 3], ALICE if index % 2 else BOB)
        assert (await replicas[0].load(ALICE))["app:count"] == 60
        assert conflicts > 0  # the race really happened, and was refused rather than lost
    finally:
        for store in replicas:
            await store.aclose()


@pytest.mark.anyio
async def test_a_conflict_across_replicas_writes_nothing_of_the_delta(redis_url: str, prefix: str) -> None:
    async with RedisStateStore(redis_url, prefix=prefix) as first, RedisStateStore(redis_url, prefix=prefix) as second:
        await first.apply(ALICE, {"user:count": 1})
        stale = State(await second.load(ALICE))
        await first.apply(ALICE, {"user:count": 2})
        stale["user:count"] += 1
        stale["note"] = "must not land"
        with pytest.raises(StateConflictError) as refused:
            await second.apply(ALICE, stale.persistent_delta(), expected=stale.reads())
        assert refused.value.keys == ["user:count"]
        assert await first.load(ALICE) == {"user:count": 2}


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.anyio
async def test_an_unreachable_redis_is_an_error_naming_the_url_without_its_password() -> None:
    url = f"redis://app:s3cret-pw@127.0.0.1:{_closed_port()}/0"
    with pytest.raises(StateStoreUnavailableError) as caught:
        async with RedisStateStore(url):
            pass
    message = str(caught.value)
    assert "127.0.0.1" in message
    assert "s3cret-pw" not in message
    assert "app:***@" in message


@pytest.mark.anyio
async def test_a_call_while_redis_is_down_fails_with_the_same_error() -> None:
    store = RedisStateStore(f"redis://127.0.0.1:{_closed_port()}/0")
    try:
        with pytest.raises(StateStoreUnavailableError, match="Redis"):
            await store.apply(ALICE, {"count": 1})
    finally:
        await store.aclose()


def test_a_url_that_is_not_a_redis_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="redis://"):
        RedisStateStore("http://localhost:6379")


@pytest.mark.anyio
async def test_a_closed_store_refuses_calls_and_closes_again_quietly(redis_url: str, prefix: str) -> None:
    store = RedisStateStore(redis_url, prefix=prefix)
    await store.apply(ALICE, {"count": 1})
    await store.aclose()
    await store.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await store.load(ALICE)
