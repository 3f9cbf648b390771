"""The official MCP conformance suites' client scenarios against our client (`client_command.py`, an `McpToolset`).

Every client scenario of 0.1.16 and of the 0.2.0 alpha (at 2025-11-25, at 2026-07-28, and its other scenarios at
their own versions) is played once, a few at a time (`client_runs.py`); each is judged by the suite against its run's
baseline. A scenario outside the baseline must pass at least one check, with none failed or warned; one the baseline
calls unplayed must run none (so it is noticed once it is played).
"""

from __future__ import annotations

import re
import subprocess
from typing import Final

import pytest
from client_runs import RUNS, Outcome, Run, play_all
from toolchain import Toolchain, ensure_toolchain

RUNS_SECONDS: Final = 1800
"""Bound of the first test, which plays every run (a few minutes on two idle cores; far more on a loaded machine)."""
_PASSED: Final = re.compile(r"Passed: [1-9]\d*/\d+, 0 failed, 0 warnings")
_NOTHING_RAN: Final = re.compile(r"Passed: 0/0, 0 failed, 0 warnings")


@pytest.fixture(scope="module")
def toolchain() -> Toolchain:
    return ensure_toolchain()


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple[str, str], Outcome]:
    return play_all(RUNS)


@pytest.mark.timeout(RUNS_SECONDS)
@pytest.mark.parametrize(
    ("run", "scenario"),
    [pytest.param(run, scenario, id=f"{run.name}:{scenario}") for run in RUNS for scenario in run.scenarios],
)
def test_our_client_plays_the_conformance_client_scenario(
    outcomes: dict[tuple[str, str], Outcome], run: Run, scenario: str
) -> None:
    outcome = outcomes[run.name, scenario]
    assert outcome.ok, f"{run.name} {scenario} failed (baseline {run.baseline.name}):\n{outcome.output[-6000:]}"
    if scenario in run.unplayed():
        assert _NOTHING_RAN.search(outcome.output), f"{run.name} {scenario} is played now:\n{outcome.output[-3000:]}"
    elif scenario not in run.expected_failures():
        assert _PASSED.search(outcome.output), f"{run.name} {scenario} ran no check:\n{outcome.output[-3000:]}"


def _listed(toolchain: Toolchain, run: Run, spec_version: str | None) -> set[str]:
    suite = toolchain.conformance_next if run.next_suite else toolchain.conformance
    command = [str(toolchain.node), str(suite), "list", "--client"]
    if spec_version is not None:
        command += ["--spec-version", spec_version]
    done = subprocess.run(command, env=toolchain.env(), capture_output=True, text=True, timeout=60, check=True)
    return set(re.findall(r"^\s+- (\S+)", done.stdout, re.MULTILINE))


def test_the_runs_cover_every_client_scenario_of_both_suites(toolchain: Toolchain) -> None:
    for run in RUNS:
        if run.spec_version is not None:
            wanted = _listed(toolchain, run, run.spec_version)
        elif run.next_suite:
            dated = {name for other in RUNS if other.next_suite and other.spec_version for name in other.scenarios}
            wanted = _listed(toolchain, run, None) - dated
        else:
            wanted = _listed(toolchain, run, None)
        assert set(run.scenarios) == wanted, run.name
        assert len(run.scenarios) == len(set(run.scenarios)), run.name


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_each_baseline_entry_is_a_scenario_of_its_run_with_a_reason(run: Run) -> None:
    for section in ("client", "unplayed"):
        for scenario, reason in run.entries(section).items():
            assert scenario in run.scenarios, f"{run.baseline.name}: {scenario} is not a scenario of {run.name}"
            assert reason, f"{run.baseline.name}: {scenario} has no reason"
