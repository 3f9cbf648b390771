"""A long-running tool served as an MCP task (SEP-2663) over streamable HTTP, with the real parts.

Clients are raw 2026-07-28 JSON-RPC over HTTP (`tests.support.modern_wire`), as the conformance suite sends them;
the server is `ToolServer` served in this process (its tools wait on events the tests open).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import served_task_tools as tools
from mcp import MCPError, types
from mcp.client import advertise
from served_task_tools import SETTINGS, TASKS, new_gate, until
from server_harness import DEADLINE, connect, http_server

from gateway.server import ToolServer
from gateway.server.tasks import TaskParams
from gateway.state import SqliteStateStore
from gateway.tasks.records import TaskRecord
from gateway.tasks.wire import TASKS_EXTENSION
from tests.support.modern_wire import ModernWire

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def serving(tool_server: ToolServer | None = None, **options: Any) -> AsyncIterator[str]:
    async with http_server(tool_server or ToolServer(tools.TOOLS, tasks=SETTINGS), **options) as base_url:
        yield f"{base_url}/mcp"


async def test_a_long_running_tool_is_listed_as_task_supporting_to_a_handshake_era_client() -> None:
    # The 2026-07-28 Tool has no `execution` (the SDK's wire sieve drops it there): only this era lists it.
    server = ToolServer(tools.TOOLS, tasks=SETTINGS)
    async with http_server(server) as base_url, connect("http", "legacy", base_url) as client:
        listed = await client.list_tools()

    support = {tool.name: tool.execution.task_support if tool.execution else None for tool in listed.tools}
    assert support == {"wait_for": "optional", "archive": "optional", "quick": "optional"}


async def test_a_client_with_the_extension_polls_a_task_from_progress_to_its_result() -> None:
    opened = new_gate()
    async with serving() as url, httpx2.AsyncClient() as http:
        wire = ModernWire(http, url, extensions=TASKS)
        created = await wire.request("tools/call", {"name": "wait_for", "arguments": {"gate": opened}})
        assert created["resultType"] == "task"
        working = await wire.request("tasks/get", {"taskId": created["taskId"]})
        tools.gates[opened].set()
        done = await until(wire, created["taskId"], "completed", "failed", "cancelled")

    assert working["status"] == "working"
    assert working["statusMessage"] == f"waiting for {opened}"
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == f"{opened} opened"
    assert done["resultType"] == "complete"


async def test_a_client_without_the_extension_gets_the_synchronous_call_with_progress() -> None:
    opened = new_gate()
    tools.gates[opened].set()
    async with serving() as url, httpx2.AsyncClient() as http:
        result = await ModernWire(http, url).request("tools/call", {"name": "wait_for", "arguments": {"gate": opened}})

    assert result["resultType"] == "complete"
    assert "taskId" not in result
    assert result["content"][0]["text"] == f"{opened} opened"


async def test_tasks_methods_without_the_extension_are_refused_with_32021() -> None:
    async with serving() as url, httpx2.AsyncClient() as http:
        with pytest.raises(MCPError) as refused:
            await ModernWire(http, url).request("tasks/get", {"taskId": "anything"})

    assert refused.value.error.code == -32021
    assert refused.value.error.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


async def test_a_confirmation_parks_the_task_until_tasks_update_answers_it() -> None:
    async with serving() as url, httpx2.AsyncClient() as http:
        wire = ModernWire(http, url, extensions=TASKS, capabilities={"elicitation": {}})
        created = await wire.request("tools/call", {"name": "archive", "arguments": {"name": "q3.csv"}})
        parked = await until(wire, created["taskId"], "input_required")
        [(key, request)] = parked["inputRequests"].items()
        ack = await wire.request(
            "tasks/update",
            {"taskId": created["taskId"], "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}},
        )
        done = await until(wire, created["taskId"], "completed", "failed", "cancelled")

    assert request["method"] == "elicitation/create"
    assert "q3.csv" in request["params"]["message"]
    assert ack == {"resultType": "complete", **({"_meta": ack["_meta"]} if "_meta" in ack else {})}
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "archived q3.csv"


async def test_tasks_cancel_ends_the_tools_generator_and_the_task_reads_cancelled() -> None:
    opened = new_gate()
    async with serving() as url, httpx2.AsyncClient() as http:
        wire = ModernWire(http, url, extensions=TASKS)
        created = await wire.request("tools/call", {"name": "wait_for", "arguments": {"gate": opened}})
        await wire.request("tasks/cancel", {"taskId": created["taskId"]})
        cancelled = await until(wire, created["taskId"], "cancelled", "completed", "failed")
        with anyio.fail_after(DEADLINE):
            await tools.ended[opened].wait()

    assert cancelled["status"] == "cancelled"
    assert not tools.gates[opened].is_set()


async def test_another_principals_tasks_get_update_and_cancel_are_told_the_task_does_not_exist() -> None:
    opened = new_gate()
    tokens = {"alice-token": "alice", "bob-token": "bob"}
    async with (
        serving(auth_tokens=tokens) as url,
        httpx2.AsyncClient(headers={"Authorization": "Bearer alice-token"}) as alice_http,
        httpx2.AsyncClient(headers={"Authorization": "Bearer bob-token"}) as bob_http,
    ):
        alice = ModernWire(alice_http, url, extensions=TASKS)
        bob = ModernWire(bob_http, url, extensions=TASKS)
        created = await alice.request("tools/call", {"name": "wait_for", "arguments": {"gate": opened}})
        task_id = created["taskId"]
        refusals: list[int] = []
        for method, params in (
            ("tasks/get", {"taskId": task_id}),
            ("tasks/update", {"taskId": task_id, "inputResponses": {"elicit-0": {"action": "decline"}}}),
            ("tasks/cancel", {"taskId": task_id}),
        ):
            with pytest.raises(MCPError) as refused:
                await bob.request(method, params)
            refusals.append(refused.value.error.code)
        still = await alice.request("tasks/get", {"taskId": task_id})
        tools.gates[opened].set()
        done = await until(alice, task_id, "completed", "failed", "cancelled")

    assert refusals == [types.INVALID_PARAMS] * 3
    assert still["status"] == "working"
    assert done["status"] == "completed"


async def test_another_session_of_the_same_principal_cannot_see_a_sessions_task() -> None:
    opened = new_gate()
    async with serving() as url, httpx2.AsyncClient() as http:
        mine = ModernWire(http, url, extensions=TASKS, meta={"adk-mcp-gateway/session": secrets.token_urlsafe(32)})
        other = ModernWire(http, url, extensions=TASKS, meta={"adk-mcp-gateway/session": secrets.token_urlsafe(32)})
        created = await mine.request("tools/call", {"name": "wait_for", "arguments": {"gate": opened}})
        with pytest.raises(MCPError) as refused:
            await other.request("tasks/get", {"taskId": created["taskId"]})
        seen = await mine.request("tasks/get", {"taskId": created["taskId"]})
        tools.gates[opened].set()

    assert refused.value.error.code == types.INVALID_PARAMS
    assert seen["taskId"] == created["taskId"]


async def test_a_completed_task_survives_a_restart_and_a_task_cut_by_it_reads_failed(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    done_gate, cut_gate = new_gate(), new_gate()
    tools.gates[done_gate].set()
    first = ToolServer(tools.TOOLS, state_store=SqliteStateStore(state), tasks=SETTINGS)
    async with serving(first) as url, httpx2.AsyncClient() as http:
        wire = ModernWire(http, url, extensions=TASKS)
        finished = await wire.request("tools/call", {"name": "wait_for", "arguments": {"gate": done_gate}})
        await until(wire, finished["taskId"], "completed")
        cut = await wire.request("tools/call", {"name": "wait_for", "arguments": {"gate": cut_gate}})
    restarted = ToolServer(tools.TOOLS, state_store=SqliteStateStore(state), tasks=SETTINGS)
    async with serving(restarted) as url, httpx2.AsyncClient() as http:
        wire = ModernWire(http, url, extensions=TASKS)
        kept = await wire.request("tasks/get", {"taskId": finished["taskId"]})
        lost = await wire.request("tasks/get", {"taskId": cut["taskId"]})

    assert kept["status"] == "completed"
    assert kept["result"]["content"][0]["text"] == f"{done_gate} opened"
    assert lost["status"] == "failed"
    assert lost["error"]["code"] == types.INTERNAL_ERROR


class _Upstream:
    """Answers for one task the server hands out without running it, as a gateway's upstream task would."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    async def answer(self, ctx: object, method: str, params: TaskParams) -> dict[str, Any] | None:
        del ctx
        self.asked.append((method, params.task_id))
        if params.task_id != "upstream-1":
            return None
        return {"taskId": "upstream-1", "status": "working", "createdAt": "c", "lastUpdatedAt": "u", "ttlMs": None}


