"""Served tasks over stdio: `adk-mcp-gateway serve` as a child process, driven with raw 2026-07-28 JSON lines.

The tools are the conformance fixture's (`tests/conformance/fixture_tasks.py`): `slow_compute` sleeps, then answers.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.text import TextReceiveStream

from gateway.tasks.wire import TASKS_EXTENSION
from tests.support.deadlines import DEADLINE
from tests.support.modern_wire import MODERN_VERSION
from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio

FIXTURE = ROOT / "tests" / "conformance" / "fixture_tasks.py"


class Lines:
    """JSON-RPC requests as lines on a child's stdin; each answer read from its stdout."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = TextReceiveStream(process.stdout)
        self._buffer = ""
        self._ids = itertools.count(1)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "lines", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
        }
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}
        await self._stdin.send((json.dumps(message) + "\n").encode())
        with anyio.fail_after(DEADLINE):
            while True:
                while "\n" in self._buffer:
                    line, self._buffer = self._buffer.split("\n", 1)
                    answer = json.loads(line) if line.strip() else {}
                    if answer.get("id") == request_id:
                        assert "error" not in answer, answer
                        return answer["result"]
                self._buffer += await self._stdout.receive()

    async def until(self, task_id: str, *statuses: str) -> dict[str, Any]:
        with anyio.fail_after(DEADLINE):
            while True:
                task = await self.request("tasks/get", {"taskId": task_id})
                if task["status"] in statuses:
                    return task
                await anyio.sleep(0.05)


@asynccontextmanager
async def serving_stdio(state: Path) -> AsyncIterator[Lines]:
    command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", str(FIXTURE), "--state", str(state)]
    async with await anyio.open_process(command, cwd=ROOT) as process:
        try:
            yield Lines(process)
        finally:
            assert process.stdin is not None
            await process.stdin.aclose()
            with anyio.fail_after(DEADLINE):
                await process.wait()


async def test_a_task_over_stdio_is_polled_to_its_result_and_another_cancelled(tmp_path: Path) -> None:
    async with serving_stdio(tmp_path / "state.db") as lines:
        quick = await lines.request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.5}})
        done = await lines.until(quick["taskId"], "completed", "failed", "cancelled")
        endless = await lines.request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 600}})
        ack = await lines.request("tasks/cancel", {"taskId": endless["taskId"]})
        cancelled = await lines.until(endless["taskId"], "cancelled", "completed", "failed")

    assert quick["resultType"] == "task"
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "slow_compute computed after 0.5 s"
    assert ack["resultType"] == "complete"
    assert cancelled["status"] == "cancelled"
