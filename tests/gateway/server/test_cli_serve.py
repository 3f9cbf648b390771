"""`adk-mcp-gateway serve` as a real child process: bad references, and stopping on a signal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import pytest
from fixture_tools import TOOLS
from mcp import Client, MCPError, types
from server_harness import (
    DEADLINE,
    INITIALIZE,
    TOOLS_REF,
    Era,
    StartedSignal,
    Transport,
    connect,
    run_serve,
    wait_until_healthy,
)

from gateway.errors import ConfigError
from gateway.server import ToolServer, serve_async
from tests.support.child_process import child_process, json_lines, read_until, rest_of
from tests.support.loopback import bound_socket, free_port

pytestmark = pytest.mark.anyio


def test_serving_a_module_that_does_not_exist_exits_2_naming_it() -> None:
    done = run_serve("--tools", "missing_module:x")
    assert done.returncode == 2
    assert "missing_module" in done.stderr
    assert "Traceback" not in done.stderr


async def test_serving_on_a_taken_port_is_a_config_error_naming_the_address() -> None:
    with bound_socket() as taken:
        port = taken.getsockname()[1]
        with anyio.fail_after(DEADLINE), pytest.raises(ConfigError, match=f"Cannot listen on 127.0.0.1:{port}"):
            await serve_async(ToolServer(TOOLS), transport="http", port=port)


async def _signal(process: anyio.abc.Process, sent: signal.Signals, times: int) -> str:
    """Send `sent` `times` times, each after the server logged it stopping; returns the log read meanwhile.

    Two signals sent at once may arrive as one (a process notes a pending signal, not how often it came).
    """
    process.send_signal(sent)
    if times == 1:
        return ""
    log = await _logged_stopping(process)
    for _ in range(times - 1):
        process.send_signal(sent)
    return log


async def _start_slow_call(
    tg: anyio.abc.TaskGroup, client: Client, tool: str, seconds: float, outcomes: list[types.CallToolResult | MCPError]
) -> None:
    """Start a `slow_job` call in `tg`, its result (or `MCPError`) appended to `outcomes`; returns once it runs."""
    started = StartedSignal()

    async def call() -> None:
        try:
            outcomes.append(await client.call_tool(tool, {"seconds": seconds}, progress_callback=started))
        except MCPError as exc:
            outcomes.append(exc)

    tg.start_soon(call)
    await started.event.wait()


async def _logged_stopping(process: anyio.abc.Process) -> str:
    """The server's log up to its line saying it stops (it got the signal)."""
    return await read_until(process.stderr, "Stopping (")


def _http_serve(port: int, state_file: Path, *options: str) -> list[str]:
    """`adk-mcp-gateway serve` of the fixture tools over HTTP on `port`."""
    command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--transport", "http"]
    return [*command, "--port", str(port), "--state", str(state_file), *options]


