"""A real google-adk `LongRunningFunctionTool` served as an MCP task: its yields the task's status, its last the
result."""

from __future__ import annotations

import json

import adk_task_tools
import httpx2
import pytest
from served_task_tools import SETTINGS, TASKS, until
from server_harness import http_server

from gateway.server import ToolServer
from tests.support.modern_wire import ModernWire

pytestmark = pytest.mark.anyio


async def test_a_google_adk_long_running_tool_runs_as_a_task_for_a_client_with_the_extension() -> None:
    server = ToolServer([adk_task_tools.backup_tool], tasks=SETTINGS)
    async with http_server(server) as base_url, httpx2.AsyncClient() as http:
        wire = ModernWire(http, f"{base_url}/mcp", extensions=TASKS)
        created = await wire.request("tools/call", {"name": "watch_backup", "arguments": {"name": "nightly"}})
        working = await wire.request("tasks/get", {"taskId": created["taskId"]})
        adk_task_tools.released.set()
        done = await until(wire, created["taskId"], "completed", "failed", "cancelled")

    assert created["resultType"] == "task"
    assert json.loads(working["statusMessage"]) == {"status": "queued", "job": "nightly"}
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == {"status": "done", "job": "nightly"}
