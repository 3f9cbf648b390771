"""The command line, run as a real child process."""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

CLI_TOOLS = "tests/gateway/cli/cli_tools.py"


def _run(*args: str, env: dict[str, str] | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        input=stdin,
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


@pytest.mark.parametrize(
    "args",
    [
        ["-v", "tools", "--tools", "examples/functions.py"],
        ["tools", "--tools", "examples/functions.py", "-v"],
        ["tools", "--log-level", "debug", "--tools", "examples/functions.py"],
        ["--log-level", "DEBUG", "tools", "--tools", "examples/functions.py"],
    ],
)
def test_logging_flags_work_before_or_after_the_subcommand(args: list[str]) -> None:
    done = _run(*args)
    assert done.returncode == 0, done.stderr
    assert "DEBUG" in done.stderr
    assert done.stdout.startswith("NAME")


def test_the_log_level_comes_from_the_environment() -> None:
    quiet = _run("tools", "--tools", "examples/functions.py")
    loud = _run("tools", "--tools", "examples/functions.py", env={**os.environ, "ADK_MCP_GATEWAY_LOG_LEVEL": "debug"})
    assert "DEBUG" not in quiet.stderr
    assert "DEBUG" in loud.stderr


def test_json_logs_are_one_object_per_line() -> None:
    done = _run("tools", "--tools", "examples/functions.py", "-v", "--log-format", "json")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stderr.splitlines()]
    assert records
    assert all({"time", "level", "logger", "message"} <= set(record) for record in records)


def test_a_bad_port_in_the_environment_is_a_usage_error_naming_the_variable() -> None:
    done = _run("serve", "--tools", "examples/functions.py", env={**os.environ, "ADK_MCP_GATEWAY_PORT": "eighty"})
    assert done.returncode == 2
    assert "ADK_MCP_GATEWAY_PORT" in done.stderr
    assert "Traceback" not in done.stderr


def test_serving_is_announced_only_once_the_port_is_bound(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run(
            "serve", "--tools", "examples/functions.py", "--transport", "http", "--state", str(tmp_path / "s.db"),
            env={**os.environ, "ADK_MCP_GATEWAY_PORT": str(port)},
        )  # fmt: skip
    assert done.returncode == 2
    assert f"127.0.0.1:{port}" in done.stderr
    assert "Serving" not in done.stderr


def test_serve_takes_host_and_port_from_the_environment_and_says_where_it_listens(tmp_path: Path) -> None:
    env = {**os.environ, "ADK_MCP_GATEWAY_HOST": "127.0.0.1", "ADK_MCP_GATEWAY_PORT": "0"}
    command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", "examples/functions.py"]
    command += ["--transport", "http", "--state", str(tmp_path / "s.db")]
    with subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True) as process:
        try:
            assert process.stderr is not None
            line = ""
            for _ in range(20):
                line = process.stderr.readline()
                if "Serving" in line or not line:
                    break
            assert "Serving" in line, line
            port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
            assert port != 0
            with socket.create_connection(("127.0.0.1", port), timeout=10):
                pass
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_the_license_file_is_the_one_pyproject_names() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'license = "Apache-2.0"' in pyproject
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text
    assert "Version 2.0, January 2004" in text


def test_call_with_tools_and_no_config_takes_key_value_arguments_typed_by_the_schema() -> None:
    done = _run("call", "--tools", "examples/functions.py", "days_between", "start=2024-01-01", "end=2024-03-01")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"result": 60}
    counted = _run("call", "--tools", "examples/functions.py", "convert_temperature", "value=100", "to=fahrenheit")
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout) == {"value": 212.0, "unit": "fahrenheit"}
    wrong = _run("call", "--tools", "examples/functions.py", "convert_temperature", "value=1", "to=kelvin")
    assert wrong.returncode == 2
    assert "Parameter 'to': expected one of \"celsius\", \"fahrenheit\" (got 'kelvin')" in wrong.stderr


def test_a_key_value_the_schema_cannot_take_is_a_usage_error_naming_it() -> None:
    done = _run("call", "--tools", "examples/functions.py", "convert_temperature", "value=hot")
    assert done.returncode == 2
    assert "Parameter 'value': expected number (got 'hot')" in done.stderr
    unknown = _run("call", "--tools", "examples/functions.py", "convert_temperature", "valu=1")
    assert unknown.returncode == 2
    assert "Parameter 'valu': the tool takes no such argument (its arguments: value, to)" in unknown.stderr
    assert "Traceback" not in done.stderr + unknown.stderr


