"""Timing loops: sequential calls on one session, and calls spread over concurrent sessions.

Each loop opens fresh measuring sessions (`_harness.connect`), warms them up outside the timed window, waits for
a quiet machine (`_harness.quiesce`), and keeps every session open until the last call of the round has finished,
so no session's set-up or teardown is timed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
from _harness import DEADLINE, connect, quiesce
from mcp import Client, types

CallFactory = Callable[[Client], Awaitable[Any]]


@dataclass(frozen=True)
class Sequential:
    """One round of sequential calls on one session."""

    p50: float
    """Seconds."""
    p95: float
    """Seconds."""
    rate: float
    """Calls per second (calls / wall time of the round)."""


def percentile(values: Sequence[float], fraction: float) -> float:
    """The `fraction` quantile (linear interpolation between the closest ranks)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    """The median, for a round's figures and for figures over rounds."""
    return statistics.median(values)


def tool_call(name: str, arguments: dict[str, Any] | None = None) -> CallFactory:
    """A call that fails loudly when the tool reports an error (a benchmark of failures measures nothing)."""

    async def call(client: Client) -> types.CallToolResult:
        result = await client.call_tool(name, arguments or {})
        if result.is_error:
            text = " ".join(block.text for block in result.content if isinstance(block, types.TextContent))
            raise RuntimeError(f"{name} returned an error: {text}")
        return result

    return call


async def timed(call: CallFactory, client: Client) -> float:
    """Seconds one call takes."""
    start = time.perf_counter()
    with anyio.fail_after(DEADLINE):
        await call(client)
    return time.perf_counter() - start


async def sequential(base_url: str, call: CallFactory, calls: int, warmup: int) -> Sequential:
    """`calls` calls one after another on one fresh session, after `warmup` untimed ones."""
    async with connect(base_url) as client:
        for _ in range(warmup):
            await timed(call, client)
        await quiesce()
        start = time.perf_counter()
        latencies = [await timed(call, client) for _ in range(calls)]
        elapsed = time.perf_counter() - start
    return Sequential(p50=percentile(latencies, 0.5), p95=percentile(latencies, 0.95), rate=calls / elapsed)


async def interleaved(
    base_urls: Sequence[str],
    call: CallFactory,
    calls: int,
    warmup: int,
    shares: Sequence[int] | None = None,
    block: int = 10,
) -> list[Sequential | str]:
    """Sequential calls on one session per server, the servers taking turns every `block` calls.

    A slow spell of the machine (this one is a shared VM) then hits every server alike, so their ratios hold
    even when the absolute figures drift; blocks rather than single calls keep each server's path warm, as in a
    run of calls. Server `i` makes one call in `shares[i]`. Calls per second is the inverse of the mean latency.
    A server whose call fails gives the failure's text instead, and is not called again in this round.
    """
    shares = list(shares or [1] * len(base_urls))
    latencies: list[list[float]] = [[] for _ in base_urls]
    failures: dict[int, str] = {}
    async with AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(connect(url)) for url in base_urls]
        for index, client in enumerate(clients):
            try:
                for _ in range(max(1, warmup // shares[index])):
                    await timed(call, client)
            except Exception as exc:
                failures[index] = _failure(exc)
        await quiesce()
        for turn in range(-(-calls // block)):
            for offset in range(len(clients)):
                index = (turn + offset) % len(clients)  # rotate who goes first
                for number in range(turn * block, min(calls, (turn + 1) * block)):
                    if index in failures or number % shares[index]:
                        continue
                    try:
                        latencies[index].append(await timed(call, clients[index]))
                    except Exception as exc:
                        failures[index] = _failure(exc)
    return [
        failures[index]
        if index in failures
        else Sequential(p50=percentile(times, 0.5), p95=percentile(times, 0.95), rate=len(times) / sum(times))
        for index, times in enumerate(latencies)
    ]


def _failure(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"fails: {type(exc).__name__}: {exc}"


async def concurrent(base_url: str, call: CallFactory, sessions: int, calls: int, warmup: int) -> float:
    """Calls per second with `calls` calls spread over `sessions` sessions calling at once."""
    per_session = max(1, calls // sessions)
    ready = _Countdown(sessions)
    done = _Countdown(sessions)
    go = anyio.Event()
    start = end = 0.0

    async def session() -> None:
        async with connect(base_url) as client:
            for _ in range(warmup):
                await timed(call, client)
            ready.count_down()
            await go.wait()
            for _ in range(per_session):
                await timed(call, client)
            done.count_down()
            # Stay open until every session has finished: no teardown inside the timed window.
            await done.wait()

    async with anyio.create_task_group() as tg:
        for _ in range(sessions):
            tg.start_soon(session)
        with anyio.fail_after(DEADLINE):
            await ready.wait()
        await quiesce()
        start = time.perf_counter()
        go.set()
        with anyio.fail_after(DEADLINE * 4):
            await done.wait()
        end = time.perf_counter()
    return per_session * sessions / (end - start)


async def list_all(client: Client) -> int:
    """Every page of `tools/list` (the SDK does not paginate); returns how many tools there are."""
    cursor: str | None = None
    count = 0
    with anyio.fail_after(DEADLINE):
        while True:
            page = await client.list_tools(cursor=cursor)
            count += len(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return count


async def timed_listing(client: Client) -> tuple[float, int]:
    """Seconds a full `tools/list` (all pages) takes, and how many tools it gave."""
    start = time.perf_counter()
    count = await list_all(client)
    return time.perf_counter() - start, count


class _Countdown:
    """An event that fires after `count` count-downs (anyio has no barrier)."""

    def __init__(self, count: int) -> None:
        self._left = count
        self._event = anyio.Event()

    def count_down(self) -> None:
        self._left -= 1
        if self._left <= 0:
            self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
