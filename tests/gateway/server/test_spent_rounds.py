"""A round of a modern call is accepted once by every process on one state store (SQLite file, Redis)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import MCPError, types

from gateway.server.spent_rounds import SpentRounds
from gateway.state import InMemoryStateStore, SqliteStateStore, StateStore
from gateway.state.redis_store import RedisStateStore

pytestmark = pytest.mark.anyio

TTL = 600.0
PROCESSES = 3
"""Stores opened on one backend, each standing for a process (its own connection)."""
SENDS = 8
"""Requests carrying the same round, spread over the stores, all at once."""


@asynccontextmanager
async def stores(kind: str, tmp_path: Path, redis_url: str | None) -> AsyncIterator[list[StateStore]]:
    async with AsyncExitStack() as stack:
        if kind == "memory":
            yield [await stack.enter_async_context(InMemoryStateStore())]
            return
        if kind == "sqlite":
            yield [await stack.enter_async_context(SqliteStateStore(tmp_path / "state.db")) for _ in range(PROCESSES)]
            return
        assert redis_url is not None
        prefix = f"rounds-{uuid.uuid4().hex[:8]}"
        yield [await stack.enter_async_context(RedisStateStore(redis_url, prefix=prefix)) for _ in range(PROCESSES)]


@pytest.fixture(params=["memory", "sqlite", "redis"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def backend_url(kind: str, request: pytest.FixtureRequest) -> str | None:
    return str(request.getfixturevalue("redis_url")) if kind == "redis" else None


async def test_of_one_round_sent_at_once_to_every_process_exactly_one_is_accepted(
    kind: str, backend_url: str | None, tmp_path: Path
) -> None:
    accepted: list[int] = []
    refused: list[tuple[int, str]] = []
    async with stores(kind, tmp_path, backend_url) as opened:
        processes = [SpentRounds(store, app_name="app", ttl=TTL) for store in opened]

        async def send(index: int) -> None:
            try:
                await processes[index % len(processes)].spend("round-1")
            except MCPError as error:
                refused.append((error.error.code, error.error.message))
            else:
                accepted.append(index)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                for index in range(SENDS):
                    tg.start_soon(send, index)
            # Another round is its own.
            await processes[-1].spend("round-2")
    assert len(accepted) == 1
    assert len(refused) == SENDS - 1
    assert all(code == types.INVALID_PARAMS and "already answered" in message for code, message in refused)


async def test_a_spent_round_is_forgotten_only_once_its_round_can_no_longer_be_valid(
    kind: str, backend_url: str | None, tmp_path: Path
) -> None:
    clock = [0.0]  # the rounds' clock; the stores date their rows by the real one, so it starts at the real time
    async with stores(kind, tmp_path, backend_url) as opened:
        rounds = SpentRounds(opened[0], app_name="app", ttl=TTL, clock=lambda: clock[0])
        clock[0] = time.time()
        await rounds.spend("old")
        # Within its lifetime (and the margin for clocks), and after a sweep, the record stays.
        clock[0] += TTL
        await rounds.spend("within")
        with pytest.raises(MCPError):
            await rounds.spend("old")
        # Past it: swept by the next round's sweep.
        clock[0] += TTL
        await rounds.spend("later")
        await rounds.spend("old")
