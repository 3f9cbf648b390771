"""examples/stand_in_model.py scripts any tool call, whatever its arguments are called."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def test_a_scripted_call_can_pass_an_argument_called_name() -> None:
    # Run as the examples import it: a sibling module, with examples/ on the path.
    script = (
        "from stand_in_model import tool_call\n"
        "call = tool_call('greet', name='ada', tool='x').function_call\n"
        "print(call.name, sorted(call.args.items()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT / "examples", timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "greet [('name', 'ada'), ('tool', 'x')]"
