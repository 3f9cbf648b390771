"""Section 1b: CPU time per call of the serving process, read from `/proc/<pid>/stat` around a run of calls.

The latency and throughput figures of section 1 share one event loop between the measuring client, the gateway and
the upstream, so they move with the machine's load. The CPU a separate process spends per call does not (much): it
is the gateway's own cost of a hop, next to what the SDK's `MCPServer` spends answering the same call itself. The
baseline is `echo_upstream.py --http` as a child; the gateway is `gateway.cli serve` as a child in front of the
in-process HTTP upstream, reached the same way (a handshake-era `mcp.Client`, sequential calls on one session).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.abc
from _harness import LOOP, ROOT, child_process, connect, quiesce, write_config
from _measure import median, tool_call
from _report import Row
from _scale import cli_gateway
from _settings import Settings

from tests.support.loopback import free_port, wait_for_port

ECHO = tool_call("echo", {"text": "hello, gateway"})
SECTION = "1b CPU per call (echo, sequential)"
_START_DEADLINE = 30.0


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (`/proc/<pid>/stat`, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@asynccontextmanager
async def _sdk_server(directory: Path) -> AsyncIterator[tuple[str, anyio.abc.Process]]:
    port = free_port()
    argv = [sys.executable, str(ROOT / "tests/benchmarks/echo_upstream.py"), "--http", str(port), "--loop", LOOP.name]
    async with child_process(argv, directory / "cpu-baseline.log") as process:
        await wait_for_port(port, _START_DEADLINE, process)
        yield f"http://127.0.0.1:{port}", process


async def _per_call(url: str, pid: int, calls: int, warmup: int) -> float:
    """Milliseconds of the process's CPU per call, over `calls` sequential calls on one session."""
    async with connect(url) as client:
        for _ in range(warmup):
            await ECHO(client)
        await quiesce()
        before = cpu_seconds(pid)
        for _ in range(calls):
            await ECHO(client)
        return (cpu_seconds(pid) - before) * 1000 / calls


async def cpu_section(settings: Settings, upstream: str, directory: Path) -> list[Row]:
    """The SDK server's and the gateway's CPU per call, taken in turns over the rounds."""
    calls = settings.calls * 4  # clock ticks are 10 ms: enough calls for the figure to be read to ~1%
    config = write_config(directory, "cpu", {"echo": {"url": f"{upstream}/mcp", "prefix": ""}})
    sdk: list[float] = []
    gateway: list[float] = []
    async with _sdk_server(directory) as (sdk_url, sdk_process), cli_gateway(config, directory) as (url, process):
        for _ in range(settings.rounds):
            sdk.append(await _per_call(sdk_url, sdk_process.pid, calls, settings.warmup))
            gateway.append(await _per_call(url, process.pid, calls, settings.warmup))
    base = median(sdk)
    return [
        Row(SECTION, "SDK MCPServer process over HTTP, answering (baseline)", "CPU per call", base, "ms", base),
        Row(SECTION, "gateway process (CLI) → HTTP upstream, forwarding", "CPU per call", median(gateway), "ms", base),
    ]
