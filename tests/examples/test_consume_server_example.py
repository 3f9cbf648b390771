"""examples/consume_server.py lists a published server's tools as declarations and calls one."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def test_the_consume_example_prints_declarations_and_a_call_result() -> None:
    done = subprocess.run(
        [sys.executable, "examples/consume_server.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert '"name": "time_get_current_time"' in done.stdout
    assert '"parameters_json_schema"' in done.stdout
    assert 'time_get_current_time -> {"timezone": "Europe/Paris", "datetime": "' in done.stdout
