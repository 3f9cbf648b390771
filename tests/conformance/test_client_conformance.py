"""The official MCP conformance suite's client scenarios against our client (`client_command.py`, an `McpToolset`).

Each scenario starts a mock server, runs the command with the server's URL appended, and fails on any failed or
warned check, or on a non-zero exit of the client.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
from toolchain import Toolchain, ensure_toolchain

from tests.support.paths import ROOT

HERE: Final = Path(__file__).resolve().parent
CLIENT_COMMAND: Final = HERE / "client_command.py"
SCENARIO_SECONDS: Final = 120.0
SCENARIOS: Final = ("initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry")
_ANSI_ESCAPE: Final = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return ensure_toolchain()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_our_client_passes_the_conformance_client_scenario(toolchain: Toolchain, scenario: str) -> None:
    command = [
        str(toolchain.node),
        str(toolchain.conformance),
        "client",
        "--command",
        f"{sys.executable} {CLIENT_COMMAND.relative_to(ROOT)}",
        "--scenario",
        scenario,
    ]
    done = subprocess.run(
        command,
        cwd=ROOT,
        env=toolchain.env(),
        capture_output=True,
        text=True,
        timeout=SCENARIO_SECONDS,
        check=False,
    )
    output = _ANSI_ESCAPE.sub("", done.stdout + done.stderr)
    assert done.returncode == 0, f"conformance client --scenario {scenario} failed:\n{output[-6000:]}"
    assert "OVERALL: PASSED" in output
    assert re.search(r"Passed: [1-9]\d*/\d+, 0 failed, 0 warnings", output), output[-3000:]
