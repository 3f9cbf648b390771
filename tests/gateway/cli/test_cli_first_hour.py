"""What a new user meets in the first hour, run as the installed `adk-mcp-gateway` command."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

GATEWAY = str(Path(sys.executable).parent / "adk-mcp-gateway")

_AGENT = """\
from google.adk.agents import LlmAgent

from helper import shout

root_agent = LlmAgent(name="shouter", model="gemini-2.0-flash", instruction="Shout.", tools=[shout])
"""

_HELPER = '''\
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()
'''


def _gateway(*args: str, cwd: Path, pythonpath: str | None = None) -> subprocess.CompletedProcess[str]:
    # The installed command, as a user runs it: no PYTHONPATH pointing anywhere unless given.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([GATEWAY, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def agent_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "my_agent.py").write_text(_AGENT)
    (folder / "helper.py").write_text(_HELPER)
    return folder


def test_an_agent_module_in_the_working_directory_is_found_with_its_siblings(agent_folder: Path) -> None:
    done = _gateway("tools", "--agent", "my_agent:root_agent", cwd=agent_folder)
    assert done.returncode == 0, done.stderr
    assert "shouter" in done.stdout


def test_an_agent_file_imports_the_modules_beside_it(agent_folder: Path) -> None:
    done = _gateway("tools", "--agent", "agents/my_agent.py:root_agent", cwd=agent_folder.parent)
    assert done.returncode == 0, done.stderr
    assert "shouter" in done.stdout


def test_a_tools_file_imports_the_modules_beside_it(agent_folder: Path) -> None:
    (agent_folder / "loud.py").write_text("from helper import shout\n\n__all__ = ['shout']\n")
    done = _gateway("tools", "--tools", "agents/loud.py", cwd=agent_folder.parent)
    assert done.returncode == 0, done.stderr
    assert "shout" in done.stdout


def test_check_shows_the_last_lines_an_upstream_wrote_to_stderr_when_it_fails(tmp_path: Path) -> None:
    script = "import sys\nfor n in range(30): print('noise', n, file=sys.stderr)\n"
    script += "print('error: invalid peer certificate: UnknownIssuer', file=sys.stderr)\nsys.exit(1)\n"
    (tmp_path / "broken_server.py").write_text(script)
    config = {"mcpServers": {"broken": {"command": sys.executable, "args": ["broken_server.py"]}}}
    (tmp_path / "gateway.json").write_text(json.dumps(config))
    done = _gateway("check", "gateway.json", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    fail = next(index for index, line in enumerate(lines) if line.startswith("  FAIL  broken:"))
    shown = list(itertools.takewhile(lambda line: line.startswith("          | "), lines[fail + 1 :]))
    assert 1 < len(shown) <= 10
    assert shown[-1] == "          | error: invalid peer certificate: UnknownIssuer", done.stdout
    assert "noise 0" not in done.stdout


def _config_with_an_upstream_that_leaves_a_mark(folder: Path) -> Path:
    """A config whose one stdio upstream writes `started` in `folder` when it starts (and then exits)."""
    (folder / "marking_server.py").write_text("from pathlib import Path\nPath('started').write_text('')\n")
    config = {"mcpServers": {"marking": {"command": sys.executable, "args": ["marking_server.py"]}}}
    (folder / "gateway.json").write_text(json.dumps(config))
    return folder / "started"


def test_a_port_in_use_is_reported_before_any_upstream_starts(tmp_path: Path) -> None:
    started = _config_with_an_upstream_that_leaves_a_mark(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = _gateway("serve", "gateway.json", "--transport", "http", "--port", port, "--state", "s.db", cwd=tmp_path)
    assert done.returncode == 2
    assert f"Cannot listen on 127.0.0.1:{port}" in done.stderr
    assert not started.exists()


def test_a_missing_metrics_extra_is_reported_before_any_upstream_starts(tmp_path: Path) -> None:
    started = _config_with_an_upstream_that_leaves_a_mark(tmp_path)
    # prometheus-client is installed here; a package of that name that cannot be imported stands in for its absence.
    (tmp_path / "shadow" / "prometheus_client").mkdir(parents=True)
    (tmp_path / "shadow" / "prometheus_client" / "__init__.py").write_text("raise ImportError('not installed')\n")
    env_path = str(tmp_path / "shadow")
    done = _gateway(
        "serve", "gateway.json", "--transport", "http", "--port", "0", "--metrics", "--state", "s.db",
        cwd=tmp_path, pythonpath=env_path,
    )  # fmt: skip
    assert done.returncode != 0
    assert "adk-mcp-gateway[metrics]" in done.stderr
    assert "Traceback" not in done.stderr
    assert not started.exists()


def test_check_counts_one_upstream_and_one_tool_in_the_singular(tmp_path: Path) -> None:
    server = "from mcp.server.mcpserver import MCPServer\n\napp = MCPServer('one')\n\n\n@app.tool()\n"
    server += "def ping() -> str:\n    return 'pong'\n\n\napp.run()\n"
    (tmp_path / "one_tool_server.py").write_text(server)
    config = {"mcpServers": {"one": {"command": sys.executable, "args": ["one_tool_server.py"]}}, "tools": ["t.py"]}
    (tmp_path / "t.py").write_text('def hello() -> str:\n    """Greet."""\n    return "hi"\n')
    (tmp_path / "gateway.json").write_text(json.dumps(config))
    done = _gateway("check", "gateway.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "config gateway.json: valid (1 upstream, 1 tool ref)"
    assert lines[1].startswith("  ok    one: 1 tool, protocol ")


def test_every_serve_option_says_what_it_does() -> None:
    done = subprocess.run([GATEWAY, "serve", "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    start = next(index for index, line in enumerate(lines) if line.lstrip().startswith("--transport "))
    said = lines[start].split("}", 1)[1] + " ".join(
        itertools.takewhile(lambda line: line.startswith(" " * 10), lines[start + 1 :])
    )
    assert "stdio" in said
    assert "/mcp" in said
