"""examples/adk_agent.py runs a google-adk agent on gateway toolsets; examples/adk_tools.py serves ADK tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.paths import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "GOOGLE_API_KEY"}  # the offline stand-in model
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False, env=env
    )


def test_the_adk_agent_example_calls_both_servers_and_approves_the_confirmation() -> None:
    done = _run("examples/adk_agent.py")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith('response  time_get_current_time -> {"timezone": "Europe/Paris"') for line in lines)
    assert 'response  notes_take_note -> {"topics": ["groceries"]}' in lines
    assert any(line.startswith("call      adk_request_confirmation(") for line in lines)
    assert "approving \"Allow the tool call delete_notes(topic='groceries')?\"" in lines
    assert 'response  notes_delete_notes -> {"deleted": "groceries", "existed": true}' in lines
    assert lines[-1] == "answer    Here is the time in Paris; the grocery note was written, then deleted."


def test_the_adk_tools_module_publishes_each_adk_tool_once() -> None:
    done = _run("-m", "gateway.cli", "tools", "--tools", "examples/adk_tools.py", "--json")
    assert done.returncode == 0, done.stderr
    tools = {tool["name"]: tool for tool in json.loads(done.stdout)["tools"]}
    assert sorted(tools) == ["delete_notes", "get_weather", "take_note"]
    assert tools["take_note"]["inputSchema"]["required"] == ["topic", "text"]
