"""The command line, run as a real child process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )


def test_tools_prints_a_table_of_the_published_tools() -> None:
    done = _run("tools", "--tools", "examples/functions.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["NAME", "ARGUMENTS", "SOURCE", "DESCRIPTION"]
    assert any(line.startswith("days_between") and "start, end, count?" in line for line in lines)


def test_tools_json_is_a_tools_list_result_in_wire_shape() -> None:
    done = _run("tools", "--tools", "examples/functions.py:count_words_tool", "--json")
    assert done.returncode == 0, done.stderr
    (tool,) = json.loads(done.stdout)["tools"]
    assert tool["name"] == "count_words"
    assert tool["inputSchema"]["required"] == ["text"]
    assert tool["_meta"] == {"adk-mcp-gateway/longRunning": True}
    assert tool["description"].endswith("intermediate or pending status.")


def test_a_bad_reference_exits_2_with_a_message_and_no_traceback() -> None:
    done = _run("tools", "--tools", "examples/functions.py:nope")
    assert done.returncode == 2
    assert "has no attribute 'nope'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_command_is_a_usage_error() -> None:
    done = _run()
    assert done.returncode == 2
    assert "usage: adk-mcp-gateway" in done.stderr


def test_call_finds_a_bare_upstream_command_beside_the_interpreter_when_path_lacks_the_venv() -> None:
    # What Claude Desktop does: an absolute path to the venv's gateway, and a PATH without the venv.
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    done = _run("call", "examples/gateway.json", "time_get_current_time", "--args", '{"timezone": "UTC"}', env=env)
    assert done.returncode == 0, done.stderr
    assert '"timezone": "UTC"' in done.stdout
