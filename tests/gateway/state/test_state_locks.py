"""`StateLocks`: who waits for whom, and that no lock outlives its last holder."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from gateway.state import StateScope
from gateway.state.state_locks import StateLocks

pytestmark = pytest.mark.anyio

ONE = StateScope("app", "alice", "alice/s1")
TWO = StateScope("app", "alice", "alice/s2")
BOB = StateScope("app", "bob", "bob/s1")


async def _second_waits_for_first(locks: StateLocks, first: StateScope, second: StateScope, tool: str) -> bool:
    """Whether a call in `second` waited while a call in `first` held its locks."""
    holding, release = anyio.Event(), anyio.Event()
    entered_while_held = False

    async def hold_first() -> None:
        async with locks.hold(first, tool):
            holding.set()
            await release.wait()

    async def hold_second() -> None:
        nonlocal entered_while_held
        async with locks.hold(second, tool):
            entered_while_held = not release.is_set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(hold_first)
            await holding.wait()
            tg.start_soon(hold_second)
            # Give the second call every chance to get in while the first holds on.
            for _ in range(20):
                await anyio.lowlevel.checkpoint()
            release.set()
    return not entered_while_held


async def test_calls_of_one_session_wait_for_each_other_and_other_sessions_do_not() -> None:
    locks = StateLocks()
    assert await _second_waits_for_first(locks, ONE, ONE, "bump")
    assert not await _second_waits_for_first(locks, ONE, TWO, "bump")
    assert len(locks) == 0


async def test_a_tool_that_conflicted_on_a_shared_key_then_waits_across_sessions_of_that_scope() -> None:
    locks = StateLocks()
    locks.remember_conflict("bump", ["user:count"])
    assert locks.contended_scopes("bump") == frozenset({"user"})
    assert await _second_waits_for_first(locks, ONE, TWO, "bump")
    assert not await _second_waits_for_first(locks, ONE, BOB, "bump")
    assert not await _second_waits_for_first(locks, ONE, TWO, "other_tool")
    locks.remember_conflict("bump", ["app:count", "plain"])
    assert locks.contended_scopes("bump") == frozenset({"user", "app"})
    assert await _second_waits_for_first(locks, ONE, BOB, "bump")
    assert len(locks) == 0
