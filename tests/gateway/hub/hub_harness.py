"""Real gateways and real upstreams for the gateway (hub) tests.

Upstreams: our server mode publishing `hub_upstream_tools.py`, in this process over streamable HTTP (uvicorn on a
socket bound to `127.0.0.1:0` before it starts, so clients may connect at once) or as a stdio child; and the
published `mcp-server-time`. Gateways: a config written to a temporary directory, served in this process over HTTP
(`serve_async(..., sock=)`, so its stdio upstreams are children of the test process) or as the real
`adk-mcp-gateway serve CONFIG` child over stdio. `connect()` opens a downstream `mcp.Client` in either era.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Literal, cast

import anyio
import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.context import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from gateway import hub
from gateway.config import load_config
from gateway.hub import gateway_tools
from gateway.server import ToolServer
from gateway.state import InMemoryStateStore
from tests.support import processes
from tests.support.deadlines import DEADLINE
from tests.support.loopback import free_port, serving_tools, wait_for_port
from tests.support.paths import ROOT

HERE = Path(__file__).resolve().parent
UPSTREAM_TOOLS = f"{HERE / 'hub_upstream_tools.py'}:TOOLS"
LOCAL_TOOLS = str(HERE / "hub_local_tools.py")
BIN = os.path.dirname(sys.executable)
"""Where the venv's published servers (`mcp-server-time`) and our own command live."""

Mode = Literal["legacy", "auto"]
Target = str | StdioServerParameters
"""Where a downstream client finds a gateway: an HTTP base URL, or the parameters of a stdio child."""


def child_env() -> dict[str, str]:
    """The environment for a stdio child: the venv's scripts first on PATH, so `mcp-server-time` resolves."""
    return {"PATH": os.pathsep.join([BIN, os.environ.get("PATH", "")])}


@asynccontextmanager
async def upstream_http() -> AsyncGenerator[str]:
    """Our server mode publishing the upstream tools over streamable HTTP; yields its `/mcp` URL."""
    from hub_upstream_tools import TOOLS

    async with serving_tools(ToolServer(TOOLS, name="upstream", state_store=InMemoryStateStore())) as base_url:
        yield f"{base_url}/mcp"


SLOW_START: Final = {"listTimeout": DEADLINE}
"""Options for a Python upstream that may take longer than the default `listTimeout` to start on a busy machine
(the tests of what crosses the hop must not see it left out of a listing)."""


FIXTURE_UPSTREAM: Final = ROOT / "tests/conformance/fixture_upstream.py"
"""The conformance fixture upstream: the SDK's `MCPServer` with every scenario's tool (see its docstring)."""


