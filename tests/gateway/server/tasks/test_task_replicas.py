"""Served tasks shared by two replicas of one app on a real `redis-server` (`tests/support/redis_server.py`).

Each replica is a `ToolServer` on a `RedisStateStore` served over HTTP in this process; a task runs on the replica
that created it, and the other answers `tasks/get`, delivers `tasks/update` and takes `tasks/cancel` through Redis.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
import served_task_tools as tools
from served_task_tools import SETTINGS, TASKS, new_gate, until
from server_harness import DEADLINE, http_server

from gateway.server import ToolServer
from gateway.state.redis_store import RedisStateStore
from tests.support.modern_wire import ModernWire

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def two_replicas(redis_url: str) -> AsyncIterator[tuple[ModernWire, ModernWire]]:
    app = f"task-replicas-{uuid.uuid4().hex[:8]}"
    async with (
        http_server(ToolServer(tools.TOOLS, name=app, state_store=RedisStateStore(redis_url), tasks=SETTINGS)) as a,
        http_server(ToolServer(tools.TOOLS, name=app, state_store=RedisStateStore(redis_url), tasks=SETTINGS)) as b,
        httpx2.AsyncClient() as http,
    ):
        declared = {"elicitation": {}}
        yield (
            ModernWire(http, f"{a}/mcp", extensions=TASKS, capabilities=declared),
            ModernWire(http, f"{b}/mcp", extensions=TASKS, capabilities=declared),
        )


async def test_a_task_started_on_one_replica_is_polled_to_its_result_through_the_other(redis_url: str) -> None:
    opened = new_gate()
    async with two_replicas(redis_url) as (a, b):
        created = await a.request("tools/call", {"name": "wait_for", "arguments": {"gate": opened}})
        working = await b.request("tasks/get", {"taskId": created["taskId"]})
        tools.gates[opened].set()
        done = await until(b, created["taskId"], "completed", "failed", "cancelled")

    assert working["status"] == "working"
    assert done["result"]["content"][0]["text"] == f"{opened} opened"


async def test_an_answer_delivered_to_the_other_replica_resumes_the_parked_task(redis_url: str) -> None:
    async with two_replicas(redis_url) as (a, b):
        created = await a.request("tools/call", {"name": "archive", "arguments": {"name": "ledger"}})
        parked = await until(b, created["taskId"], "input_required")
        [key] = parked["inputRequests"]
        answer = {key: {"action": "accept", "content": {"confirm": True}}}
        await b.request("tasks/update", {"taskId": created["taskId"], "inputResponses": answer})
        done = await until(b, created["taskId"], "completed", "failed", "cancelled")

    assert done["result"]["content"][0]["text"] == "archived ledger"


async def test_a_cancel_taken_by_the_other_replica_stops_the_tool_where_it_runs(redis_url: str) -> None:
    opened = new_gate()
    async with two_replicas(redis_url) as (a, b):
        created = await a.request("tools/call", {"name": "wait_for", "arguments": {"gate": opened}})
        await b.request("tasks/cancel", {"taskId": created["taskId"]})
        with anyio.fail_after(DEADLINE):
            await tools.ended[opened].wait()
        seen = await a.request("tasks/get", {"taskId": created["taskId"]})

    assert seen["status"] == "cancelled"
    assert not tools.gates[opened].is_set()
