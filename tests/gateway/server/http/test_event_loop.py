"""The event loop and HTTP parser `serve` runs on: uvloop and httptools from the speed extra when installed (or asked
for), asyncio's loop and h11 when forced or when the extra is missing; which one runs is logged and in `/healthz`."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream
from server_harness import DEADLINE, ROOT, TOOLS_REF, http_server, wait_until_healthy

from gateway.errors import ConfigError
from gateway.server.http.event_loop import chosen_http_parser, chosen_loop, run_on_loop, running_loop
from tests.support.loopback import free_port

_WITHOUT_SPEED_EXTRA = (
    "import sys; sys.modules['uvloop'] = None; sys.modules['httptools'] = None; "
    "from gateway.cli import main; sys.exit(main())"
)
"""Runs the CLI as if the speed extra were not installed: an import of either module raises ImportError."""


def _speed_extra() -> None:
    pytest.importorskip("uvloop", reason="the speed extra is not installed")
    pytest.importorskip("httptools", reason="the speed extra is not installed")


def _cli(*args: str, without_speed_extra: bool = False) -> list[str]:
    if without_speed_extra:
        return [sys.executable, "-c", _WITHOUT_SPEED_EXTRA, *args]
    return [sys.executable, "-m", "gateway.cli", *args]


@asynccontextmanager
async def _serving(command: Sequence[str], log_path: Path) -> AsyncGenerator[dict[str, object]]:
    """Run `command` (a `serve --transport http --port PORT` at the end) and yield its `/healthz` details."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        full = [*command, "--transport", "http", "--port", str(port)]
        async with await anyio.open_process(full, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log) as process:
            try:
                await wait_until_healthy(base_url)
                async with httpx2.AsyncClient() as http:
                    with anyio.fail_after(DEADLINE):
                        yield (await http.get(f"{base_url}/healthz")).json()
            finally:
                process.terminate()
                with anyio.fail_after(DEADLINE):
                    await process.wait()


def test_auto_runs_on_uvloop_when_it_is_installed_and_asyncio_is_always_available() -> None:
    _speed_extra()
    assert run_on_loop(_running_loop) == "uvloop"
    assert run_on_loop(_running_loop, loop="uvloop") == "uvloop"
    assert run_on_loop(_running_loop, loop="asyncio") == "asyncio"
    assert chosen_http_parser() == "httptools"
    assert chosen_http_parser("h11") == "h11"


def test_without_the_speed_extra_auto_falls_back_and_asking_for_it_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)
    monkeypatch.setitem(sys.modules, "httptools", None)
    assert chosen_loop() == "asyncio"
    assert chosen_http_parser() == "h11"
    assert run_on_loop(_running_loop) == "asyncio"
    with pytest.raises(ConfigError, match=r"adk-mcp-gateway\[speed\]"):
        chosen_loop("uvloop")
    with pytest.raises(ConfigError, match=r"adk-mcp-gateway\[speed\]"):
        chosen_http_parser("httptools")


async def _running_loop() -> str:
    return running_loop()


@pytest.mark.anyio
async def test_an_in_process_server_serves_with_either_http_parser() -> None:
    _speed_extra()
    for parser in ("h11", "httptools"):
        async with http_server(http_parser=parser) as base_url, httpx2.AsyncClient() as http:
            with anyio.fail_after(DEADLINE):
                health = await http.get(f"{base_url}/healthz")
        assert health.json()["event_loop"] == "asyncio"  # the test's own loop


@pytest.mark.anyio
async def test_serve_over_http_runs_on_uvloop_with_httptools_by_default_and_says_so(tmp_path: Path) -> None:
    _speed_extra()
    command = _cli("serve", "--tools", TOOLS_REF, "--state", str(tmp_path / "s.db"))
    async with _serving(command, tmp_path / "stderr.log") as health:
        assert health["event_loop"] == "uvloop"
    assert "on uvloop with httptools" in (tmp_path / "stderr.log").read_text()


@pytest.mark.anyio
async def test_serve_loop_asyncio_forces_the_plain_loop_and_h11(tmp_path: Path) -> None:
    command = _cli("serve", "--tools", TOOLS_REF, "--state", str(tmp_path / "s.db"), "--loop", "asyncio")
    async with _serving([*command, "--http-parser", "h11"], tmp_path / "stderr.log") as health:
        assert health["event_loop"] == "asyncio"
    assert "on asyncio with h11" in (tmp_path / "stderr.log").read_text()


@pytest.mark.anyio
async def test_serve_without_the_speed_extra_falls_back_to_asyncio_and_h11(tmp_path: Path) -> None:
    command = _cli("serve", "--tools", TOOLS_REF, "--state", str(tmp_path / "s.db"), without_speed_extra=True)
    async with _serving(command, tmp_path / "stderr.log") as health:
        assert health["event_loop"] == "asyncio"
    assert "on asyncio with h11" in (tmp_path / "stderr.log").read_text()


@pytest.mark.parametrize(
    ("flags", "missing"),
    [
        pytest.param(["--loop", "uvloop"], "uvloop", id="loop"),
        pytest.param(["--transport", "http", "--http-parser", "httptools"], "httptools", id="http-parser"),
    ],
)
def test_asking_for_the_speed_extra_when_it_is_missing_exits_2_naming_it(
    tmp_path: Path, flags: list[str], missing: str
) -> None:
    command = _cli("serve", "--tools", TOOLS_REF, "--state", str(tmp_path / "s.db"), *flags, without_speed_extra=True)
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=DEADLINE, check=False)
    assert done.returncode == 2, done.stderr
    assert f"{missing} is not installed" in done.stderr
    assert 'pip install "adk-mcp-gateway[speed]"' in done.stderr
    assert "Traceback" not in done.stderr
    assert "Serving" not in done.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
async def test_serve_over_stdio_answers_on_either_loop_and_logs_which(tmp_path: Path, loop: str) -> None:
    if loop == "uvloop":
        _speed_extra()
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    ]  # fmt: skip
    command = _cli("serve", "--tools", TOOLS_REF, "--state", str(tmp_path / "s.db"), "--loop", loop)
    log_path = tmp_path / "stderr.log"
    with log_path.open("wb") as log:
        async with await anyio.open_process(command, cwd=ROOT, stderr=log) as process:
            assert process.stdin is not None
            assert process.stdout is not None
            await process.stdin.send("".join(json.dumps(request) + "\n" for request in requests).encode())
            replies: list[dict[str, Any]] = []
            buffer = ""
            with anyio.fail_after(DEADLINE):
                async for chunk in TextReceiveStream(process.stdout):
                    buffer += chunk
                    *lines, buffer = buffer.split("\n")
                    replies.extend(json.loads(line) for line in lines if line.strip())
                    if len(replies) == len(requests) - 1:
                        break
            await process.stdin.aclose()
            with anyio.fail_after(DEADLINE):
                returncode = await process.wait()
    assert returncode == 0
    assert [reply.get("id") for reply in replies] == [1, 2]
    assert replies[1]["result"]["tools"]
    assert f"over stdio, on {loop}" in log_path.read_text()
