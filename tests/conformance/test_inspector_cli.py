"""The MCP Inspector CLI (@modelcontextprotocol/inspector 2.12.0) lists and calls tools through the gateway.

The gateway serves a published upstream (`mcp-server-time`, stdio) plus a local tool, once over stdio (the
Inspector starts it) and once over streamable HTTP.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_server_conformance import _free_port, _stop, _wait_healthy  # pyright: ignore[reportPrivateUsage]
from toolchain import Toolchain, ensure_toolchain

from tests.support.paths import ROOT

CALL_SECONDS = 120


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    return ensure_toolchain()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    local = tmp_path / "local_tools.py"
    local.write_text(
        'def shout(text: str) -> str:\n    """Shout a text."""\n    return text.upper() + "!"\n', encoding="utf-8"
    )
    time_server = Path(sys.executable).with_name("mcp-server-time")
    document = {
        "mcpServers": {"time": {"command": str(time_server), "args": ["--local-timezone", "UTC"], "listTimeout": 60}},
        "tools": [str(local)],
    }
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _inspector(toolchain: Toolchain, tmp_path: Path, *args: str) -> Any:
    env = toolchain.env()
    env["HOME"] = str(tmp_path)  # the Inspector keeps a catalog under ~/.mcp-inspector
    env.pop("ADK_MCP_GATEWAY_TOKENS", None)
    done = subprocess.run(
        [str(toolchain.node), str(toolchain.inspector), "--cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=CALL_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"inspector exited {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    return json.loads(done.stdout)


@pytest.fixture
def http_gateway(config: Path, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    log_path = tmp_path / "gateway.log"
    env = {key: value for key, value in os.environ.items() if key != "ADK_MCP_GATEWAY_TOKENS"}
    command = [sys.executable, "-m", "gateway.cli", "serve", str(config), "--transport", "http"]
    command += ["--port", str(port), "--state", str(tmp_path / "state.db")]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _wait_healthy(process, port, log_path)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            _stop(process)


def _check_listing_and_calls(run: Any) -> None:
    listing = run("--method", "tools/list")
    names = sorted(tool["name"] for tool in listing["tools"])
    assert names == ["shout", "time_convert_time", "time_get_current_time"]
    shouted = run("--method", "tools/call", "--tool-name", "shout", "--tool-arg", "text=hello")
    assert shouted["content"][0]["text"] == "HELLO!"
    now = run("--method", "tools/call", "--tool-name", "time_get_current_time", "--tool-arg", "timezone=UTC")
    assert now.get("isError") is not True
    assert json.loads(now["content"][0]["text"])["timezone"] == "UTC"


def test_the_inspector_lists_and_calls_tools_through_the_gateway_over_stdio(
    toolchain: Toolchain, config: Path, tmp_path: Path
) -> None:
    gateway = [sys.executable, "-m", "gateway.cli", "serve", str(config), "--state", str(tmp_path / "state.db")]

    def run(*args: str) -> Any:
        return _inspector(toolchain, tmp_path, *args, "-q", "--", *gateway)

    _check_listing_and_calls(run)


def test_the_inspector_lists_and_calls_tools_through_the_gateway_over_http(
    toolchain: Toolchain, http_gateway: str, tmp_path: Path
) -> None:
    def run(*args: str) -> Any:
        return _inspector(toolchain, tmp_path, http_gateway, "--transport", "http", *args, "-q")

    _check_listing_and_calls(run)
