"""The official MCP conformance suite (`@modelcontextprotocol/conformance`) against the gateway.

The gateway (`python -m gateway.cli serve CONFIG --transport http`, a child process on a free loopback port) has
one upstream, `fixture_upstream.py --push` (its tools ask with `ctx.elicit` and `ctx.session.create_message`),
with `"prefix": ""`, reached over stdio or over streamable HTTP; the suite runs every server scenario, pending ones
included, against the gateway with `gateway-expected-failures.yml` as its baseline. So every scenario crosses the
gateway: names pass through unprefixed, resources, prompts and completion are relayed, and the upstream's
progress, logs, elicitation and sampling reach the suite's client. The 0.2.0 alpha of the suite runs too, for the
2025-11-25 and the 2026-07-28 spec versions (upstream over stdio and over HTTP), with
`gateway-expected-failures-{version}.yml`; for 2026-07-28 the upstream is pinned to that version (`MODERN_UPSTREAM`),
and its `InputRequiredResult` rounds, diagnostics and list changes (`subscriptions/listen`) cross the hop.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Generator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import anyio
import pytest
import test_server_conformance as server_suite
from toolchain import Toolchain, ensure_toolchain

from tests.support.paths import ROOT

HERE: Final = Path(__file__).resolve().parent
FIXTURE_UPSTREAM: Final = HERE / "fixture_upstream.py"
EXPECTED_FAILURES: Final = HERE / "gateway-expected-failures.yml"
NEXT_SPEC_VERSIONS: Final = ("2025-11-25", "2026-07-28")
MODERN_UPSTREAM: Final = {"protocolVersion": "2026-07-28", "sessionPolicy": "shared"}
"""The upstream config of the 2026-07-28 run: its scenarios' tools end rounds with `InputRequiredResult`s under keys
the scenarios fix, which only a 2026-07-28 upstream session can send (a shared session would otherwise speak the
handshake era, whose push questions the gateway relays under its own keys)."""
UPSTREAM_TRANSPORTS: Final = ("stdio", "http")

STARTUP_SECONDS: Final = 30.0
POLL_SECONDS: Final = 0.05
SUITE_SECONDS: Final = 360.0
"""A whole suite run's bound: each scenario starts an isolated upstream process, slow on a loaded machine."""

# Every scenario but server-sse-polling (only SHOULD checks, see the baseline) must run at least one check and
# pass all of them.
REQUIRED_SCENARIOS: Final = (
    *server_suite.REQUIRED_SCENARIOS,
    "completion-complete",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
)


def _load(name: str, path: Path) -> ModuleType:
    """A fixture module by path (never imported by name: pytest would collect its `test_*` functions)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before running it: pydantic resolves the annotations of its functions through sys.modules.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return ensure_toolchain()


@pytest.fixture(scope="module")
def upstream_fixture() -> ModuleType:
    return _load("conformance_fixture_upstream", FIXTURE_UPSTREAM)


def _child_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "ADK_MCP_GATEWAY_TOKENS"}


def _wait_answering(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    """Poll `url` until the server answers it with any HTTP status (an MCP endpoint answers a bare GET with 4xx)."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{url}: the server exited with code {process.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except urllib.error.HTTPError as answer:
            answer.close()
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        # A child process offers no readiness event; poll until the deadline.
        time.sleep(POLL_SECONDS)
    pytest.fail(f"{url} did not answer within {STARTUP_SECONDS} s; server output:\n{log_path.read_text()}")


def _descendants(pid: int) -> dict[int, bytes]:
    """The command lines of a process's descendants, by PID (Linux `/proc`; empty elsewhere)."""
    found: dict[int, bytes] = {}
    pending = [pid]
    while pending:
        parent = pending.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                for child in map(int, children.read_text().split()):
                    with contextlib.suppress(OSError):
                        found[child] = Path(f"/proc/{child}/cmdline").read_bytes()
                    pending.append(child)
    return found


def _stop_tree(process: subprocess.Popen[bytes]) -> None:
    """Stop a child's process group, then whatever it started in sessions of their own and left running.

    The SDK starts each stdio upstream in a new session, so the gateway's process group does not cover them; a
    gateway that stops cleanly closes them itself, a killed one would orphan them.
    """
    started = _descendants(process.pid)
    server_suite._stop(process)
    for pid, cmdline in started.items():
        with contextlib.suppress(OSError):  # gone already
            if Path(f"/proc/{pid}/cmdline").read_bytes() == cmdline:  # still the same process, not a reused PID
                os.killpg(os.getpgid(pid), signal.SIGKILL)


@contextlib.contextmanager
def _child(command: list[str], log_path: Path) -> Generator[subprocess.Popen[bytes]]:
    """A child process in its own process group, stopped at the end with everything it started."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=_child_env(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            yield process
        finally:
            _stop_tree(process)


@pytest.fixture(params=UPSTREAM_TRANSPORTS)
def upstream(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The gateway config entry of the fixture upstream, served over the parametrised transport."""
    callspec = getattr(request.node, "callspec", None)
    era = MODERN_UPSTREAM if callspec is not None and callspec.params.get("spec_version") == "2026-07-28" else {}
    if request.param == "stdio":
        # Each downstream session starts its own upstream process; on a busy machine that can outlast the default
        # listTimeout, and the conformance client lists once. Shared: the suite's modern requests are anonymous,
        # and an anonymous call gets an isolated upstream session of its own (for stdio, a process per call).
        yield {
            "command": sys.executable,
            "args": [str(FIXTURE_UPSTREAM), "stdio", "--push"],
            "prefix": "",
            "listTimeout": 60,
            "sessionPolicy": "shared",
            **era,
        }
        return
    port = server_suite._free_port()
    log_path = tmp_path / "upstream.log"
    with _child([sys.executable, str(FIXTURE_UPSTREAM), "http", str(port), "--push"], log_path) as process:
        url = f"http://127.0.0.1:{port}/mcp"
        _wait_answering(process, url, log_path)
        yield {"url": url, "prefix": "", **era}