@asynccontextmanager
async def fixture_http(*flags: str) -> AsyncGenerator[str]:
    """The fixture upstream as a child serving streamable HTTP (with its event store, so streams resume), given
    `flags` (e.g. `--push`); yields its `/mcp` URL. The child's process group is killed at the end."""
    port = free_port()
    process = await anyio.open_process(
        [sys.executable, "-I", str(FIXTURE_UPSTREAM), "http", str(port), *flags],
        env=child_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        await wait_for_port(port, DEADLINE, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()


def upstream_stdio(state: Path, **options: Any) -> dict[str, Any]:
    """A config entry starting our server mode, publishing the upstream tools, as a stdio child."""
    args = ["-m", "gateway.cli", "serve", "--tools", UPSTREAM_TOOLS, "--state", str(state)]
    return {"command": sys.executable, "args": args, "cwd": str(ROOT), **SLOW_START, **options}


def time_server(**options: Any) -> dict[str, Any]:
    """A config entry for the published `mcp-server-time` (run as a module: the test's PATH may lack the venv)."""
    args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    return {"command": sys.executable, "args": args, **SLOW_START, **options}


def write_config(directory: Path, servers: dict[str, dict[str, Any]], *, tools: list[str] | None = None) -> Path:
    """A gateway config file in `directory` with these upstreams and local tool references."""
    path = directory / "gateway.json"
    document: dict[str, Any] = {"name": "test-gateway", "mcpServers": servers}
    if tools is not None:
        document["tools"] = tools
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


def gateway_server(config: Path) -> ToolServer:
    """The `ToolServer` that `adk-mcp-gateway serve CONFIG` runs, with state in memory."""
    loaded = load_config(config)
    search = loaded.tool_search.settings() if loaded.tool_search else None
    return hub.gateway_server(
        gateway_tools(loaded), name=loaded.name, state_store=InMemoryStateStore(), tool_search=search
    )


@asynccontextmanager
async def gateway_http(config: Path) -> AsyncGenerator[str]:
    """The gateway for `config`, served over HTTP in this process; yields its base URL."""
    async with serving_tools(gateway_server(config)) as base_url:
        yield base_url


def gateway_stdio(config: Path, state: Path) -> StdioServerParameters:
    """`adk-mcp-gateway serve CONFIG` as a stdio child (the venv's scripts first on its PATH)."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", str(config), "--state", str(state)],
        cwd=ROOT,
        env=child_env(),
    )


@asynccontextmanager
async def gateway(served_over: Literal["stdio", "http"], config: Path, state: Path) -> AsyncGenerator[Target]:
    """The gateway for `config` served over stdio (a child process) or HTTP (this process); yields its target."""
    if served_over == "stdio":
        yield gateway_stdio(config, state)
        return
    async with gateway_http(config) as base_url:
        yield base_url


@asynccontextmanager
async def connect(target: Target, mode: Mode, **client_options: Any) -> AsyncGenerator[Client]:
    """A downstream `mcp.Client` for a gateway (a base URL, or stdio parameters) in the given era."""
    if isinstance(target, StdioServerParameters):
        async with Client(target, mode=mode, **client_options) as client:
            yield client
        return
    # `streamable_http_client` leaves a client it was given open: this block owns it.
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(DEADLINE, read=300)) as http:
        transport = streamable_http_client(f"{target}/mcp", http_client=http)
        async with Client(transport, mode=mode, **client_options) as client:
            yield client


@asynccontextmanager
async def connect_sse(base_url: str, mode: Mode = "legacy", **client_options: Any) -> AsyncGenerator[Client]:
    """A downstream `mcp.Client` for a gateway's SSE endpoint (`/sse`): one connection, closed when the block ends."""
    async with Client(sse_client(f"{base_url}/sse", timeout=DEADLINE), mode=mode, **client_options) as client:
        yield client


async def tool_names(client: Client) -> list[str]:
    """Every tool name the gateway lists (all pages), in order."""
    names: list[str] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        names.extend(tool.name for tool in page.tools)
        cursor = page.next_cursor
        if not cursor:
            return names


def structured(result: types.CallToolResult) -> dict[str, Any]:
    """A successful result's structured content."""
    assert not result.is_error, text_of(result)
    content: Any = result.structured_content
    assert isinstance(content, dict)
    return cast("dict[str, Any]", content)


def text_of(result: types.CallToolResult) -> str:
    """The text of a result's content blocks, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def wait_for_file(path: Path) -> str:
    """The text of `path`, once another task or process has written it (`tests.support.processes.wait_for_file`)."""
    return await processes.wait_for_file(path, DEADLINE)


class FormFiller:
    """A downstream client's callbacks that fill any form deterministically: defaults, else plausible values."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        """The messages of the elicitations it answered."""

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        self.asked.append(params.message)
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")
        content: dict[str, Any] = {}
        required = set(params.requested_schema.get("required", []))
        for name, schema in params.requested_schema.get("properties", {}).items():
            if "default" in schema:
                content[name] = schema["default"]
            elif name in required and schema.get("type") == "string":
                content[name] = "ada@example.com" if schema.get("format") == "email" else "Ada"
            elif name in required and schema.get("type") in ("integer", "number"):
                content[name] = 42
        return types.ElicitResult(action="accept", content=content)

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        del context, params
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="Teal."), model="test-model")

    def callbacks(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample}


class Heard:
    """A downstream client's message handler: the notifications it received, and a way to wait for one."""

    def __init__(self) -> None:
        self.notifications: list[types.ServerNotification] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ServerNotification.__args__):  # type: ignore[attr-defined]
            self.notifications.append(message)
            self._arrived.set()
            self._arrived = anyio.Event()

    def methods(self) -> list[str]:
        return [notification.method for notification in self.notifications]

    async def wait_for(self, found: Callable[[types.ServerNotification], bool]) -> types.ServerNotification:
        with anyio.fail_after(DEADLINE):
            while True:
                for notification in self.notifications:
                    if found(notification):
                        return notification
                await self._arrived.wait()