async def test_a_task_the_server_did_not_start_is_answered_by_its_foreign_tasks() -> None:
    server = ToolServer(tools.TOOLS, tasks=SETTINGS)
    upstream = _Upstream()
    server.tasks.foreign = upstream
    async with serving(server) as url, httpx2.AsyncClient() as http:
        wire = ModernWire(http, url, extensions=TASKS)
        forwarded = await wire.request("tasks/get", {"taskId": "upstream-1"})
        with pytest.raises(MCPError) as unknown:
            await wire.request("tasks/cancel", {"taskId": "nobodys"})

    assert forwarded["status"] == "working"
    assert forwarded["ttlMs"] is None
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert upstream.asked == [("tasks/get", "upstream-1"), ("tasks/cancel", "nobodys")]


async def test_a_handshake_era_client_that_declares_the_extension_still_gets_the_synchronous_call() -> None:
    # A 2025-11-25 result cannot carry a 2026-07-28 task handle: the call runs as it always did.
    opened = new_gate()
    tools.gates[opened].set()
    server = ToolServer(tools.TOOLS, tasks=SETTINGS)
    declared = {"extensions": [advertise(TASKS_EXTENSION)]}
    async with http_server(server) as base_url, connect("http", "legacy", base_url, **declared) as client:
        version = client.protocol_version
        result = await client.call_tool("wait_for", {"gate": opened})

    assert version == "2025-11-25"
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == f"{opened} opened"


