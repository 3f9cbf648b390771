"""Section 9: served tasks (SEP-2663): many concurrent calls of a one-second long-running tool, each a task.

`ToolServer` (state and tasks in a SQLite file, as `serve` keeps them) in this process over streamable HTTP; the
client sends raw 2026-07-28 requests declaring the tasks extension (`tests.support.modern_wire`): all the calls at
once, then each task polled with `tasks/get` at the `pollIntervalMs` it was given until it is completed. Rows: the
time from the first call to the last task seen completed (the tool alone takes 1 s: that is the baseline), and the
p50 and p95 of one `tasks/get`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2
from _harness import DEADLINE, serving_tools
from _measure import median, percentile
from _report import Row, goal
from _settings import Settings

from gateway import LongRunningFunctionTool
from gateway.server import ToolServer
from gateway.state import SqliteStateStore
from gateway.tasks.wire import TASKS_EXTENSION
from tests.support.modern_wire import ModernWire

SECTION: Final = "9 served tasks"
TOOL_SECONDS: Final = 1.0


async def one_second_job(job: int) -> AsyncGenerator[Any]:
    """Work for a second."""
    yield {"progress": 0, "total": 1, "message": f"job {job} started"}
    await anyio.sleep(TOOL_SECONDS)
    yield f"job {job} done"


async def _round(url: str, tasks: int) -> tuple[float, list[float]]:
    """Seconds to all completed, and every `tasks/get`'s latency (seconds)."""
    latencies: list[float] = []
    limits = httpx2.Limits(max_connections=tasks, max_keepalive_connections=tasks)
    async with httpx2.AsyncClient(timeout=DEADLINE, limits=limits) as http:
        wire = ModernWire(http, url, extensions={TASKS_EXTENSION: {}})

        async def follow(job: int) -> None:
            created = await wire.request("tools/call", {"name": "one_second_job", "arguments": {"job": job}})
            assert created.get("resultType") == "task", created
            interval = created.get("pollIntervalMs", 500) / 1000
            while True:
                await anyio.sleep(interval)
                asked = time.perf_counter()
                task = await wire.request("tasks/get", {"taskId": created["taskId"]})
                latencies.append(time.perf_counter() - asked)
                if task["status"] != "working":
                    assert task["status"] == "completed", task
                    return

        start = time.perf_counter()
        with anyio.fail_after(DEADLINE * 4):
            async with anyio.create_task_group() as group:
                for job in range(tasks):
                    group.start_soon(follow, job)
        return time.perf_counter() - start, latencies


async def tasks_section(settings: Settings, directory: Path) -> list[Row]:
    count = 20 if settings.smoke else 100
    rounds = min(settings.rounds, 3)
    totals: list[float] = []
    p50s: list[float] = []
    p95s: list[float] = []
    server = ToolServer(
        [LongRunningFunctionTool(one_second_job)], state_store=SqliteStateStore(directory / "tasks-state.db")
    )
    async with serving_tools(server) as base_url:
        for _ in range(rounds):
            total, latencies = await _round(f"{base_url}/mcp", count)
            totals.append(total)
            p50s.append(percentile(latencies, 0.5) * 1000)
            p95s.append(percentile(latencies, 0.95) * 1000)
    case = f"{count} concurrent tasks of a {TOOL_SECONDS:g} s tool (SQLite)"
    overall = median(totals)
    return [
        Row(SECTION, case, "time to all completed", overall, "s", baseline=TOOL_SECONDS, **goal("< 3 s", overall < 3)),
        Row(SECTION, case, "tasks/get p50", median(p50s), "ms"),
        Row(SECTION, case, "tasks/get p95", median(p95s), "ms"),
    ]
