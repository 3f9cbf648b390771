"""`adk-mcp-gateway serve` as a real child process: bad references, and stopping on a signal."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.streams.text import TextReceiveStream
from fixture_tools import TOOLS
from mcp import types
from server_harness import (
    DEADLINE,
    ROOT,
    TOOLS_REF,
    Era,
    StartedSignal,
    connect,
    run_serve,
    wait_until_healthy,
)

from gateway.errors import ConfigError
from gateway.server import ToolServer, serve_async
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


@pytest.mark.parametrize(
    ("sent", "era", "exit_code"),
    [
        pytest.param(signal.SIGTERM, "legacy", 0, id="SIGTERM-exits-0"),
        pytest.param(signal.SIGINT, "modern", 130, id="SIGINT-exits-130"),
    ],
)
async def test_a_signal_stops_the_http_server_after_the_call_in_flight_has_its_result(
    sent: signal.Signals, era: Era, exit_code: int, state_file: Path
) -> None:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--transport", "http"]
    command += ["--port", str(port), "--state", str(state_file)]
    async with await anyio.open_process(command, cwd=ROOT, stdout=subprocess.DEVNULL) as process:
        try:
            await wait_until_healthy(base_url)
            started = StartedSignal()
            results: list[types.CallToolResult] = []

            async def slow_call() -> None:
                results.append(await client.call_tool("slow_job", {"seconds": 1.0}, progress_callback=started))

            async with connect("http", era, base_url) as client:
                with anyio.fail_after(DEADLINE):
                    # The SDK's client lists the tools after a call to a tool it has not seen (to check the result
                    # against its output schema); listed first, nothing is sent after the call, and a server that
                    # exits once the call is answered is not raced by that listing.
                    await client.list_tools()
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(slow_call)
                        await started.event.wait()
                        process.send_signal(sent)
                    returncode = await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
    assert returncode == exit_code
    (result,) = results
    assert result.structured_content == {"result": "finished"}


async def test_serving_on_all_interfaces_warns_naming_allow_host_and_auth_token(state_file: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--transport", "http"]
    command += ["--host", "0.0.0.0", "--port", str(port), "--state", str(state_file)]
    log = ""
    async with await anyio.open_process(command, cwd=ROOT, stdout=subprocess.DEVNULL) as process:
        try:
            assert process.stderr is not None
            with anyio.fail_after(DEADLINE):
                async for chunk in TextReceiveStream(process.stderr):
                    log += chunk
                    if "Ctrl-C stops" in log:
                        break
            process.terminate()
            with anyio.fail_after(DEADLINE):
                await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
    warnings = [line for line in log.splitlines() if " WARNING " in line]
    assert any("--auth-token" in line for line in warnings), log
    assert any("--allow-host" in line for line in warnings), log