async def test_a_task_whose_process_stopped_beating_reads_failed_and_a_beating_one_working(tmp_path: Path) -> None:
    server = ToolServer(tools.TOOLS, state_store=SqliteStateStore(tmp_path / "state.db"), tasks=SETTINGS)
    now = time.time()

    def elsewhere(task_id: str, heartbeat: float) -> TaskRecord:
        """A task another process runs (or ran), its last heartbeat at `heartbeat`."""
        return TaskRecord(
            task_id=task_id,
            app_name=server.name,
            principal="local",
            session=None,
            tool="wait_for",
            created_at=now - 100,
            updated_at=now - 100,
            ttl_ms=3_600_000,
            poll_interval_ms=500,
            runner="another-process",
            heartbeat=heartbeat,
        )

    async with serving(server) as url, httpx2.AsyncClient() as http:
        await server.tasks.store.create(elsewhere("crashed", now - 4 * SETTINGS.heartbeat))
        await server.tasks.store.create(elsewhere("alive", now))
        wire = ModernWire(http, url, extensions=TASKS)
        crashed = await wire.request("tasks/get", {"taskId": "crashed"})
        alive = await wire.request("tasks/get", {"taskId": "alive"})

    assert crashed["status"] == "failed"
    assert crashed["error"]["code"] == types.INTERNAL_ERROR
    assert alive["status"] == "working"
