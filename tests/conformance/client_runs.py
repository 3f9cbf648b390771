"""Every client scenario of both conformance suites, played by `client_command.py`, a few at a time.

A *run* is one suite at one spec version: 0.1.16 with each scenario at its own version, the 0.2.0 alpha at
2025-11-25 and at 2026-07-28, and the alpha's scenarios neither of those includes (the 2025-03-26 back-compat ones
and the extensions) at their own versions. Each run has a baseline, `client-expected-failures-<run>.yml` (the
suite's format, a reason beside each entry), handed to the suite with every scenario: an expected failure that
passes fails as stale. Its `unplayed` section names scenarios whose checks are all skipped (our client lacks the
feature); the suite counts those as passed, the test does not.

    python tests/conformance/client_runs.py [RUN ...]   # plays them and prints one line per scenario
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.support.paths import ROOT

HERE: Final = Path(__file__).resolve().parent
CLIENT_COMMAND: Final = HERE / "client_command.py"
SCENARIO_SECONDS: Final = 30
"""The suite's own bound on one client (its default); the process gets a little more."""
_ANSI_ESCAPE: Final = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Run:
    """One suite at one spec version (None: each scenario at its own)."""

    name: str
    next_suite: bool
    spec_version: str | None
    scenarios: tuple[str, ...]

    @property
    def baseline(self) -> Path:
        return HERE / f"client-expected-failures-{self.name}.yml"

    def entries(self, section: str) -> dict[str, str]:
        """A section of the baseline (`  - name  # reason` lines under `section:`): each scenario and its reason.

        `client` lists the expected failures (the suite reads it); `unplayed` the scenarios whose every check the
        suite skips, because our client has nothing to play them with (the suite counts those as passed).
        """
        entries: dict[str, str] = {}
        current = None
        for line in self.baseline.read_text(encoding="utf-8").splitlines():
            key = re.match(r"^([A-Za-z-]+):", line)
            if key is not None:
                current = key[1]
                continue
            entry = re.match(r"^\s+-\s*([^\s#]+)\s*(?:#\s*(.*))?$", line)
            if entry is not None and current == section:
                entries[entry[1]] = entry[2] or ""
        return entries

    def expected_failures(self) -> set[str]:
        """The scenarios the baseline expects to fail."""
        return set(self.entries("client"))

    def unplayed(self) -> set[str]:
        """The scenarios the baseline says our client cannot play (every check skipped)."""
        return set(self.entries("unplayed"))


_AUTH_2025: Final = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
)
_BACKCOMPAT: Final = ("auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback")
_OFFLINE: Final = ("auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported")

RUNS: Final = (
    Run(
        "0.1.16",
        next_suite=False,
        spec_version=None,
        scenarios=(
            "initialize",
            "tools_call",
            "elicitation-sep1034-client-defaults",
            "sse-retry",
            *_AUTH_2025,
            *_BACKCOMPAT,
            *_OFFLINE,
            "auth/client-credentials-jwt",
            "auth/client-credentials-basic",
            "auth/cross-app-access-complete-flow",
        ),
    ),
    Run(
        "2025-11-25",
        next_suite=True,
        spec_version="2025-11-25",
        scenarios=(
            "initialize",
            "tools_call",
            "elicitation-sep1034-client-defaults",
            "sse-retry",
            *_AUTH_2025,
            "json-schema-2020-12-preservation",
        ),
    ),
    Run(
        "2026-07-28",
        next_suite=True,
        spec_version="2026-07-28",
        scenarios=(
            "tools_call",
            "request-metadata",
            *(name for name in _AUTH_2025),
            *_OFFLINE,
            "auth/authorization-server-migration",
            "auth/iss-supported",
            "auth/iss-not-advertised",
            "auth/iss-supported-missing",
            "auth/iss-wrong-issuer",
            "auth/iss-unexpected",
            "auth/iss-normalized",
            "auth/metadata-issuer-mismatch",
            "sep-2322-client-request-state",
            "http-standard-headers",
            "http-custom-headers",
            "http-invalid-tool-headers",
            "json-schema-ref-no-deref",
            "json-schema-2020-12-preservation",
        ),
    ),
    Run(
        "other",
        next_suite=True,
        spec_version=None,
        scenarios=(
            *_BACKCOMPAT,
            "auth/client-credentials-jwt",
            "auth/client-credentials-basic",
            "auth/enterprise-managed-authorization",
            "auth/dpop",
            "auth/dpop-nonce",
            "auth/wif-jwt-bearer",
            "sep-2640-client-no-prefetch",
            "sep-2640-client-verify-digest",
            "sep-2640-client-verify-size",
            "sep-2640-client-verify-frontmatter",
        ),
    ),
)


@dataclass(frozen=True)
class Outcome:
    """How one scenario of one run went: the suite's verdict against the baseline, and what it printed."""

    run: str
    scenario: str
    ok: bool
    output: str

    @property
    def summary(self) -> str:
        """The suite's `Passed: ...` line (or the last line it printed)."""
        lines = [line.strip() for line in self.output.splitlines() if line.strip()]
        return next((line for line in lines if line.startswith("Passed:")), lines[-1] if lines else "")


def play(node: Path, conformance: Path, env: dict[str, str], run: Run, scenario: str) -> Outcome:
    """One scenario of a run, judged by the suite against the run's baseline."""
    command = [
        str(node),
        str(conformance),
        "client",
        "--command",
        f"{sys.executable} {CLIENT_COMMAND.relative_to(ROOT)}",
        "--scenario",
        scenario,
        "--expected-failures",
        str(run.baseline),
    ]
    if run.spec_version is not None:
        command += ["--spec-version", run.spec_version]
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=SCENARIO_SECONDS + 30, check=False
        )
    except subprocess.TimeoutExpired as exc:
        return Outcome(run.name, scenario, ok=False, output=f"the suite did not finish: {exc}")
    return Outcome(run.name, scenario, done.returncode == 0, _ANSI_ESCAPE.sub("", done.stdout + done.stderr))


def play_all(runs: Iterable[Run], workers: int | None = None) -> dict[tuple[str, str], Outcome]:
    """Every scenario of `runs`, `workers` at a time (default: two per core, at most 8)."""
    from toolchain import ensure_toolchain

    toolchain = ensure_toolchain()
    env = toolchain.env()
    jobs = [(run, scenario) for run in runs for scenario in run.scenarios]
    count = workers or min(8, 2 * (os.cpu_count() or 1))

    def one(job: tuple[Run, str]) -> Outcome:
        run, scenario = job
        suite = toolchain.conformance_next if run.next_suite else toolchain.conformance
        return play(toolchain.node, suite, env, run, scenario)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return {(outcome.run, outcome.scenario): outcome for outcome in pool.map(one, jobs)}


def main(names: list[str]) -> int:
    runs = [run for run in RUNS if not names or run.name in names]
    outcomes = play_all(runs)
    for run in runs:
        expected = run.expected_failures()
        for scenario in run.scenarios:
            outcome = outcomes[run.name, scenario]
            status = "ok" if outcome.ok else "FAIL"
            marker = " (expected failure)" if scenario in expected else ""
            marker = " (unplayed)" if scenario in run.unplayed() else marker
            print(f"{run.name:<11} {scenario:<46} {status}{marker}  {outcome.summary}")
    return 0 if all(outcome.ok for outcome in outcomes.values()) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main(sys.argv[1:]))