@pytest.fixture
def gateway_url(upstream: dict[str, Any], tmp_path: Path) -> Iterator[str]:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"fx": upstream}}, indent=2), encoding="utf-8")
    port = server_suite._free_port()
    command = [
        sys.executable,
        "-m",
        "gateway.cli",
        "serve",
        str(config),
        "--transport",
        "http",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--state",
        str(tmp_path / "state.db"),
    ]
    with _child(command, tmp_path / "server.log") as process:
        server_suite._wait_healthy(process, port, tmp_path / "server.log")
        # The suite's DNS-rebinding scenario needs a localhost URL.
        yield f"http://localhost:{port}/mcp"


def _tool_names(checks: list[dict[str, Any]]) -> list[str]:
    return sorted(checks[0]["details"]["tools"])


@pytest.mark.timeout(480)
def test_gateway_passes_the_conformance_suite(
    toolchain: Toolchain, gateway_url: str, tmp_path: Path, upstream_fixture: ModuleType
) -> None:
    results = tmp_path / "results"
    command = [
        str(toolchain.node),
        str(toolchain.conformance),
        "server",
        "--url",
        gateway_url,
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
    report = server_suite._report(done, results, tmp_path / "server.log")
    upstream_log = tmp_path / "upstream.log"
    if upstream_log.exists():
        report += f"\n--- upstream output (tail) ---\n{upstream_log.read_text(errors='replace')[-4000:]}"

    exit_code = done.returncode
    assert exit_code == 0, report
    stdout = server_suite._ANSI_ESCAPE.sub("", done.stdout)
    counts = {m["name"]: (int(m["passed"]), int(m["failed"])) for m in server_suite._SUMMARY_LINE.finditer(stdout)}
    not_passed = [name for name in REQUIRED_SCENARIOS if not server_suite._clean_pass(counts.get(name))]
    assert not_passed == [], f"required scenarios without a clean pass: {not_passed}\n{report}"
    # The suite's checks are lax (an unknown-tool error passes some); the upstream's own names and texts must arrive.
    fixtures = upstream_fixture
    expected_tools = sorted(tool.name for tool in anyio.run(fixtures.build_server(push=True).list_tools))
    assert _tool_names(server_suite._checks(results, "tools-list")) == expected_tools
    assert server_suite._result_text(server_suite._checks(results, "tools-call-simple-text")) == fixtures.SIMPLE_TEXT
    error_checks = server_suite._checks(results, "tools-call-error")
    assert error_checks[0]["details"]["result"]["isError"] is True
    assert server_suite._result_text(error_checks) == fixtures.ERROR_TEXT


@pytest.mark.timeout(480)
@pytest.mark.parametrize("spec_version", NEXT_SPEC_VERSIONS)
def test_gateway_passes_the_next_conformance_suite(
    toolchain: Toolchain, gateway_url: str, tmp_path: Path, spec_version: str
) -> None:
    results = tmp_path / "results"
    command = [
        str(toolchain.node),
        str(toolchain.conformance_next),
        "server",
        "--url",
        gateway_url,
        "--suite",
        "all",
        "--spec-version",
        spec_version,
        "--expected-failures",
        str(HERE / f"gateway-expected-failures-{spec_version}.yml"),
        "-o",
        str(results),
    ]
    done = subprocess.run(
        command, cwd=tmp_path, env=toolchain.env(), capture_output=True, text=True, timeout=SUITE_SECONDS, check=False
    )
    report = server_suite._report(done, results, tmp_path / "server.log")
    assert done.returncode == 0, report
    stdout = server_suite._ANSI_ESCAPE.sub("", done.stdout)
    counts = {m["name"]: (int(m["passed"]), int(m["failed"])) for m in server_suite._SUMMARY_LINE.finditer(stdout)}
    # The scenarios of the hop's own features must pass cleanly in both eras.
    required = server_suite.REQUIRED_SCENARIOS
    not_passed = [name for name in required if name in counts and not server_suite._clean_pass(counts[name])]
    assert not_passed == [], f"scenarios without a clean pass: {not_passed}\n{report}"


def test_upstream_fixture_uses_the_texts_of_the_server_fixture(upstream_fixture: ModuleType) -> None:
    """Both fixtures answer the suite with the same sentences and media."""
    tools = server_suite._fixture_module()
    for name in ("SIMPLE_TEXT", "ERROR_TEXT", "EMBEDDED_TEXT", "LOG_MESSAGES", "RED_PIXEL_PNG", "SILENT_WAV"):
        assert getattr(upstream_fixture, name) == getattr(tools, name), name
    assert upstream_fixture.JSON_SCHEMA_TOOL_SCHEMA == tools.JsonSchema2020_12Tool.SCHEMA


@pytest.mark.timeout(300)
def test_gateway_stamps_cache_hints_on_every_cacheable_result(
    toolchain: Toolchain, gateway_url: str, tmp_path: Path
) -> None:
    """The suite's `caching` scenario through the hop, the read of the upstream's first resource included."""
    statuses, output = server_suite.run_caching_scenario(toolchain, gateway_url, tmp_path / "results")
    expected = (*server_suite.CACHING_CHECKS, "sep-2549-resources-read-caching-hints")
    assert {check: statuses.get(check) for check in expected} == dict.fromkeys(expected, "SUCCESS"), output
