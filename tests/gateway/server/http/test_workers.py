"""`adk-mcp-gateway serve --workers N` as a real process tree: one port, shared state, no orphans."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import pytest
from server_harness import DEADLINE, ROOT, connect, run_serve, wait_until_healthy

from adapters.meta_keys import SESSION_META_KEY
from tests.support.loopback import free_port

pytestmark = pytest.mark.anyio

WORKER_TOOLS = str(Path(__file__).resolve().parent.parent / "worker_tools.py")
MAX_CONNECTIONS = 60
"""Fresh connections tried until both workers have taken one (the kernel picks which worker accepts)."""


@dataclass
class Supervisor:
    url: str
    process: anyio.abc.Process

    def workers(self) -> list[int]:
        """The process ids of the supervisor's children (its workers)."""
        pid = self.process.pid
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


@asynccontextmanager
async def serving_workers(tmp_path: Path, *extra: str, workers: int = 2) -> AsyncIterator[Supervisor]:
    port = free_port()
    command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", WORKER_TOOLS, "--transport", "http"]
    command += ["--port", str(port), "--workers", str(workers), "--state", str(tmp_path / "state.db"), *extra]
    env = {key: value for key, value in os.environ.items() if key != "ADK_MCP_GATEWAY_SEALING_KEY"}
    with (tmp_path / "serve.log").open("wb") as log:
        # Its own session, as a terminal's foreground job would be: signals in the tests reach only it.
        process = await anyio.open_process(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True
        )
        async with process:
            try:
                await wait_until_healthy(f"http://127.0.0.1:{port}")
                yield Supervisor(f"http://127.0.0.1:{port}", process)
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()


def gone(pid: int) -> bool:
    """Whether `pid` has exited (reaped, or a zombie waiting for its new parent to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(")")[2].split()[0] in ("Z", "X")


async def wait_until_gone(pids: list[int]) -> None:
    """Poll until every process in `pids` has exited (a process of another parent offers no event to wait on)."""
    with anyio.fail_after(DEADLINE):
        while True:
            if all(map(gone, pids)):
                return
            await anyio.sleep(0.05)


async def wait_for_lines(log: Path, text: str, count: int) -> None:
    """Poll until `log` (written by another process, which offers no event) holds `text` `count` times."""
    with anyio.fail_after(DEADLINE):
        while True:
            if (await anyio.Path(log).read_text()).count(text) >= count:
                return
            await anyio.sleep(0.05)


async def test_two_workers_share_the_port_and_the_state(tmp_path: Path) -> None:
    meta = {SESSION_META_KEY: secrets.token_urlsafe(32)}
    served: list[dict[str, int]] = []
    async with serving_workers(tmp_path) as supervisor:
        workers = supervisor.workers()
        with anyio.fail_after(DEADLINE * 3):
            while len({call["pid"] for call in served}) < 2 and len(served) < MAX_CONNECTIONS:
                # A fresh client is a fresh connection, which any worker may accept.
                async with connect("http", "modern", supervisor.url) as client:
                    result = await client.call_tool("bump", {}, meta=meta)
                served.append(result.structured_content or {})
    assert len(workers) == 2
    assert {call["pid"] for call in served} == set(workers)
    # One session and one app counter, whichever worker ran the call.
    assert [(call["session"], call["app"]) for call in served] == [(n, n) for n in range(1, len(served) + 1)]


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
async def test_a_signal_to_the_supervisor_stops_every_worker_and_exits_0(tmp_path: Path, sent: signal.Signals) -> None:
    async with serving_workers(tmp_path) as supervisor:
        workers = supervisor.workers()
        supervisor.process.send_signal(sent)
        with anyio.fail_after(DEADLINE):
            assert await supervisor.process.wait() == 0
    assert len(workers) == 2
    await wait_until_gone(workers)


async def test_workers_do_not_outlive_a_supervisor_killed_with_kill_9(tmp_path: Path) -> None:
    async with serving_workers(tmp_path) as supervisor:
        workers = supervisor.workers()
        supervisor.process.kill()
        await supervisor.process.wait()
        await wait_until_gone(workers)
    assert len(workers) == 2


async def test_sighup_to_the_supervisor_reloads_every_worker_and_stops_none(tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"tools": [WORKER_TOOLS]}))
    async with serving_workers(tmp_path, str(config)) as supervisor:
        workers = supervisor.workers()
        log = tmp_path / "serve.log"
        # Both workers serve (and so listen for SIGHUP) once each has said so.
        await wait_for_lines(log, "Serving adk-mcp-gateway", len(workers))
        supervisor.process.send_signal(signal.SIGHUP)
        # A worker logs its reload (a supervisor that did not pass SIGHUP on dies of it, and its workers with it). A
        # worker whose reloader is not listening yet ignores the signal: it has just read the config anyway.
        await wait_for_lines(log, "SIGHUP: reloading", 1)
        await wait_until_healthy(supervisor.url)
        assert supervisor.process.returncode is None
        assert supervisor.workers() == workers
    assert len(workers) == 2


async def test_a_crashed_worker_is_replaced(tmp_path: Path) -> None:
    async with serving_workers(tmp_path) as supervisor:
        first, second = supervisor.workers()
        os.kill(first, signal.SIGKILL)
        with anyio.fail_after(DEADLINE):
            while True:
                now = supervisor.workers()
                if len(now) == 2 and first not in now:
                    break
                await anyio.sleep(0.05)
        assert second in now
        await wait_until_healthy(supervisor.url)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--transport", "http", "--state", ":memory:"], "its own state"),
        (["--transport", "stdio"], "--workers needs --transport http"),
        (["--transport", "sse"], "--workers needs --transport http"),
    ],
    ids=["sqlite-in-memory", "stdio", "sse"],
)
def test_workers_are_refused_where_they_could_not_share_a_port_or_state(extra: list[str], message: str) -> None:
    done = run_serve("--tools", WORKER_TOOLS, "--workers", "2", *extra, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
