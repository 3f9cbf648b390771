# ruff: noqa: RUF002 - ratios are written with the multiplication sign on purpose
"""Section 5: throughput with more worker processes — `gateway.cli serve --workers N` for N = 1, 2 and 4.

Each case is the CLI gateway as a child (`--stateless`, as several workers serve anyway, so one worker is measured
the same way; a file state store), forwarding echo calls to the same in-process HTTP upstream (`sessionPolicy:
shared`), with 8 sessions calling at once. The figure is calls per second; its ratio is to one worker in the same
run. The measuring client and the upstream share the machine's cores with the workers, so the ceiling is well
below N×.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from _harness import LOOP, child_process, wait_until_healthy, write_config
from _hop import ECHO
from _measure import concurrent, median
from _report import Row
from _settings import SESSIONS, Settings

from tests.support.loopback import free_port

logger = logging.getLogger("bench")

WORKER_COUNTS = (1, 2, 4)


@asynccontextmanager
async def workers_gateway(config: Path, directory: Path, workers: int) -> AsyncIterator[str]:
    """`python -m gateway.cli serve CONFIG --transport http --stateless --workers N` as a child; yields its URL."""
    port = free_port()
    argv = [
        sys.executable, "-m", "gateway.cli", "serve", str(config), "--transport", "http", "--stateless",
        "--port", str(port), "--workers", str(workers), "--state", str(directory / f"state-workers-{port}.db"),
        *LOOP.flags(),
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    async with child_process(argv, directory / "workers.log") as process:
        await wait_until_healthy(url, process)
        yield url


async def workers_section(settings: Settings, upstream: str, directory: Path) -> list[Row]:
    """8-session echo throughput through 1, 2 and 4 workers, as ratios to one worker."""
    section = f"5 workers ({SESSIONS} sessions, echo via the CLI gateway, --stateless)"
    config = write_config(
        directory, "workers", {"echo": {"url": f"{upstream}/mcp", "prefix": "", "sessionPolicy": "shared"}}
    )
    rates: dict[int, list[float]] = {count: [] for count in WORKER_COUNTS}
    for round_number in range(settings.rounds):
        for count in WORKER_COUNTS:
            logger.info("workers round %d/%d: %d worker(s)", round_number + 1, settings.rounds, count)
            async with workers_gateway(config, directory, count) as url:
                rates[count].append(await concurrent(url, ECHO, SESSIONS, settings.calls, settings.warmup))
    one = median(rates[1])
    return [
        Row(section, f"{count} worker{'s' if count > 1 else ''}", f"{SESSIONS}-session calls/s", median(rates[count]),
            "calls/s", one)
        for count in WORKER_COUNTS
    ]  # fmt: skip
