"""The upstreams' `instructions` reach the gateway's clients: merged, one section per upstream labelled by its
prefix, in the `initialize` result (handshake era) and in `server/discover` (modern era), after the gateway's own."""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from hub_harness import HERE, SLOW_START, Mode, Target, connect, gateway_stdio, write_config

from gateway import hub
from gateway.config import load_config
from gateway.state import InMemoryStateStore
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

APPS_SERVER = str(HERE / "hub_apps_server.py")
TINY_SERVER = str(HERE / "hub_tiny_server.py")
OWN = "The gateway's own instructions."
UPSTREAMS = (
    '## Upstream "alpha" (tools named alpha_*)\nThe alpha server tells the time; ask get_time.\n\n'
    '## Upstream "beta" (tools named b_*)\nThe beta server tells the time; ask get_time.'
)


def _config(directory: Path) -> Path:
    return write_config(
        directory,
        {
            "alpha": {"command": sys.executable, "args": [APPS_SERVER, "alpha"], **SLOW_START},
            "beta": {"command": sys.executable, "args": [APPS_SERVER, "beta"], "prefix": "b", **SLOW_START},
            # Says nothing: it has no section.
            "tiny": {"command": sys.executable, "args": ["-I", "-S", TINY_SERVER], **SLOW_START},
        },
    )


@asynccontextmanager
async def _gateway(served_over: str, directory: Path) -> AsyncGenerator[Target]:
    config = _config(directory)
    if served_over == "stdio":
        yield gateway_stdio(config, directory / "state.sqlite")
        return
    loaded = load_config(config)
    server = hub.gateway_server(
        hub.gateway_tools(loaded), name=loaded.name, state_store=InMemoryStateStore(), instructions=OWN
    )
    async with serving_tools(server) as base_url:
        yield base_url


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_handshake_and_discover_carry_each_upstreams_instructions_under_its_prefix(
    tmp_path: Path, mode: Mode
) -> None:
    async with _gateway("http", tmp_path) as target, connect(target, mode) as client:
        instructions = client.instructions
        era = client.protocol_version
    assert era == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert instructions == f"{OWN}\n\n{UPSTREAMS}"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_gateway_served_over_stdio_says_them_too(tmp_path: Path, mode: Mode) -> None:
    async with _gateway("stdio", tmp_path) as target, connect(target, mode) as client:
        instructions = client.instructions
    assert instructions == UPSTREAMS


async def test_an_upstream_that_cannot_start_leaves_only_its_section_out(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "alpha": {"command": sys.executable, "args": [APPS_SERVER, "alpha"], **SLOW_START},
            "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"], "listTimeout": DEADLINE},
        },
    )
    loaded = load_config(config)
    server = hub.gateway_server(hub.gateway_tools(loaded), name=loaded.name, state_store=InMemoryStateStore())
    async with serving_tools(server) as base_url, connect(base_url, "legacy") as client:
        instructions = client.instructions
    assert instructions == '## Upstream "alpha" (tools named alpha_*)\nThe alpha server tells the time; ask get_time.'
