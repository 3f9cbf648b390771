"""What a serving gateway does not load: packages its HTTP front never uses cost resident memory for nothing.

uvicorn's `ws="auto"` imported the websockets package (~0.5 MiB resident in an idle `serve`) although no route
here speaks WebSocket; a WebSocket upgrade request still gets a plain HTTP answer.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from server_harness import DEADLINE, ROOT, TOOLS_REF, http_server, wait_until_healthy

from tests.support.loopback import free_port
from tests.support.processes import wait_for_file

pytestmark = pytest.mark.anyio

_DUMP_MODULES_ON_SIGUSR1 = (
    "import signal, sys; path = sys.argv.pop(1); "
    "signal.signal(signal.SIGUSR1, lambda *_: open(path, 'w').write('\\n'.join(sorted(sys.modules)))); "
    "from gateway.cli import main; sys.exit(main())"
)
"""Runs the CLI; on SIGUSR1 it writes the names of the modules loaded so far to the file named first."""


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
async def test_an_idle_http_gateway_has_not_imported_the_websockets_package(tmp_path: Path, loop: str) -> None:
    if loop == "uvloop":
        pytest.importorskip("uvloop", reason="the speed extra is not installed")
    pytest.importorskip("websockets", reason="nothing to leave unimported")
    port = free_port()
    modules = tmp_path / "modules.txt"
    command = [sys.executable, "-c", _DUMP_MODULES_ON_SIGUSR1, str(modules), "serve", "--tools", TOOLS_REF]
    command += ["--transport", "http", "--port", str(port), "--state", str(tmp_path / "s.db"), "--loop", loop]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    async with await anyio.open_process(command, cwd=ROOT, **quiet) as process:
        try:
            await wait_until_healthy(f"http://127.0.0.1:{port}")
            process.send_signal(signal.SIGUSR1)
            loaded = (await wait_for_file(modules, DEADLINE)).split()
        finally:
            process.terminate()
            with anyio.fail_after(DEADLINE):
                await process.wait()
    assert "uvicorn" in loaded
    assert not [name for name in loaded if name.split(".")[0] == "websockets"]


async def test_a_websocket_upgrade_request_gets_a_plain_http_answer() -> None:
    async with http_server() as base_url:
        host, port = base_url.removeprefix("http://").split(":")
        async with await anyio.connect_tcp(host, int(port)) as stream:
            await stream.send(
                b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
            )
            with anyio.fail_after(DEADLINE):
                answer = await stream.receive()
    assert answer.startswith(b"HTTP/1.1 ")
    assert not answer.startswith(b"HTTP/1.1 101 ")
