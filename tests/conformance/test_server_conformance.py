"""The official MCP conformance suite (`@modelcontextprotocol/conformance`) against our server mode.

The server runs as a child process (`python -m gateway.cli serve`) publishing `fixture_tools.py` over
streamable HTTP on a free loopback port; the suite runs every server scenario, pending ones included, with
`expected-failures.yml` as its baseline.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import pytest
from toolchain import Toolchain, ensure_toolchain

from tests.support.paths import ROOT

HERE: Final = Path(__file__).resolve().parent
FIXTURE_TOOLS: Final = HERE / "fixture_tools.py"
EXPECTED_FAILURES: Final = HERE / "expected-failures.yml"

STARTUP_SECONDS: Final = 30.0
HEALTH_POLL_SECONDS: Final = 0.05
SUITE_SECONDS: Final = 300.0
SHUTDOWN_SECONDS: Final = 10.0

# Scenarios that must run at least one check and pass all of them (a scenario that bails out early with only a
# warning, as server-sse-multiple-streams does without a session id, reports "0 passed, 0 failed").
REQUIRED_SCENARIOS: Final = (
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "json-schema-2020-12",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
_ANSI_ESCAPE: Final = re.compile(r"\x1b\[[0-9;]*m")
_SUMMARY_LINE: Final = re.compile(r"^[✓✗] (?P<name>[\w-]+): (?P<passed>\d+) passed, (?P<failed>\d+) failed$", re.M)


def _fixture_module() -> ModuleType:
    """`fixture_tools.py` under a name of its own (tests/gateway/server has a `fixture_tools` module too)."""
    spec = importlib.util.spec_from_file_location("conformance_fixture_tools", FIXTURE_TOOLS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return ensure_toolchain()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_healthy(process: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    url = f"http://127.0.0.1:{port}/healthz"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"The server exited with code {process.returncode} before it was healthy:\n{log_path.read_text()}"
            )
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        # A child process offers no readiness event; poll its health endpoint until the deadline.
        time.sleep(HEALTH_POLL_SECONDS)
    pytest.fail(f"GET {url} did not answer 200 within {STARTUP_SECONDS} s; server output:\n{log_path.read_text()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server's whole process group: SIGTERM, then SIGKILL after a bounded wait."""
    with contextlib.suppress(ProcessLookupError):  # it may exit on its own meanwhile
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=SHUTDOWN_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=SHUTDOWN_SECONDS)


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    log_path = tmp_path / "server.log"
    env = {key: value for key, value in os.environ.items() if key != "ADK_MCP_GATEWAY_TOKENS"}
    command = [
        sys.executable,
        "-m",
        "gateway.cli",
        "serve",
        "--tools",
        str(FIXTURE_TOOLS),
        "--transport",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--state",
        str(tmp_path / "state.db"),
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _wait_healthy(process, port, log_path)
            # The suite's DNS-rebinding scenario needs a localhost URL.
            yield f"http://localhost:{port}/mcp"
        finally:
            _stop(process)


def _checks(results: Path, scenario: str) -> list[dict[str, Any]]:
    runs = sorted(results.glob(f"server-{scenario}-[0-9]*/checks.json"))
    assert runs, f"the suite wrote no checks for {scenario} under {results}"
    return json.loads(runs[-1].read_text(encoding="utf-8"))


def _failed_checks(results: Path) -> list[str]:
    lines: list[str] = []
    for path in sorted(results.glob("server-*/checks.json")):
        for check in json.loads(path.read_text(encoding="utf-8")):
            if check.get("status") == "FAILURE":
                lines.append(f"{path.parent.name}: [{check['id']}] {check.get('errorMessage', '')}")
    return lines


def _report(done: subprocess.CompletedProcess[str], results: Path, log_path: Path) -> str:
    stdout = _ANSI_ESCAPE.sub("", done.stdout)
    summary = stdout[stdout.find("=== SUMMARY ===") :] if "=== SUMMARY ===" in stdout else stdout
    failed = "\n".join(_failed_checks(results)) or "(none)"
    server_log = log_path.read_text(encoding="utf-8", errors="replace")[-4000:]
    return (
        f"conformance exited with {done.returncode}\n{summary}\n--- failed checks ---\n{failed}\n"
        f"--- stderr ---\n{done.stderr[-4000:]}\n--- server output (tail) ---\n{server_log}"
    )


def _clean_pass(count: tuple[int, int] | None) -> bool:
    return count is not None and count[0] > 0 and count[1] == 0


def _result_text(checks: list[dict[str, Any]]) -> str:
    result = checks[0]["details"]["result"]
    return result["content"][0]["text"]


@pytest.mark.timeout(900)
def test_server_mode_passes_the_conformance_suite_except_resources_prompts_and_completion(
    toolchain: Toolchain, server_url: str, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    command = [
        str(toolchain.node),
        str(toolchain.conformance),
        "server",
        "--url",
        server_url,
        "--suite",
        "all",
        "--expected-failures",
        str(EXPECTED_FAILURES),
        "-o",
        str(results),
    ]
    done = subprocess.run(
        command, cwd=tmp_path, env=toolchain.env(), capture_output=True, text=True, timeout=SUITE_SECONDS, check=False
    )
    report = _report(done, results, tmp_path / "server.log")

    exit_code = done.returncode
    assert exit_code == 0, report
    stdout = _ANSI_ESCAPE.sub("", done.stdout)
    counts = {m["name"]: (int(m["passed"]), int(m["failed"])) for m in _SUMMARY_LINE.finditer(stdout)}
    not_passed = [name for name in REQUIRED_SCENARIOS if not _clean_pass(counts.get(name))]
    assert not_passed == [], f"required scenarios without a clean pass: {not_passed}\n{report}"
    # The suite only looks for some text in these two; the fixtures' exact sentences must arrive.
    fixtures = _fixture_module()
    assert _result_text(_checks(results, "tools-call-simple-text")) == fixtures.SIMPLE_TEXT
    error_checks = _checks(results, "tools-call-error")
    assert error_checks[0]["details"]["result"]["isError"] is True
    assert _result_text(error_checks) == fixtures.ERROR_TEXT


CACHING_CHECKS: Final = (
    "sep-2549-tools-list-caching-hints",
    "sep-2549-prompts-list-caching-hints",
    "sep-2549-resources-list-caching-hints",
    "sep-2549-resources-templates-list-caching-hints",
    "sep-2549-ttl-non-negative",
    "sep-2549-cache-scope-valid",
)
"""The checks of the suite's `caching` scenario (SEP-2549) that every server must pass (`resources/read` needs a
resource to read: a server of local tools lists none to a new session, and the suite skips that check)."""


def run_caching_scenario(toolchain: Toolchain, url: str, results: Path) -> tuple[dict[str, str], str]:
    """The 0.2.0 alpha suite's `caching` scenario (spec 2026-07-28) against `url`: each check's status, by id, and
    the suite's output for a failure message."""
    command = [
        str(toolchain.node),
        str(toolchain.conformance_next),
        "server",
        "--url",
        url,
        "--scenario",
        "caching",
        "--spec-version",
        "2026-07-28",
        "-o",
        str(results),
    ]
    done = subprocess.run(
        command,
        cwd=results.parent,
        env=toolchain.env(),
        capture_output=True,
        text=True,
        timeout=SUITE_SECONDS,
        check=False,
    )
    output = f"exit {done.returncode}\n{_ANSI_ESCAPE.sub('', done.stdout)[-6000:]}\n{done.stderr[-2000:]}"
    assert done.returncode == 0, output
    return {check["id"]: check["status"] for check in _checks(results, "caching")}, output


@pytest.mark.timeout(300)
def test_server_mode_stamps_cache_hints_on_every_cacheable_result(
    toolchain: Toolchain, server_url: str, tmp_path: Path
) -> None:
    statuses, output = run_caching_scenario(toolchain, server_url, tmp_path / "results")
    assert {check: statuses.get(check) for check in CACHING_CHECKS} == dict.fromkeys(CACHING_CHECKS, "SUCCESS"), output
