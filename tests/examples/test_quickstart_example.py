"""examples/quickstart.py runs and prints what the README says."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def test_the_quickstart_runs_and_shows_validation_missing_arguments_and_confirmation() -> None:
    done = subprocess.run(
        [sys.executable, "examples/quickstart.py"], capture_output=True, text=True, cwd=ROOT, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert '"destructiveHint": true' in done.stdout
    assert "{'items': 1}" in done.stdout
    assert "mandatory input parameters are not present:\\nname" in done.stdout
    assert "This tool call requires confirmation, please approve or reject." in done.stdout
    assert "{'cart': [{'name': 'tea', 'qty': 2}]}" in done.stdout
