"""Real upstream servers for the client tests, and small instruments to watch them.

HTTP servers run in this process under uvicorn, on a socket bound to `127.0.0.1:0` before the server starts (so a
client can connect at once: the kernel queues the connection until uvicorn accepts it). Stdio servers are real
child processes. `upstream()` gives `McpToolset` connection parameters for any (server, transport) pair.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from gateway.client import SseConnectionParams, StdioConnectionParams, StreamableHTTPConnectionParams
from gateway.client.connection import ConnectionParams
from gateway.server import ToolServer
from gateway.state import InMemoryStateStore
from tests.support import processes
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_asgi, serving_tools
from tests.support.paths import ROOT

HERE = Path(__file__).resolve().parent
TOOLS_REF = f"{HERE / 'upstream_tools.py'}:TOOLS"

Kind = Literal["ours", "sdk"]
Transport = Literal["stdio", "sse", "http"]
Mode = Literal["legacy", "auto"]


@asynccontextmanager
async def our_http_server(
    tool_server: ToolServer | None = None, *, sock: socket.socket | None = None, **options: Any
) -> AsyncGenerator[str]:
    """Our server mode (`serve_async`) over HTTP, publishing the upstream tools; yields the base URL."""
    from upstream_tools import TOOLS

    server = tool_server or ToolServer(TOOLS, state_store=InMemoryStateStore())
    async with serving_tools(server, sock, **options) as base_url:
        yield base_url


def our_stdio(state: Path, **options: Any) -> StdioConnectionParams:
    """`adk-mcp-gateway serve` over stdio, publishing the upstream tools."""
    return StdioConnectionParams(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--state", str(state)],
        cwd=ROOT,
        **options,
    )


def tiny_stdio(*flags: str, **options: Any) -> StdioConnectionParams:
    """`tiny_stdio_server.py` (with `flags`, e.g. `--linger`): a standard-library MCP server that starts at once."""
    args = ["-I", str(HERE / "tiny_stdio_server.py"), *flags]
    return StdioConnectionParams(command=sys.executable, args=args, **options)


def sdk_stdio(**options: Any) -> StdioConnectionParams:
    """The SDK `MCPServer` upstream over stdio."""
    return StdioConnectionParams(command=sys.executable, args=[str(HERE / "sdk_upstream.py")], cwd=ROOT, **options)


def http_params(base_url: str, transport: Literal["sse", "http"], **options: Any) -> ConnectionParams:
    """Connection parameters for a server's SSE (`/sse`) or streamable HTTP (`/mcp`) endpoint."""
    if transport == "sse":
        return SseConnectionParams(url=f"{base_url}/sse", **options)
    return StreamableHTTPConnectionParams(url=f"{base_url}/mcp", **options)


@asynccontextmanager
async def upstream(kind: Kind, transport: Transport, tmp_path: Path) -> AsyncGenerator[ConnectionParams]:
    """A running upstream of `kind` reachable over `transport`; yields the parameters to reach it."""
    if transport == "stdio":
        yield our_stdio(tmp_path / "state.db") if kind == "ours" else sdk_stdio()
        return
    if kind == "ours":
        async with our_http_server() as base_url:
            yield http_params(base_url, transport)
        return
    from sdk_upstream import http_app

    async with serving_asgi(http_app(transport)) as base_url:
        yield http_params(base_url, transport)


async def wait_for_file(path: Path) -> str:
    """The text of `path`, once another task or process has written it (`tests.support.processes.wait_for_file`)."""
    return await processes.wait_for_file(path, DEADLINE)