@asynccontextmanager
async def _relaying_gateway(tmp_path: Path, grace: str) -> AsyncGenerator[tuple[anyio.abc.Process, str]]:
    """A gateway (its process and base URL) in front of one upstream serving the fixture tools, both over HTTP."""
    upstream_port, gateway_port = free_port(), free_port()
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": {"up": {"url": f"http://127.0.0.1:{upstream_port}/mcp"}}}))
    gateway = [sys.executable, "-m", "gateway.cli", "serve", "--transport", "http", str(config)]
    gateway += ["--port", str(gateway_port), "--state", str(tmp_path / "gateway.db"), "--shutdown-grace", grace]
    base_url = f"http://127.0.0.1:{gateway_port}"
    upstream = _http_serve(upstream_port, tmp_path / "up.db")
    async with child_process(upstream, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        await wait_until_healthy(f"http://127.0.0.1:{upstream_port}")
        async with child_process(gateway, stdout=subprocess.DEVNULL) as process:
            await wait_until_healthy(base_url)
            yield process, base_url


def _stdio_serve(state_file: Path, *options: str) -> list[str]:
    """`adk-mcp-gateway serve` of the fixture tools over stdio."""
    return [sys.executable, "-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--state", str(state_file), *options]


def _stdio_opening(seconds: float) -> bytes:
    """The stdio lines of a handshake and a `slow_job` call (id 2) running `seconds`, reporting progress."""
    call = {"name": "slow_job", "arguments": {"seconds": seconds}, "_meta": {"progressToken": "p"}}
    messages = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    messages.append({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    return "".join(json.dumps(message) + "\n" for message in messages).encode()


@pytest.mark.parametrize(
    ("sent", "times", "transport", "era", "seconds", "grace"),
    [
        pytest.param(signal.SIGTERM, 1, "http", "legacy", 1.0, None, id="SIGTERM-finishes-within-the-default-grace"),
        pytest.param(signal.SIGINT, 1, "http", "modern", 1.0, None, id="SIGINT-finishes-within-the-default-grace"),
        pytest.param(signal.SIGINT, 1, "http", "legacy", 600.0, 1.0, id="SIGINT-outlasts-the-grace"),
        pytest.param(signal.SIGTERM, 1, "http", "modern", 600.0, 1.0, id="SIGTERM-outlasts-the-grace"),
        pytest.param(signal.SIGTERM, 1, "sse", "legacy", 600.0, 1.0, id="SIGTERM-outlasts-the-grace-over-SSE"),
        pytest.param(signal.SIGINT, 2, "http", "legacy", 600.0, 600.0, id="a-second-SIGINT-cancels-at-once"),
    ],
)
async def test_a_signal_answers_the_call_in_flight_says_what_it_waits_for_and_exits_0(
    sent: signal.Signals,
    times: int,
    transport: Transport,
    era: Era,
    seconds: float,
    grace: float | None,
    state_file: Path,
) -> None:
    """A call that ends within the grace period has its result; one that does not gets an error saying why."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    command = _http_serve(port, state_file, *([] if grace is None else ["--shutdown-grace", str(grace)]))
    outcomes: list[types.CallToolResult | MCPError] = []
    async with child_process(command, stdout=subprocess.DEVNULL) as process:
        await wait_until_healthy(base_url)
        async with connect(transport, era, base_url) as client:
            # A hang detector, not a timing assertion: the grace periods here are far shorter.
            with anyio.fail_after(DEADLINE):
                # The SDK's client lists the tools after a call to a tool it has not seen (to check the result
                # against its output schema); listed first, nothing is sent after the call, and a server that
                # exits once the call is answered is not raced by that listing.
                await client.list_tools()
                async with anyio.create_task_group() as tg:
                    await _start_slow_call(tg, client, "slow_job", seconds, outcomes)
                    early_log = await _signal(process, sent, times)
                returncode = await process.wait()
        log = early_log + await rest_of(process.stderr)
    assert returncode == 0, log
    assert f"Stopping ({sent.name}): waiting up to {grace or 10:g} s for 1 tool call in flight" in log
    # A stop is not a failure: nothing is logged as an error (uvicorn said so of each event stream it cut).
    assert " ERROR " not in log, log
    assert "ERROR:" not in log, log
    (outcome,) = outcomes
    if grace is None:
        assert isinstance(outcome, types.CallToolResult), outcome
        assert outcome.structured_content == {"result": "finished"}
    else:
        assert isinstance(outcome, MCPError), outcome
        assert "server is stopping" in str(outcome), outcome
        assert "Cancelling 1 tool call still running" in log
        assert ("cancelled at once" in str(outcome)) == (times > 1), outcome


async def _post_call(base_url: str) -> httpx2.Response:
    """A `tools/call` POSTed by a plain HTTP client, outside any session."""
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    headers = {"accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        return await http.post(f"{base_url}/mcp", json=call, headers=headers)


IN_FLIGHT_SECONDS = 8.0
"""How long the call in flight runs: the signal, and the refusal of a new call, come well within it."""


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_stopping_server_refuses_new_calls_at_once_and_finishes_the_one_in_flight(
    era: Era, state_file: Path
) -> None:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    outcomes: list[types.CallToolResult | MCPError] = []
    async with child_process(
        _http_serve(port, state_file, "--shutdown-grace", "600"), stdout=subprocess.DEVNULL
    ) as process:
        await wait_until_healthy(base_url)
        async with connect("http", era, base_url) as client:
            with anyio.fail_after(DEADLINE):
                await client.list_tools()
                async with anyio.create_task_group() as tg:
                    await _start_slow_call(tg, client, "slow_job", IN_FLIGHT_SECONDS, outcomes)
                    process.send_signal(signal.SIGINT)
                    early_log = await _logged_stopping(process)
                    with pytest.raises(MCPError) as refused:
                        await client.call_tool("add", {"a": 1, "b": 2})
                    plain = await _post_call(base_url)
                returncode = await process.wait()
        log = early_log + await rest_of(process.stderr)
    assert returncode == 0, log
    assert refused.value.error.code == -32000, refused.value
    assert "server is stopping" in refused.value.error.message
    assert "Retry it on another replica" in refused.value.error.message
    # Over HTTP the refusal is a 503 too, for load balancers and clients that look at the status.
    assert plain.status_code == 503, plain.text
    assert plain.headers["connection"] == "close"
    assert plain.json()["error"]["code"] == -32000
    (outcome,) = outcomes
    assert isinstance(outcome, types.CallToolResult), outcome
    assert outcome.structured_content == {"result": "finished"}
    assert "Cancelling" not in log, log


async def test_serving_on_all_interfaces_warns_naming_allow_host_and_auth_token(state_file: Path) -> None:
    command = _http_serve(free_port(), state_file, "--host", "0.0.0.0")
    async with child_process(command, stdout=subprocess.DEVNULL) as process:
        with anyio.fail_after(DEADLINE):
            log = await read_until(process.stderr, "Ctrl-C stops")
        process.terminate()
        with anyio.fail_after(DEADLINE):
            await process.wait()
    warnings = [line for line in log.splitlines() if " WARNING " in line]
    assert any("--auth-token" in line for line in warnings), log
    assert any("--allow-host" in line for line in warnings), log


async def test_a_signal_answers_a_relayed_upstream_call_that_outlasts_the_grace_and_exits_0(tmp_path: Path) -> None:
    """The gateway relays a handshake-era call of an upstream tool itself (its fast lane): cancelled, it is answered."""
    outcomes: list[types.CallToolResult | MCPError] = []
    async with _relaying_gateway(tmp_path, grace="1") as (process, base_url):
        async with connect("http", "legacy", base_url) as client:
            with anyio.fail_after(DEADLINE):
                await client.list_tools()
                async with anyio.create_task_group() as tg:
                    await _start_slow_call(tg, client, "up_slow_job", 600, outcomes)
                    process.send_signal(signal.SIGINT)
                returncode = await process.wait()
        log = await rest_of(process.stderr)
    assert returncode == 0, log
    assert "Stopping (SIGINT): waiting up to 1 s for 1 tool call in flight" in log
    assert "Cancelling 1 tool call still running" in log
    (outcome,) = outcomes
    assert isinstance(outcome, MCPError), outcome
    assert "server is stopping" in str(outcome), outcome


async def test_a_stopping_gateway_refuses_new_relayed_upstream_calls_and_finishes_the_one_in_flight(
    tmp_path: Path,
) -> None:
    """The gateway relays a handshake-era call of an upstream tool itself (its fast lane): refused there too."""
    outcomes: list[types.CallToolResult | MCPError] = []
    async with _relaying_gateway(tmp_path, grace="600") as (process, base_url):
        async with connect("http", "legacy", base_url) as client:
            with anyio.fail_after(DEADLINE):
                await client.list_tools()
                # Once before the stop: later calls of this session take the fast lane.
                assert not (await client.call_tool("up_add", {"a": 1, "b": 2})).is_error
                async with anyio.create_task_group() as tg:
                    await _start_slow_call(tg, client, "up_slow_job", IN_FLIGHT_SECONDS, outcomes)
                    process.send_signal(signal.SIGINT)
                    early_log = await _logged_stopping(process)
                    with pytest.raises(MCPError) as refused:
                        await client.call_tool("up_add", {"a": 1, "b": 2})
                returncode = await process.wait()
        log = early_log + await rest_of(process.stderr)
    assert returncode == 0, log
    assert refused.value.error.code == -32000, refused.value
    assert "Retry it on another replica" in refused.value.error.message
    (outcome,) = outcomes
    assert outcome.structured_content == {"result": "finished"}, outcome
    assert " ERROR " not in log, log


@pytest.mark.parametrize(
    ("sent", "times", "seconds", "grace"),
    [
        pytest.param(signal.SIGTERM, 1, 1.0, None, id="SIGTERM-finishes-within-the-default-grace"),
        pytest.param(signal.SIGINT, 1, 600.0, 1.0, id="SIGINT-outlasts-the-grace"),
        pytest.param(signal.SIGINT, 2, 600.0, 600.0, id="a-second-SIGINT-cancels-at-once"),
    ],
)
async def test_a_signal_to_a_stdio_server_answers_the_call_in_flight_and_exits_0(
    sent: signal.Signals, times: int, seconds: float, grace: float | None, state_file: Path
) -> None:
    command = _stdio_serve(state_file, *([] if grace is None else ["--shutdown-grace", str(grace)]))
    replies: list[dict[str, Any]] = []
    async with child_process(command) as process:
        assert process.stdin is not None
        await process.stdin.send(_stdio_opening(seconds))
        # A hang detector, not a timing assertion: the grace periods here are far shorter.
        with anyio.fail_after(DEADLINE):
            async for reply in json_lines(process.stdout):
                replies.append(reply)
                if reply.get("method") == "notifications/progress":  # the call is running
                    early_log = await _signal(process, sent, times)
            returncode = await process.wait()
        log = early_log + await rest_of(process.stderr)
    assert returncode == 0, log
    assert f"Stopping ({sent.name}): waiting up to {grace or 10:g} s for 1 tool call in flight" in log
    (answer,) = [reply for reply in replies if reply.get("id") == 2]
    if grace is None:
        assert answer["result"]["structuredContent"] == {"result": "finished"}
    else:
        assert "server is stopping" in answer["error"]["message"]
        assert ("cancelled at once" in answer["error"]["message"]) == (times > 1)


async def test_a_stopping_stdio_server_refuses_new_calls_at_once_and_finishes_the_one_in_flight(
    state_file: Path,
) -> None:
    late = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    replies: list[dict[str, Any]] = []
    async with child_process(_stdio_serve(state_file, "--shutdown-grace", "600")) as process:
        assert process.stdin is not None
        await process.stdin.send(_stdio_opening(IN_FLIGHT_SECONDS))
        early_log = ""
        # A hang detector, not a timing assertion.
        with anyio.fail_after(DEADLINE):
            async for reply in json_lines(process.stdout):
                replies.append(reply)
                if reply.get("method") == "notifications/progress":  # the call is running
                    process.send_signal(signal.SIGINT)
                    early_log = await _logged_stopping(process)
                    await process.stdin.send((json.dumps(late) + "\n").encode())
                if reply.get("id") == 3:
                    # Refused while the call in flight still runs (its answer comes after).
                    assert not [reply for reply in replies if reply.get("id") == 2], replies
            returncode = await process.wait()
        log = early_log + await rest_of(process.stderr)
    assert returncode == 0, log
    (refused,) = [reply for reply in replies if reply.get("id") == 3]
    assert refused["error"]["code"] == -32000, refused
    assert "Retry it on another replica" in refused["error"]["message"]
    (answer,) = [reply for reply in replies if reply.get("id") == 2]
    assert answer["result"]["structuredContent"] == {"result": "finished"}, answer


async def test_a_request_slow_to_arrive_does_not_hold_a_stopping_server_past_its_grace(state_file: Path) -> None:
    port = free_port()
    command = _http_serve(port, state_file, "--shutdown-grace", "1", "--body-timeout", "600")
    async with child_process(command, stdout=subprocess.DEVNULL) as process:
        await wait_until_healthy(f"http://127.0.0.1:{port}")
        async with await anyio.connect_tcp("127.0.0.1", port) as slow:
            head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            await slow.send(f"{head}Content-Length: 100\r\n\r\n{{".encode())
            process.send_signal(signal.SIGTERM)
            # A hang detector: the body deadline (600 s) is far beyond it, the grace (1 s) well within.
            with anyio.fail_after(DEADLINE):
                returncode = await process.wait()
        log = await rest_of(process.stderr)
    assert returncode == 0, log
    assert "Stopping (SIGTERM): no tool call in flight." in log


async def test_json_logs_of_an_http_server_hold_uvicorns_lines_too(state_file: Path) -> None:
    port = free_port()
    async with child_process(
        _http_serve(port, state_file, "--log-format", "json"), stdout=subprocess.DEVNULL
    ) as process:
        await wait_until_healthy(f"http://127.0.0.1:{port}")
        async with await anyio.connect_tcp("127.0.0.1", port) as garbage:
            # uvicorn warns of a request it cannot parse, in a line of its own making unless it logs through ours.
            await garbage.send(b"NOT HTTP\x1b[2K\r\n\r\n")
            with anyio.fail_after(DEADLINE):
                await garbage.receive()
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(DEADLINE):
            await process.wait()
        log = await rest_of(process.stderr)
    records = [json.loads(line) for line in log.splitlines()]
    assert any(record["logger"] == "uvicorn.error" for record in records), log
