"""Servers, clients and processes on loopback for the benchmark.

In-process servers run under uvicorn on a socket bound to `127.0.0.1:0` before they start (clients may connect at
once; the kernel queues them until the app's lifespan is up), each in a task group owned by its context manager.
Child processes (stdio upstreams, the CLI gateway whose memory is read) get their own process group, are asked to
stop with SIGINT and are killed by group if they do not stop in time. Sockets, ports and the in-process uvicorn
come from `tests.support.loopback` (importable because the editable install puts the checkout's root on `sys.path`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import METHOD_NOT_FOUND
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway import hub
from gateway.config import load_config
from gateway.hub import gateway_tools
from gateway.server import ToolServer
from gateway.state import InMemoryStateStore
from tests.support import loopback
from tests.support.deadlines import LONG_DEADLINE as DEADLINE
from tests.support.loopback import bound_socket, serving_asgi
from tests.support.paths import ROOT

HERE = Path(__file__).resolve().parent
UPSTREAM_SCRIPT = HERE / "echo_upstream.py"
STOP_GRACE = 15.0
BACKLOG = 1024
"""The listen backlog of the in-process servers' sockets (many sessions connect at once)."""


@dataclass
class EventLoop:
    """The event loop (and the HTTP parser that goes with it) every part of the benchmark runs on.

    `bench.py --loop` sets it before it starts its own loop, which the measuring client and every in-process server
    share; in-process uvicorn servers parse with `http_parser`, and child processes (stdio upstreams, CLI
    gateways) are started with `flags`. `uvloop` is what the speed extra gives: uvloop and httptools.
    """

    name: Literal["asyncio", "uvloop"] = "asyncio"

    @property
    def http_parser(self) -> Literal["h11", "httptools"]:
        return "httptools" if self.name == "uvloop" else "h11"

    def flags(self) -> list[str]:
        """`adk-mcp-gateway serve`'s flags for this loop and parser."""
        return ["--loop", self.name, "--http-parser", self.http_parser]


LOOP = EventLoop()


@asynccontextmanager
async def serving_app(app: ASGIApp) -> AsyncIterator[str]:
    """Any ASGI app (the SDK's `MCPServer`, FastMCP) under uvicorn in this process; yields the base URL."""
    async with serving_asgi(app, bound_socket(backlog=BACKLOG), grace=2, http=LOOP.http_parser) as base_url:
        yield base_url


def handshake_only(app: ASGIApp) -> ASGIApp:
    """`app` as a 2025-era server: `server/discover` gets 404 (method not found), so clients fall back to
    `initialize` and then talk the handshake era (SSE responses), as most published servers still do."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"mcp-method") == b"server/discover":
            error = {"code": METHOD_NOT_FOUND, "message": "Method not found: server/discover"}
            response = JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=404)
            await response(scope, receive, send)
            return
        await app(scope, receive, send)

    return wrapped


@asynccontextmanager
async def serving_tools(tool_server: ToolServer) -> AsyncIterator[str]:
    """Our server mode (`serve_async(..., transport="http", sock=...)`) in this process; yields the base URL."""
    sock = bound_socket(backlog=BACKLOG)
    async with loopback.serving_tools(tool_server, sock, http_parser=LOOP.http_parser) as base_url:
        yield base_url


def write_config(directory: Path, name: str, servers: dict[str, dict[str, Any]]) -> Path:
    """A gateway config file `directory/name.json` with these upstreams."""
    path = directory / f"{name}.json"
    path.write_text(json.dumps({"name": name, "mcpServers": servers}, indent=2), encoding="utf-8")
    return path


def gateway_server(config: Path) -> ToolServer:
    """What `adk-mcp-gateway serve CONFIG` runs, with state in memory."""
    loaded = load_config(config)
    return hub.gateway_server(gateway_tools(loaded), name=loaded.name, state_store=InMemoryStateStore())


def stdio_upstream(tools: int = 2, **options: Any) -> dict[str, Any]:
    """A config entry starting `echo_upstream.py` (the SDK's `MCPServer`) as a stdio child.

    Its `listTimeout` is generous: the measured listings must include it even when it starts slowly on a busy
    machine (the default would leave it out of that listing and announce it later).
    """
    args = [str(UPSTREAM_SCRIPT), "--tools", str(tools), "--loop", LOOP.name]
    return {"command": sys.executable, "args": args, "listTimeout": 60, **options}


@asynccontextmanager
async def connect(base_url: str) -> AsyncIterator[Client]:
    """The measuring client: `mcp.Client(mode="legacy")` over streamable HTTP with its own `httpx2.AsyncClient`.

    The SSE event limit is lifted so that a 1 MiB result can reach it (the SDK's default stops at 1 MiB).
    """
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(DEADLINE, read=300)) as http:
        transport = streamable_http_client(f"{base_url}/mcp", http_client=http, max_sse_event_size=None)
        async with Client(transport, mode="legacy") as client:
            yield client


async def wait_until_healthy(base_url: str, process: anyio.abc.Process) -> None:
    """Poll the child's `GET /healthz` until it answers 200 (it binds its port only once it has started)."""
    async with httpx2.AsyncClient(timeout=2.0) as http:
        with anyio.fail_after(DEADLINE):
            while True:
                if process.returncode is not None:
                    raise RuntimeError(f"the child process exited with {process.returncode} before it was ready")
                try:
                    response = await http.get(f"{base_url}/healthz")
                    if response.status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                await anyio.sleep(0.05)


@asynccontextmanager
async def child_process(argv: Sequence[str], log: Path) -> AsyncIterator[anyio.abc.Process]:
    """A child in its own process group, stderr to `log`; SIGINT on exit, then SIGKILL to the group."""
    with log.open("ab") as stderr:
        process = await anyio.open_process(
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield process
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.send_signal(signal.SIGINT)
                with anyio.move_on_after(STOP_GRACE):
                    await process.wait()
            if process.returncode is None:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()


@dataclass
class Patience:
    """How long `quiesce` waits at most; the smoke run, whose figures only show that it runs, waits less."""

    seconds: float = 10.0


PATIENCE = Patience()


async def quiesce(*, idle: float = 0.8, window: float = 0.1) -> None:
    """Wait (at most `PATIENCE.seconds`) until the machine's CPUs were `idle` for one `window`.

    A case must not pay for the previous one's teardown: isolated stdio upstreams, for one, keep both cores busy
    for about a second while their processes exit.
    """
    with anyio.move_on_after(PATIENCE.seconds):
        while True:
            idle_before, total_before = _cpu_ticks()
            await anyio.sleep(window)
            idle_after, total_after = _cpu_ticks()
            if total_after == total_before or (idle_after - idle_before) / (total_after - total_before) >= idle:
                return


def _cpu_ticks() -> tuple[int, int]:
    """Idle (idle + iowait) and total CPU ticks of the machine so far (`/proc/stat`)."""
    fields = [int(value) for value in Path("/proc/stat").read_text(encoding="ascii").split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)


def rss_mib(pid: int) -> float:
    """Resident memory of one process (`VmRSS` in `/proc/<pid>/status`), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def child_pids(pid: int) -> list[int]:
    """The direct children of a process (`/proc/<pid>/task/*/children`)."""
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text(encoding="ascii")
        children.extend(int(item) for item in text.split())
    return children


def machine() -> str:
    """CPU model, cores and Python version."""
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    version = sys.version.split()[0]
    return f"{model}, {os.cpu_count()} cores, Python {version} ({sys.implementation.name}), {sys.platform}"
