# ruff: noqa: RUF001 - ratios are written with the multiplication sign on purpose
"""Benchmark of adk-mcp-gateway: hop cost, server mode, catalog scale, footprint, large payloads, workers, tool search.

    python tests/benchmarks/bench.py [--smoke] [--rounds N] [--calls N] [--only SECTION ...] [--loop uvloop]
    python tests/benchmarks/bench.py --profile PATH     # only: the gateway process under pyinstrument

Everything runs on loopback: in-process servers under uvicorn on pre-bound `127.0.0.1:0` sockets; stdio
upstreams, and the CLI gateway whose memory is read, as child processes. The measuring client is
`mcp.Client(mode="legacy")` over `streamable_http_client` with its own `httpx2.AsyncClient`. Every figure is the
median over rounds, next to its ratio to its section's baseline measured in the same run (both on the one event loop
`--loop` chooses: asyncio's with h11, or uvloop with httptools as the speed extra gives); targets are marked met
or not in the table, never asserted. The FastMCP rows need `pip install fastmcp` (a benchmark-only dependency)
and are skipped, with a line in the table, without it.

Not a test: pytest collects `test_*.py` only, and this directory has no `__init__.py`. The modules beside it
are found because Python puts the script's directory first on `sys.path`.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pstats
import shlex
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import anyio
import echo_upstream
from _cpu import cpu_section
from _harness import LOOP, PATIENCE, ROOT, handshake_only, machine, serving_app, write_config
from _hop import ECHO, hop_sections
from _measure import sequential
from _report import Row, render
from _scale import catalog_section, cli_gateway, footprint_section
from _search import search_section
from _sessionless import sessionless_section
from _settings import SESSIONS, Settings
from _tasks import tasks_section
from _workers import workers_section

logger = logging.getLogger("bench")


SECTIONS = ("hop", "cpu", "catalog", "footprint", "workers", "search", "sessionless", "tasks")


async def run(settings: Settings, emit: Callable[[str], None], only: Sequence[str] = SECTIONS) -> None:
    """Every section (or those in `only`), then the table."""
    rows: list[Row] = []
    durations: list[str] = []
    with tempfile.TemporaryDirectory(prefix="adk-mcp-bench-") as temp:
        directory = Path(temp)
        async with (
            serving_app(echo_upstream.build().streamable_http_app()) as upstream,
            serving_app(handshake_only(echo_upstream.build().streamable_http_app())) as handshake_upstream,
        ):
            sections: list[tuple[str, Callable[[], Awaitable[list[Row]]]]] = [
                ("hop", lambda: hop_sections(settings, upstream, handshake_upstream, directory)),
                ("cpu", lambda: cpu_section(settings, upstream, directory)),
                ("catalog", lambda: catalog_section(settings, directory)),
                ("footprint", lambda: footprint_section(settings, upstream, directory)),
                ("workers", lambda: workers_section(settings, upstream, directory)),
                ("search", lambda: search_section(settings)),
                ("sessionless", lambda: sessionless_section(settings, upstream, directory)),
                ("tasks", lambda: tasks_section(settings, directory)),
            ]
            for name, section in (entry for entry in sections if entry[0] in only):
                started = time.perf_counter()
                rows += await section()
                durations.append(f"{name} {time.perf_counter() - started:.0f} s")
    rows.sort(key=lambda row: row.section)  # stable: sections in number order, rows as measured
    emit(render(rows))
    emit(f"\nsections took: {'; '.join(durations)}")


async def profile(settings: Settings, output: Path, emit: Callable[[str], None]) -> None:
    """Sequential echo calls through a CLI gateway running under pyinstrument; prints the top frames by own time.

    The gateway child's idle waits (the event loop's `select`) are left out of the shares: they are time the
    process had nothing to do, not time spent on the hop.
    """
    calls = settings.calls * settings.rounds
    with tempfile.TemporaryDirectory(prefix="adk-mcp-bench-") as temp:
        directory = Path(temp)
        async with serving_app(echo_upstream.build().streamable_http_app()) as upstream:
            config = write_config(directory, "profile", {"echo": {"url": f"{upstream}/mcp", "prefix": ""}})
            wrapper = ["-m", "pyinstrument", "--renderer", "pstats", "--outfile", str(output)]
            async with cli_gateway(config, directory, wrapper) as (url, _process):
                result = await sequential(url, ECHO, calls, settings.warmup)
    stats = pstats.Stats(str(output))
    frames = [
        (own, f"{function} ({_short(filename)}:{line})")
        for (filename, line, function), (_, _, own, _, _) in stats.stats.items()  # type: ignore[attr-defined]
        if not _idle(function)
    ]
    frames.sort(reverse=True)
    busy = sum(own for own, _ in frames)
    emit(
        f"{calls} sequential echo calls through `gateway.cli serve` under pyinstrument (p50 "
        f"{result.p50 * 1000:.2f} ms with the profiler on); {busy:.2f} s busy in the gateway; pstats: {output}\n"
    )
    emit("| own time | share of busy | frame |\n|---:|---:|---|")
    for own, name in frames[:10]:
        emit(f"| {own:.3f} s | {own / busy:.1%} | {name} |")
    ours = [
        (cumulative, f"{function} ({_short(filename)}:{line})")
        for (filename, line, function), (_, _, _, cumulative, _) in stats.stats.items()  # type: ignore[attr-defined]
        if any(f"{ROOT}/{package}/" in filename for package in ("gateway", "adapters")) and cumulative < busy
    ]
    ours.sort(reverse=True)
    # The entry points (`cli.main`, `serve`) are left out: their cumulative time includes the idle waits.
    emit("\n| cumulative | share of busy | the project's own frames |\n|---:|---:|---|")
    for cumulative, name in ours[:10]:
        emit(f"| {cumulative:.3f} s | {cumulative / busy:.1%} | {name} |")


def _idle(function: str) -> bool:
    return any(marker in function for marker in ("select", "epoll", "poll", "_run_once"))


def _short(filename: str) -> str:
    for marker in ("site-packages/", f"{ROOT}/", "lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def _versions() -> str:
    parts: list[str] = []
    for package in ("adk-mcp-gateway", "mcp", "fastmcp", "uvicorn", "httpx2", "uvloop", "httptools"):
        try:
            parts.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            parts.append(f"{package} (not installed)")
    return ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a few iterations of everything (CI keeps it working)")
    parser.add_argument("--rounds", type=int, help="rounds per figure (default 5; smoke 1)")
    parser.add_argument("--calls", type=int, help="echo calls per round and case (default 120; smoke 16)")
    parser.add_argument("--profile", type=Path, metavar="PATH", help="only profile the gateway; pstats to PATH")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=SECTIONS, help="run only these sections")
    parser.add_argument(
        "--loop",
        choices=["asyncio", "uvloop"],
        default="asyncio",
        help="the event loop of everything measured, both sides of every ratio: asyncio's with h11 (default), or "
        "uvloop with httptools (the speed extra)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    args = parser.parse_args(argv)
    LOOP.name = args.loop
    if LOOP.name == "uvloop":
        try:
            for module in ("uvloop", "httptools"):
                importlib.import_module(module)
        except ImportError:
            parser.error('--loop uvloop needs the speed extra: pip install "adk-mcp-gateway[speed]"')
    settings = Settings(
        rounds=args.rounds or (1 if args.smoke else 5),
        calls=args.calls or (16 if args.smoke else 120),
        smoke=args.smoke,
    )
    if settings.smoke:
        PATIENCE.seconds = 0.5
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logger.setLevel(logging.INFO if args.verbose else logging.WARNING)
    started = time.perf_counter()
    print("# adk-mcp-gateway benchmark\n")
    print(f"- machine: {machine()}")
    print(f"- command: `{shlex.join(['python', *sys.argv])}`")
    print(f"- versions: {_versions()}")
    print(
        f"- {settings.rounds} round(s) of {settings.calls} echo calls per case, {SESSIONS} sessions sharing them in "
        f"the concurrent figure; catalog: {settings.catalog_rounds} round(s), footprint: "
        f"{settings.footprint_rounds}, each with a fresh gateway. Each figure is the median over rounds; "
        "× baseline compares it with its section's baseline row from the same run.\n"
        "- The measuring client, the in-process gateways and the HTTP upstreams share one event loop (one core), so a "
        "throughput ratio is a ratio of CPU per call: direct = client + upstream, gateway = client + gateway + "
        "upstream. Stdio upstreams and the footprint processes are separate processes.\n"
        f"- event loop: {LOOP.name} with {LOOP.http_parser}, for every in-process server and the client, and passed "
        "on to every child process (stdio upstreams, CLI gateways).\n",
        flush=True,
    )
    options = {"use_uvloop": LOOP.name == "uvloop"}
    if args.profile is not None:
        anyio.run(profile, settings, args.profile, print, backend_options=options)
    else:
        anyio.run(run, settings, print, args.only, backend_options=options)
    print(f"\ntotal: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
