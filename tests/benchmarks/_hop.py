# ruff: noqa: RUF001 - ratios are written with the multiplication sign on purpose
"""Sections 1, 2 and 5: the cost of one hop (echo), server mode against `MCPServer`, and a 1 MiB result.

Sequential figures come from one session per case, the cases taking turns call by call (`interleaved`), so
drift in the machine's speed hits them alike; the concurrent figure is measured per case, every case once per
round. The upstream is the SDK's `MCPServer` (`echo_upstream.py`): over HTTP in this process, the same
behind a `server/discover` 404 (a 2025-era server, which the gateway then talks to in the handshake era), or as
a stdio child.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import echo_upstream
from _harness import gateway_server, serving_app, serving_tools, stdio_upstream, write_config
from _measure import Sequential, concurrent, interleaved, median, tool_call
from _report import Row, goal
from _settings import SESSIONS, Settings

from gateway.server import ToolServer
from gateway.state import InMemoryStateStore

logger = logging.getLogger("bench")

ECHO = tool_call("echo", {"text": "hello, gateway"})
BLOB = tool_call("blob")
STDIO_LABEL = "gateway → stdio upstream (MCPServer child)"
FASTMCP_SLOW_SHARE = 8
"""FastMCP's default proxy opens a backend session per call: it makes 1/8 of the calls to keep the run short."""


@dataclass(frozen=True)
class Case:
    """A server to measure: its label, its base URL, and what share of the calls it makes (1/share)."""

    label: str
    url: str
    share: int = 1


@dataclass
class Samples:
    """Per-round figures of one case (milliseconds, calls per second), reduced to medians at the end."""

    p50: list[float] = field(default_factory=list[float])
    p95: list[float] = field(default_factory=list[float])
    rate: list[float] = field(default_factory=list[float])
    concurrent_rate: list[float] = field(default_factory=list[float])

    def add(self, sequential_round: Sequential, concurrent_rate: float) -> None:
        self.p50.append(sequential_round.p50 * 1000)
        self.p95.append(sequential_round.p95 * 1000)
        self.rate.append(sequential_round.rate)
        self.concurrent_rate.append(concurrent_rate)


def fastmcp_available() -> bool:
    """Whether the FastMCP rows can run (`pip install fastmcp`; not a dependency of the project)."""
    try:
        import fastmcp  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        return False
    return True


@asynccontextmanager
async def fastmcp_proxies(upstream_url: str) -> AsyncIterator[tuple[str, str]]:
    """FastMCP's proxy over HTTP in its default mode and in its reused-session mode; yields both base URLs."""
    from fastmcp import Client as FastMCPClient
    from fastmcp.server import create_proxy

    logging.getLogger("fastmcp").setLevel(logging.WARNING)
    async with AsyncExitStack() as stack:
        # Default: a URL target gets a fresh backend client (and session) for every request.
        default = create_proxy(f"{upstream_url}/mcp", name="fastmcp-default")
        default_url = await stack.enter_async_context(serving_app(default.http_app(path="/mcp")))
        # Reused session: a connected client, shared by every request.
        backend = await stack.enter_async_context(FastMCPClient(f"{upstream_url}/mcp"))
        reused = create_proxy(backend, name="fastmcp-reused")
        reused_url = await stack.enter_async_context(serving_app(reused.http_app(path="/mcp")))
        yield default_url, reused_url


def _gateway(directory: Path, name: str, upstream: dict[str, Any]) -> ToolServer:
    """A gateway with one upstream, its tools under their own names (`prefix: ""`)."""
    return gateway_server(write_config(directory, name, {"echo": {"prefix": "", **upstream}}))


