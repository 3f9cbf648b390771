"""Real servers for the server-mode tests: uvicorn on a pre-bound loopback socket, and stdio children.

`http_server()` runs `serve_async(..., transport="http", sock=...)` in a task group and yields the base URL
once `GET /healthz` answers; leaving it stops the server. `stdio_params()` starts
`python -m gateway.cli serve` with the fixture tools. `connect()` opens an `mcp.Client` over any transport
in either protocol era; `serve_and_connect()` does both for a fresh server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
from anyio.streams.text import TextReceiveStream
from fixture_tools import STARTED, TOOLS
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from gateway.server import ToolServer
from tests.support import processes
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_tools
from tests.support.paths import ROOT

TOOLS_REF = f"{Path(__file__).with_name('fixture_tools.py')}:TOOLS"

Transport = Literal["stdio", "sse", "http"]
Era = Literal["legacy", "modern"]
ERAS: tuple[Era, ...] = ("legacy", "modern")
HANDSHAKE_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
MCP_HEADERS: dict[str, str] = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
"""The headers of a streamable-HTTP POST sent without an MCP client (raw-HTTP tests)."""
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
"""A handshake-era `initialize` request as a raw client sends it (`json.dumps` it for a body or a stdio line)."""


async def wait_until_healthy(base_url: str, *, headers: Mapping[str, str] | None = None) -> None:
    """Poll `GET /healthz` until it answers 200."""
    async with httpx2.AsyncClient(timeout=2.0, headers=dict(headers or {})) as http:
        with anyio.fail_after(DEADLINE):
            while True:
                try:
                    response = await http.get(f"{base_url}/healthz")
                except httpx2.TransportError:
                    response = None
                if response is not None and response.status_code == 200:
                    return
                await anyio.sleep(0.02)


@asynccontextmanager
async def http_server(
    tool_server: ToolServer | None = None, *, auth_tokens: dict[str, str] | None = None, **options: Any
) -> AsyncGenerator[str]:
    """Serve `tool_server` (default: the fixture tools, in-memory state) over HTTP; yields the base URL."""
    server = tool_server or ToolServer(TOOLS)
    async with serving_tools(server, auth_tokens=auth_tokens or {}, **options) as base_url:
        await wait_until_healthy(base_url)
        yield base_url


def stdio_params(state: Path, *extra: str, env: Mapping[str, str] | None = None) -> StdioServerParameters:
    """`adk-mcp-gateway serve` over stdio with the fixture tools and `state` as its SQLite file."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--state", str(state), *extra],
        cwd=ROOT,
        env=dict(env or {}),
    )


def http_client_for(token: str | None = None, headers: Mapping[str, str] | None = None) -> httpx2.AsyncClient:
    """An httpx2 client for `streamable_http_client`, with a bearer token and extra headers if given."""
    all_headers = dict(headers or {})
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(headers=all_headers, timeout=httpx2.Timeout(30, read=300))


@asynccontextmanager
async def connect(
    transport: Transport,
    era: Era,
    target: str | StdioServerParameters,
    *,
    token: str | None = None,
    **client_options: Any,
) -> AsyncGenerator[Client]:
    """An open `mcp.Client` for `target` (a base URL, or stdio parameters) over `transport`, in `era`."""
    mode = "legacy" if era == "legacy" else "auto"
    if transport == "stdio":
        assert isinstance(target, StdioServerParameters)
        async with Client(target, mode=mode, **client_options) as client:
            yield client
        return
    assert isinstance(target, str)
    if transport == "sse":
        headers = {"Authorization": f"Bearer {token}"} if token else None
        async with Client(sse_client(f"{target}/sse", headers=headers), mode=mode, **client_options) as client:
            yield client
        return
    # `streamable_http_client` leaves a client it was given open: the caller owns it.
    async with http_client_for(token) as http:
        transport_ = streamable_http_client(f"{target}/mcp", http_client=http)
        async with Client(transport_, mode=mode, **client_options) as client:
            yield client


def expected_version(era: Era) -> str:
    """The protocol version a connection in `era` negotiates with this server."""
    return HANDSHAKE_VERSION if era == "legacy" else MODERN_VERSION


class StartedSignal:
    """A progress callback that sets `event` when a tool reports `STARTED`."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        del progress, total
        if message == STARTED:
            self.event.set()


async def wait_for_file(path: anyio.Path) -> str:
    """The text of `path`, once another task or process has written it (`tests.support.processes.wait_for_file`)."""
    return await processes.wait_for_file(path, DEADLINE)


async def serve_stdio_lines(state_file: Path, payload: bytes, until_id: int) -> tuple[list[dict[str, Any]], int]:
    """Send `payload` to `adk-mcp-gateway serve --tools TOOLS_REF` over stdio and read its JSON lines until the
    reply with id `until_id` arrives; then close stdin. Returns the replies and the process's exit code."""
    command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--state", str(state_file)]
    replies: list[dict[str, Any]] = []
    async with await anyio.open_process(command) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        await process.stdin.send(payload)
        buffer = ""
        with anyio.fail_after(DEADLINE):
            async for chunk in TextReceiveStream(process.stdout):
                buffer += chunk
                *lines, buffer = buffer.split("\n")
                replies.extend(json.loads(line) for line in lines if line.strip())
                if any(reply.get("id") == until_id for reply in replies):
                    break
        await process.stdin.aclose()
        with anyio.fail_after(DEADLINE):
            returncode = await process.wait()
    return replies, returncode


def run_serve(
    *args: str, env: Mapping[str, str] | None = None, stdin: int | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m gateway.cli serve ARGS` run to its exit (a start-up refusal), its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=DEADLINE,
        check=False,
        env=env,
        stdin=stdin,
    )


def first_text(result: Any) -> str:
    """The text of a `CallToolResult`'s first content block."""
    return result.content[0].text


@asynccontextmanager
async def serve_and_connect(
    transport: Transport, era: Era, state: Path, **client_options: Any
) -> AsyncGenerator[Client]:
    """A fresh server of the fixture tools (in this process over HTTP, or a stdio child on `state`) and a client."""
    if transport == "stdio":
        async with connect("stdio", era, stdio_params(state), **client_options) as client:
            yield client
        return
    async with http_server() as base_url, connect(transport, era, base_url, **client_options) as client:
        yield client