def test_call_asks_a_tools_form_on_the_terminal_typing_each_answer() -> None:
    done = _run("call", "--tools", CLI_TOOLS, "ask_profile", stdin="Grace\nforty\n85\n\nyes\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "action": "accept",
        "content": {"name": "Grace", "age": 85, "colour": "green", "subscribe": True},
    }
    assert "Tell me about you." in done.stderr
    assert "Parameter 'age': expected integer (got 'forty')" in done.stderr


def test_call_cancels_a_form_at_the_end_of_input() -> None:
    done = _run("call", "--tools", CLI_TOOLS, "ask_profile", stdin="Grace\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"action": "cancel", "content": None}


def test_call_prints_the_url_of_a_url_elicitation() -> None:
    done = _run("call", "--tools", CLI_TOOLS, "visit")
    assert done.returncode == 0, done.stderr
    assert "Open this URL to continue: https://example.com/sign-in?x=1" in done.stderr
    assert json.loads(done.stdout) == {"action": "accept"}


def test_call_refuses_sampling_clearly_unless_a_sampling_command_is_given() -> None:
    refused = _run("call", "--tools", CLI_TOOLS, "summarize", "text=long story")
    assert refused.returncode == 1
    assert "--sample-with" in json.loads(refused.stdout)["error"]
    command = f'{sys.executable} -c "import sys; print(sys.stdin.read().strip().upper())"'
    answered = _run("call", "--tools", CLI_TOOLS, "summarize", "text=long story", "--sample-with", command)
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout) == {"result": "USER: SUMMARISE: LONG STORY"}


def test_a_tools_exception_prints_its_message_and_only_v_adds_the_traceback() -> None:
    plain = _run("call", "--tools", CLI_TOOLS, "boom")
    verbose = _run("call", "--tools", CLI_TOOLS, "boom", "-v")
    assert plain.returncode == verbose.returncode == 1
    assert "the widget is broken" in json.loads(plain.stdout)["error"]
    assert "Traceback" not in plain.stderr
    assert "Traceback" in verbose.stderr


def test_a_tools_print_goes_to_stderr_and_stdout_holds_only_the_result() -> None:
    done = _run("call", "--tools", CLI_TOOLS, "chatty", "text=hi")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"result": "HI"}
    assert "chatter from the tool" in done.stderr


def test_a_confirmation_is_refused_without_a_terminal_approved_by_yes_and_asked_on_a_terminal() -> None:
    refused = _run("call", "--tools", CLI_TOOLS, "empty_bin")
    approved = _run("call", "--tools", CLI_TOOLS, "empty_bin", "--yes")
    assert refused.returncode == 1
    assert json.loads(refused.stdout) == {"error": "This tool call is rejected."}
    assert "pass --yes" in refused.stderr
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout) == {"result": "emptied"}
    controller, terminal = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "call", "--tools", CLI_TOOLS, "empty_bin"],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    ) as process:
        os.close(terminal)
        os.write(controller, b"y\n")
        stdout, stderr = process.communicate(timeout=60)
    os.close(controller)
    assert process.returncode == 0, stderr
    assert json.loads(stdout) == {"result": "emptied"}
    assert "Allow the tool call empty_bin()? [y/N]" in stderr


FORGED = "2026-01-01 00:00:00,000 INFO gateway.server.observe.request_log: tools/call add upstream=- 1.0 ms ok"


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_control_characters_a_client_sends_are_escaped_in_the_log_so_it_cannot_forge_lines(
    tmp_path: Path, log_format: str
) -> None:
    # A tool name is the client's to choose, and the request log writes it: a line break in it would start a line
    # of the client's making (U+2028 too, for readers that split lines as Python does), and ESC drives terminals.
    name = f"nope\n{FORGED}\r\u2028{FORGED}\x1b[2K"
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": {}}},
    ]  # fmt: skip
    command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", "examples/functions.py"]
    command += ["--state", str(tmp_path / "s.db"), "--log-format", log_format]
    with subprocess.Popen(
        command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write("".join(json.dumps(message) + "\n" for message in messages))
        process.stdin.flush()
        # The answer to the call means it was logged (the request log writes before the answer is sent).
        replies = [json.loads(process.stdout.readline()) for _ in range(2)]
        _, stderr = process.communicate(timeout=60)
    assert replies[1]["id"] == 2
    lines = stderr.splitlines()
    assert not [line for line in lines if FORGED in line and "nope" not in line], stderr
    assert "\x1b" not in stderr
    if log_format == "json":
        records = [json.loads(line) for line in lines]
        (call,) = [record for record in records if record.get("tool") == name]
        assert call["outcome"] == "unknown_tool"
    else:
        (call,) = [line for line in lines if "tools/call nope" in line]
        assert call.endswith("unknown_tool")
        assert "nope\\n2026-01-01" in call