async def hop_sections(settings: Settings, upstream: str, handshake_upstream: str, directory: Path) -> list[Row]:
    """Echo through each path, then the 1 MiB result through the hop and direct."""
    async with AsyncExitStack() as stack:

        async def serve(tool_server: ToolServer) -> str:
            return await stack.enter_async_context(serving_tools(tool_server))

        http = {"url": f"{upstream}/mcp"}
        direct = Case("direct: SDK MCPServer over HTTP (baseline)", upstream)
        gateway = Case("gateway → HTTP upstream", await serve(_gateway(directory, "hop-http", http)))
        shared = Case(
            "gateway → HTTP upstream, sessionPolicy shared",
            await serve(_gateway(directory, "hop-shared", {**http, "sessionPolicy": "shared"})),
        )
        handshake = Case(
            "gateway → HTTP upstream, 2025-era (handshake) server",
            await serve(_gateway(directory, "hop-handshake", {"url": f"{handshake_upstream}/mcp"})),
        )
        stdio = Case(
            STDIO_LABEL,
            await serve(_gateway(directory, "hop-stdio", stdio_upstream())),
        )
        server_mode = Case(
            "our server mode: ToolServer([echo])",
            await serve(ToolServer([echo_upstream.echo], name="server-mode", state_store=InMemoryStateStore())),
        )
        cases = [direct, gateway, shared, handshake, stdio, server_mode]
        fastmcp: tuple[Case, Case] | None = None
        if fastmcp_available():
            default_url, reused_url = await stack.enter_async_context(fastmcp_proxies(upstream))
            fastmcp = (
                Case("FastMCP proxy, default (backend session per call)", default_url, FASTMCP_SLOW_SHARE),
                Case("FastMCP proxy, reused session (connected Client)", reused_url),
            )
            cases += fastmcp

        samples = {case.label: Samples() for case in cases}
        shares = [case.share for case in cases]
        for round_number in range(settings.rounds):
            logger.info("echo round %d/%d", round_number + 1, settings.rounds)
            rounds = await interleaved([case.url for case in cases], ECHO, settings.calls, settings.warmup, shares)
            for case, sequential_round in zip(cases, rounds, strict=True):
                if isinstance(sequential_round, str):
                    raise RuntimeError(f"{case.label}: echo {sequential_round}")
                calls, warmup = max(SESSIONS, settings.calls // case.share), max(1, settings.warmup // case.share)
                samples[case.label].add(sequential_round, await concurrent(case.url, ECHO, SESSIONS, calls, warmup))

        blob_cases = [direct, gateway, handshake, stdio]
        blobs: dict[str, list[float | str]] = {case.label: [] for case in blob_cases}
        for round_number in range(settings.rounds):
            logger.info("1 MiB round %d/%d", round_number + 1, settings.rounds)
            rounds = await interleaved([case.url for case in blob_cases], BLOB, settings.blob_calls, 1)
            for case, blob_round in zip(blob_cases, rounds, strict=True):
                blobs[case.label].append(blob_round if isinstance(blob_round, str) else blob_round.p50 * 1000)

    rows = _hop_rows(samples, direct, gateway, [shared, handshake, stdio], fastmcp)
    rows += _server_mode_rows(samples, direct, server_mode)
    rows += _blob_rows(blobs, direct)
    return rows


def _hop_rows(
    samples: dict[str, Samples], direct: Case, gateway: Case, others: Sequence[Case], fastmcp: tuple[Case, Case] | None
) -> list[Row]:
    section = "1 hop cost (echo)"
    base = samples[direct.label]
    base_p50, base_rate = median(base.p50), median(base.concurrent_rate)
    rows: list[Row] = []

    def figures(case: Case, targets: bool = False) -> None:
        mine = samples[case.label]
        p50, rate = median(mine.p50), median(mine.concurrent_rate)
        p50_goal = goal("≤ 1.2× direct", p50 <= 1.2 * base_p50) if targets else {}
        rate_goal = goal("≥ 0.8× direct", rate >= 0.8 * base_rate) if targets else {}
        rows.append(Row(section, case.label, "seq p50", p50, "ms", base_p50, **p50_goal))
        rows.append(Row(section, case.label, "seq p95", median(mine.p95), "ms", median(base.p95)))
        rows.append(Row(section, case.label, "seq calls/s", median(mine.rate), "calls/s", median(base.rate)))
        rows.append(Row(section, case.label, f"{SESSIONS}-session calls/s", rate, "calls/s", base_rate, **rate_goal))

    figures(direct)
    figures(gateway, targets=True)
    for case in others:
        figures(case, targets=case.label == STDIO_LABEL)
    versus = "gateway → HTTP vs FastMCP default"
    if fastmcp is None:
        missing = "skipped: fastmcp is not importable (pip install fastmcp)"
        rows.append(Row(section, "FastMCP proxy (default; reused session)", "all", None, "", note=missing))
        rows.append(Row(section, versus, "speed-up (seq p50)", None, "×", target="≥ 10×", note=missing))
        return rows
    default, reused = fastmcp
    figures(default)
    figures(reused)
    speedup = median(samples[default.label].p50) / median(samples[gateway.label].p50)
    rows.append(Row(section, versus, "speed-up (seq p50)", speedup, "×", **goal("≥ 10×", speedup >= 10)))
    throughput = median(samples[gateway.label].concurrent_rate) / median(samples[default.label].concurrent_rate)
    rows.append(
        Row(
            section,
            versus,
            f"speed-up ({SESSIONS}-session calls/s)",
            throughput,
            "×",
            **goal("≥ 10×", throughput >= 10),
        )
    )
    versus_reused = "gateway → HTTP vs FastMCP reused session"
    reused_speedup = median(samples[reused.label].p50) / median(samples[gateway.label].p50)
    rows.append(
        Row(section, versus_reused, "speed-up (seq p50)", reused_speedup, "×", **goal("≥ 1.5×", reused_speedup >= 1.5))
    )
    reused_rate = median(samples[gateway.label].concurrent_rate) / median(samples[reused.label].concurrent_rate)
    rows.append(
        Row(
            section,
            versus_reused,
            f"speed-up ({SESSIONS}-session calls/s)",
            reused_rate,
            "×",
            **goal("≥ 1.5×", reused_rate >= 1.5),
        )
    )
    return rows


def _server_mode_rows(samples: dict[str, Samples], direct: Case, server_mode: Case) -> list[Row]:
    section = "2 server mode (echo)"
    base, mine = samples[direct.label], samples[server_mode.label]
    base_p50, base_rate, base_concurrent = median(base.p50), median(base.rate), median(base.concurrent_rate)
    p50, rate = median(mine.p50), median(mine.rate)
    label = "SDK MCPServer (baseline; same as in 1)"
    return [
        Row(section, label, "seq p50", base_p50, "ms", base_p50),
        Row(section, label, "seq calls/s", base_rate, "calls/s", base_rate),
        Row(section, label, f"{SESSIONS}-session calls/s", base_concurrent, "calls/s", base_concurrent),
        Row(
            section,
            server_mode.label,
            "seq p50",
            p50,
            "ms",
            base_p50,
            **goal("≤ 1.10× MCPServer", p50 <= 1.1 * base_p50),
        ),
        Row(
            section,
            server_mode.label,
            "seq calls/s",
            rate,
            "calls/s",
            base_rate,
            **goal("≥ 0.90× MCPServer", rate >= 0.9 * base_rate),
        ),
        Row(
            section,
            server_mode.label,
            f"{SESSIONS}-session calls/s",
            median(mine.concurrent_rate),
            "calls/s",
            base_concurrent,
        ),
    ]


def _blob_rows(blobs: dict[str, list[float | str]], direct: Case) -> list[Row]:
    section = "5 large payload (1 MiB result)"
    rows: list[Row] = []
    base_values = [value for value in blobs[direct.label] if isinstance(value, float)]
    base = median(base_values) if base_values else None
    for label, values in blobs.items():
        failures = [value for value in values if isinstance(value, str)]
        if failures:
            rows.append(
                Row(
                    section,
                    label,
                    "seq p50",
                    None,
                    "ms",
                    note=f"{failures[0][:240]}… ({len(failures)}/{len(values)} rounds)",
                )
            )
            continue
        p50 = median([value for value in values if isinstance(value, float)])
        rows.append(Row(section, label, "seq p50", p50, "ms", base))
        rows.append(Row(section, label, "MiB/s", 1000 / p50, "MiB/s", 1000 / base if base else None))
    return rows
