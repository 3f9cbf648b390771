"""`GET /healthz` reports each upstream's state, and a failing upstream is retried with backoff, not hammered."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from hub_harness import DEADLINE, HERE, connect, gateway_http, write_config

pytestmark = pytest.mark.anyio


async def test_healthz_reports_connected_idle_and_failing_upstreams(tmp_path: Path) -> None:
    tiny = {
        "command": sys.executable,
        "args": ["-I", "-S", str(HERE / "hub_tiny_server.py")],
        "sessionPolicy": "shared",
    }
    config = write_config(
        tmp_path,
        {
            "good": tiny,
            "spare": {**tiny, "prefix": "spare"},
            "broken": {"command": str(tmp_path / "no-such-server"), "connectTimeout": 5},
        },
    )
    async with gateway_http(config) as base_url, httpx2.AsyncClient(timeout=DEADLINE) as http:
        before = (await http.get(f"{base_url}/healthz")).json()
        assert before["status"] == "ok"
        assert {name: report["state"] for name, report in before["upstreams"].items()} == {
            "good": "idle",
            "spare": "idle",
            "broken": "idle",
        }
        with anyio.fail_after(DEADLINE):
            async with connect(base_url, "legacy") as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert "good_pong" in names
                assert not any(name.startswith("broken_") for name in names)
                after = (await http.get(f"{base_url}/healthz")).json()
        assert after["status"] == "degraded"
        assert after["upstreams"]["good"]["state"] == "connected"
        assert after["upstreams"]["broken"]["state"] == "failing"
        assert "no-such-server" in after["upstreams"]["broken"]["error"]
        assert after["upstreams"]["broken"]["failures"] == 1


async def test_a_failing_upstream_is_not_restarted_on_every_request(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"broken": {"command": str(tmp_path / "no-such-server"), "connectTimeout": 5}})
    async with gateway_http(config) as base_url, httpx2.AsyncClient(timeout=DEADLINE) as http:
        with anyio.fail_after(DEADLINE):
            async with connect(base_url, "legacy") as client:
                started = time.monotonic()
                for _ in range(5):
                    await client.list_tools()
                elapsed = time.monotonic() - started
        report = (await http.get(f"{base_url}/healthz")).json()["upstreams"]["broken"]
    # Attempts wait 0.5 s, 1 s, 2 s ... after each failure, so `elapsed` seconds leave room for at most
    # 1 + log2(2 * elapsed + 1) of them (one, when the five listings fit in the first period); a gateway that
    # restarted the upstream on every request would have made five.
    allowed = 1 + math.floor(math.log2(2 * elapsed + 1))
    assert 1 <= report["failures"] <= min(allowed, 4), (report, elapsed)
