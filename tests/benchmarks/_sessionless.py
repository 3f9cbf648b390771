# ruff: noqa: RUF001 - ratios are written with the multiplication sign on purpose
"""Section 8: sessionless clients through the default config (`sessionPolicy: isolated`).

A default `mcp.Client()` (2026-07-28, no session key: every call an anonymous session of its own) against a
handshake-era client (`mode="legacy"`, one `mcp-session-id` session) through the same in-process gateway, calls
interleaved in blocks; upstream over stdio (an `MCPServer` child) and over HTTP. Besides p50 the rows count the
upstream sessions the gateway opened (stdio: processes started) per 100 calls after warm-up, from `/healthz`'s
`opened`. Then a flood of distinct `_meta` session keys against the tiny stdio server, one new upstream session per
key: the most upstream processes alive at once against `maxSessions`, and the RSS the flood added (the gateway's
and its children's).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import anyio
import httpx2
from _harness import DEADLINE, ROOT, connect, gateway_server, quiesce, rss_mib, serving_tools, write_config
from _measure import median, percentile, tool_call
from _report import Row, goal
from _settings import Settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.server import SESSION_META_KEY, ToolServer
from tests.support.processes import child_pids

SECTION: Final = "8 sessionless clients (default config)"
ECHO = tool_call("echo", {"text": "hello, gateway"})
TINY: Final = ROOT / "tests/gateway/hub/hub_tiny_server.py"
BLOCK: Final = 10


@asynccontextmanager
async def connect_default(base_url: str) -> AsyncIterator[Client]:
    """`mcp.Client` as installed: its default mode over streamable HTTP, no session key."""
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(DEADLINE, read=300)) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        yield client


async def _timed(client: Client) -> float:
    start = time.perf_counter()
    with anyio.fail_after(DEADLINE):
        await ECHO(client)
    return time.perf_counter() - start


async def _round(base_url: str, opened: Callable[[], int], calls: int, warmup: int) -> tuple[float, float, float]:
    """p50 of the default and the handshake-era client (seconds), and sessions opened per 100 timed calls."""
    async with connect_default(base_url) as default, connect(base_url) as handshake:
        for _ in range(warmup):
            await _timed(default)
            await _timed(handshake)
        await quiesce()
        before = opened()
        latencies: dict[str, list[float]] = {"default": [], "handshake": []}
        for turn in range(-(-calls // BLOCK)):
            order = [("default", default), ("handshake", handshake)]
            for name, client in order if turn % 2 == 0 else order[::-1]:
                latencies[name] += [await _timed(client) for _ in range(BLOCK)]
        per_100 = (opened() - before) * 100 / (2 * len(latencies["default"]))
    return percentile(latencies["default"], 0.5), percentile(latencies["handshake"], 0.5), per_100


async def sessionless_section(settings: Settings, upstream: str, directory: Path) -> list[Row]:
    """The rows of section 8."""
    rows: list[Row] = []
    args = [str(ROOT / "tests/benchmarks/echo_upstream.py"), "--tools", "2"]
    entries: dict[str, dict[str, Any]] = {
        "stdio": {"command": sys.executable, "args": args, "listTimeout": 60},
        "http": {"url": f"{upstream}/mcp"},
    }
    for transport, entry in entries.items():
        tool_server = gateway_server(
            write_config(directory, f"sessionless-{transport}", {"echo": {"prefix": "", **entry}})
        )
        async with serving_tools(tool_server) as base_url:

            def opened(server: ToolServer = tool_server) -> int:
                return int(server.upstream_status()["echo"].get("opened", 0))

            figures = [await _round(base_url, opened, settings.calls, settings.warmup) for _ in range(settings.rounds)]
        default, handshake = median([f[0] for f in figures]) * 1000, median([f[1] for f in figures]) * 1000
        started = median([f[2] for f in figures])
        case = f"gateway → {transport} upstream"
        rows.append(Row(SECTION, f"{case}, handshake-era client", "p50", handshake, "ms"))
        rows.append(
            Row(
                SECTION,
                f"{case}, default mcp.Client()",
                "p50",
                default,
                "ms",
                baseline=handshake,
                **goal("≤ 1.2× handshake-era", default <= 1.2 * handshake),
            )
        )
        rows.append(
            Row(
                SECTION,
                f"{case}, both clients",
                "upstream sessions opened / 100 calls after warm-up",
                started,
                "",
                **goal("0", started == 0),
            )
        )
    rows += await _flood(settings, directory)
    return rows


async def _flood(settings: Settings, directory: Path) -> list[Row]:
    """Distinct `_meta` session keys, one call each, against the tiny stdio server under the default caps."""
    keys = 100 if settings.smoke else 1000
    entry = {"command": sys.executable, "args": ["-I", "-S", str(TINY)]}
    tool_server = gateway_server(write_config(directory, "sessionless-flood", {"tiny": entry}))
    cap = 32
    async with serving_tools(tool_server) as base_url, connect_default(base_url) as client:
        await client.call_tool("tiny_pong", {})
        before = rss_mib(os.getpid()) + sum(rss_mib(pid) for pid in child_pids())
        most = 0
        for index in range(keys):
            meta: Any = {SESSION_META_KEY: f"bench-flood-{index:06d}-{os.urandom(8).hex()}"}
            with anyio.fail_after(DEADLINE):
                await client.call_tool("tiny_pong", {}, meta=meta)
            most = max(most, len(child_pids()))
        after = rss_mib(os.getpid()) + sum(rss_mib(pid) for pid in child_pids())
        opened = int(tool_server.upstream_status()["tiny"].get("opened", 0))
    return [
        Row(
            SECTION,
            f"flood of {keys:,} session keys (tiny stdio upstream)",
            "upstream processes alive, most",
            float(most),
            "",
            **goal(f"≤ maxSessions ({cap})", most <= cap),
            note=f"{opened:,} started",
        ),
        Row(
            SECTION,
            f"flood of {keys:,} session keys (tiny stdio upstream)",
            "RSS growth (gateway + children)",
            after - before,
            "MiB",
        ),
    ]
