"""`adk-mcp-gateway check|tools|call CONFIG`, run as real child processes against real upstreams."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from hub_harness import DEADLINE, LOCAL_TOOLS, ROOT, child_env, upstream_http, upstream_stdio, write_config

pytestmark = pytest.mark.anyio


class Done:
    """A finished command: its exit code and decoded output."""

    def __init__(self, returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.returncode = returncode
        self.stdout = stdout.decode()
        self.stderr = stderr.decode()


async def cli(*args: str, stdin: str = "") -> Done:
    """Run `python -m gateway.cli ARGS` without blocking the event loop (upstreams in this process must answer)."""
    env = {**os.environ, **child_env()}
    env.pop("HUB_TEST_UNSET_VARIABLE", None)
    with anyio.fail_after(DEADLINE):
        done = await anyio.run_process(
            [sys.executable, "-m", "gateway.cli", *args], input=stdin.encode(), cwd=ROOT, env=env, check=False
        )
    return Done(done.returncode, done.stdout, done.stderr)


async def test_check_reports_each_upstream_and_exits_1_when_one_fails(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(
            tmp_path,
            {"notes": {"url": url}, "broken": {"command": str(tmp_path / "no-such-server")}},
            tools=[LOCAL_TOOLS],
        )
        failing = await cli("check", str(config))
        write_config(tmp_path, {"notes": {"url": url}}, tools=[LOCAL_TOOLS])
        passing = await cli("check", str(config))

    assert failing.returncode == 1, failing.stderr
    lines = failing.stdout.splitlines()
    assert lines[0] == f"config {config}: valid (2 upstreams, 1 tool ref)"
    assert lines[1].startswith("  ok    notes: 11 tools, protocol ")
    assert lines[2].startswith(f"  FAIL  broken: Cannot connect to upstream {tmp_path / 'no-such-server'}")
    assert lines[3] == "  ok    local tools: 1"
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "FAIL" not in passing.stdout


async def test_check_reports_two_sources_publishing_one_name(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"a": {"url": url, "prefix": ""}}, tools=[f"{LOCAL_TOOLS}:echo"])
        done = await cli("check", str(config))
    assert done.returncode == 1
    assert "  FAIL  names: 'echo' is published by upstream 'a' and local, so serve refuses to start." in (done.stdout)


async def test_serve_refuses_to_start_when_two_sources_publish_one_name(tmp_path: Path) -> None:
    async with upstream_http() as url:
        clashing = write_config(tmp_path, {"a": {"url": url, "prefix": ""}}, tools=[f"{LOCAL_TOOLS}:echo"])
        refused = await cli("serve", str(clashing), "--state", str(tmp_path / "state.db"))
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip().splitlines()[-1] == (
        "adk-mcp-gateway: error: Two tool sources publish the same name: 'echo' from upstream 'a' and local. "
        'Give an upstream a different "prefix", or leave the tool out with "denyTools".'
    )


async def test_serve_starts_when_an_upstream_cannot_be_reached_for_the_name_check(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"gone": {"command": str(tmp_path / "no-such-server")}}, tools=[LOCAL_TOOLS])
    env = {**os.environ, **child_env()}
    command = [sys.executable, "-m", "gateway.cli", "serve", str(config), "--state", str(tmp_path / "state.db")]
    async with await anyio.open_process(command, cwd=ROOT, env=env) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        with anyio.fail_after(DEADLINE):
            await process.stdin.send(json.dumps(initialize).encode() + b"\n")
            answer = json.loads((await process.stdout.receive()).decode().splitlines()[0])
        await process.stdin.aclose()
        with anyio.fail_after(DEADLINE):
            await process.wait()
    assert answer["result"]["serverInfo"]["name"] == "test-gateway"


async def test_tools_prints_the_merged_catalog_with_each_tools_source(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"notes": {"url": url, "allowTools": ["echo", "peek"]}}, tools=[LOCAL_TOOLS])
        done = await cli("tools", str(config))
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    assert header.split() == ["NAME", "ARGUMENTS", "SOURCE", "DESCRIPTION"]
    columns = [header.index(title) for title in ("ARGUMENTS", "SOURCE", "DESCRIPTION")]
    rows = [
        [line[start:end].strip() for start, end in zip([0, *columns], [*columns, None], strict=True)] for line in lines
    ]
    assert rows == [
        ["notes_echo", "text", "upstream 'notes'", "Say `text` back."],
        [
            "notes_peek",
            "marker",
            "upstream 'notes'",
            "Read `marker` without changing anything (published with `readOnlyHint: true`).",
        ],
        ["shout", "text", "local", "Say `text` back in capitals."],
    ]


async def test_call_prints_the_result_as_json_and_exits_1_on_an_error_result(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"notes": {"url": url}})
        echoed = await cli("call", str(config), "notes_echo", "--args", '{"text": "hi"}')
        invalid = await cli("call", str(config), "notes_echo", "--args", '{"text": 5}')
    assert echoed.returncode == 0, echoed.stderr
    assert json.loads(echoed.stdout) == {"result": "hi"}
    assert invalid.returncode == 1
    assert "text" in json.loads(invalid.stdout)["error"]


async def test_call_runs_a_confirmed_tool_only_with_yes(tmp_path: Path) -> None:
    marker = tmp_path / "calls.txt"
    async with upstream_http() as url:
        config = write_config(tmp_path, {"notes": {"url": url, "confirm": ["record"]}})
        refused = await cli("call", str(config), "notes_record", "--args", json.dumps({"marker": str(marker)}))
        refused_calls = marker.exists()
        approved = await cli(
            "call", str(config), "notes_record", "--args", json.dumps({"marker": str(marker)}), "--yes"
        )
    assert refused.returncode == 1
    assert json.loads(refused.stdout) == {"error": "This tool call is rejected."}
    assert "pass --yes" in refused.stderr
    assert not refused_calls
    assert approved.returncode == 0, approved.stderr
    assert marker.read_text() == "called\n"


async def test_a_misspelt_key_exits_2_suggesting_the_right_one(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"time": {"command": "mcp-server-time", "arg": ["--local-timezone", "UTC"]}})
    done = await cli("check", str(config))
    assert done.returncode == 2
    assert "mcpServers.time.arg: unknown key. Did you mean 'args'?" in done.stderr
    assert "Traceback" not in done.stderr


async def test_a_missing_environment_variable_exits_2_naming_it_and_the_key(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"docs": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "${HUB_TEST_UNSET_VARIABLE}"}}},
    )
    done = await cli("tools", str(config))
    assert done.returncode == 2
    assert (
        "config.mcpServers.docs.headers.Authorization: the environment variable HUB_TEST_UNSET_VARIABLE is not set"
        in done.stderr
    )
    assert "Traceback" not in done.stderr


async def test_check_lists_disabled_upstreams_and_warns_when_there_is_nothing_to_serve(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"notes": {"url": "http://127.0.0.1:9/mcp", "disabled": True}})
    done = await cli("check", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  off   notes: disabled" in done.stdout
    assert "  WARN  nothing to serve" in done.stdout


async def test_call_forwards_an_upstreams_elicitation_to_the_terminal_and_refuses_its_sampling(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"notes": {"url": url}})
        asked = await cli("call", str(config), "notes_ask_name", stdin="Grace\n")
        sampled = await cli("call", str(config), "notes_summarize", "text=a long story")
    assert asked.returncode == 0, asked.stderr
    assert json.loads(asked.stdout) == {"action": "accept", "name": "Grace"}
    assert "What is your name?" in asked.stderr
    assert sampled.returncode == 1
    assert "--sample-with" in json.loads(sampled.stdout)["error"]
    assert "has no MCP client" not in sampled.stdout + sampled.stderr


async def test_call_starts_only_the_upstream_that_owns_the_tool(tmp_path: Path) -> None:
    started = tmp_path / "other-started"
    other = {"command": sys.executable, "args": ["-c", f"open({str(started)!r}, 'w').close()"]}
    async with upstream_http() as url:
        config = write_config(tmp_path, {"notes": {"url": url}, "other": other}, tools=[LOCAL_TOOLS])
        upstream_call = await cli("call", str(config), "notes_echo", "text=hi")
        local_call = await cli("call", str(config), "shout", "text=hi")
    assert upstream_call.returncode == 0, upstream_call.stderr
    assert json.loads(upstream_call.stdout) == {"result": "hi"}
    assert local_call.returncode == 0, local_call.stderr
    assert not started.exists()


async def test_a_stdio_upstreams_stderr_reaches_the_log_prefixed_with_its_key_not_the_commands_output(
    tmp_path: Path,
) -> None:
    # The upstream is `adk-mcp-gateway serve` itself, which logs each call at info level on its stderr.
    config = write_config(tmp_path, {"up": upstream_stdio(tmp_path / "up.db")})
    quiet = await cli("call", str(config), "up_echo", "text=hi")
    logged = await cli("call", str(config), "up_echo", "text=hi", "--log-level", "info")
    assert quiet.returncode == logged.returncode == 0, quiet.stderr + logged.stderr
    assert json.loads(quiet.stdout) == json.loads(logged.stdout) == {"result": "hi"}
    assert "tools/call echo" not in quiet.stderr
    (line,) = [line for line in logged.stderr.splitlines() if "tools/call echo" in line]
    assert "INFO gateway.client.stderr: [up] " in line


async def test_check_waits_for_a_slow_upstream_up_to_its_connect_timeout_not_its_listing_deadline(
    tmp_path: Path,
) -> None:
    # An upstream that takes longer to start than `listTimeout` (an `npx` server's first run, a busy machine).
    tiny = ROOT / "tests" / "gateway" / "hub" / "hub_tiny_server.py"
    slow_start = f"import runpy, time; time.sleep(2); runpy.run_path({str(tiny)!r}, run_name='__main__')"
    slow = {"command": sys.executable, "args": ["-c", slow_start], "listTimeout": 0.5, "connectTimeout": 60}
    config = write_config(tmp_path, {"slow": slow})
    done = await cli("check", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  ok    slow: 1 tool, protocol" in done.stdout
