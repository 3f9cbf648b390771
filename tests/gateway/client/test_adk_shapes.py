"""`McpToolset` given what google-adk's `McpToolset` takes: the SDK's bare `StdioServerParameters`, ADK's
`StdioConnectionParams(server_params=..., timeout=...)`, `errlog=`, `httpx_client_factory=`, the `MCPToolset` name.

The upstreams are real: `tiny_stdio_server.py` as a stdio child, our server mode over HTTP on loopback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx  # noqa: TID251 - google-adk's factories return httpx 0.x clients under mcp 1.x
import httpx2
import pytest
from client_harness import DEADLINE, HERE, our_http_server
from mcp import StdioServerParameters

from gateway.client import (
    MCPToolset,
    McpToolset,
    SseConnectionParams,
    StdioConnectionParams,
    StreamableHTTPConnectionParams,
)
from gateway.errors import UpstreamUnavailableError
from gateway.tools import ToolContext

pytestmark = pytest.mark.anyio

TINY = StdioServerParameters(command=sys.executable, args=["-I", str(HERE / "tiny_stdio_server.py")])


async def echo_through(toolset: McpToolset, text: str) -> Any:
    """List the toolset's tools and call `echo` with `text`; closes the toolset."""
    try:
        with anyio.fail_after(DEADLINE):
            tools = {tool.name: tool for tool in await toolset.get_tools()}
            assert set(tools) == {"echo", "hang"}
            return await tools["echo"].run_async(args={"text": text}, tool_context=ToolContext())
    finally:
        await toolset.close()


async def test_a_bare_stdio_server_parameters_is_taken_as_adk_takes_it_and_its_tools_work() -> None:
    assert await echo_through(McpToolset(connection_params=TINY, mode="legacy"), "bare") == {"result": "bare"}


async def test_adks_stdio_connection_params_shape_with_server_params_and_timeout_works() -> None:
    params = StdioConnectionParams(server_params=TINY, timeout=7.5)

    assert (params.command, params.args, params.connect_timeout) == (TINY.command, TINY.args, 7.5)
    assert await echo_through(McpToolset(connection_params=params, mode="legacy"), "adk") == {"result": "adk"}


def test_server_params_beside_a_command_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match=r"server_params.*command"):
        StdioConnectionParams(server_params=TINY, command="uvx")


async def test_errlog_receives_what_the_child_writes_to_its_stderr(tmp_path: Path) -> None:
    log_path = tmp_path / "upstream.err"
    with log_path.open("w") as errlog:
        toolset = McpToolset(connection_params=StdioConnectionParams(server_params=TINY), errlog=errlog, mode="legacy")
        await echo_through(toolset, "to the errlog")

    assert "tiny: echo to the errlog" in log_path.read_text()


def test_mcptoolset_is_the_same_class_under_adks_other_spelling() -> None:
    assert MCPToolset is McpToolset


def _http_params(
    base_url: str, transport: Literal["sse", "http"], factory: Any
) -> SseConnectionParams | StreamableHTTPConnectionParams:
    if transport == "sse":
        return SseConnectionParams(url=f"{base_url}/sse", timeout=9.0, httpx_client_factory=factory)
    return StreamableHTTPConnectionParams(url=f"{base_url}/mcp", timeout=9.0, httpx_client_factory=factory)


@pytest.mark.parametrize("transport", ["sse", "http"])
async def test_an_httpx_client_factory_builds_the_http_client_with_adks_arguments(
    transport: Literal["sse", "http"],
) -> None:
    calls: list[dict[str, Any]] = []

    def factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        calls.append({"headers": headers, "timeout": timeout, "auth": auth})
        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth)

    async with our_http_server() as base_url:
        params = _http_params(base_url, transport, factory)
        params = params.model_copy(update={"headers": {"X-Team": "blue"}})
        toolset = McpToolset(connection_params=params, mode="legacy")
        try:
            with anyio.fail_after(DEADLINE):
                names = {tool.name for tool in await toolset.get_tools()}
        finally:
            await toolset.close()

    assert "add" in names
    assert calls
    assert (calls[0]["headers"] or {}).get("X-Team") == "blue"
    assert isinstance(calls[0]["timeout"], httpx2.Timeout)
    assert calls[0]["timeout"].connect == 9.0


async def test_a_factory_returning_an_httpx_client_fails_saying_mcp_2_needs_httpx2() -> None:
    def factory(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> httpx.AsyncClient:
        return httpx.AsyncClient(headers=headers)

    async with our_http_server() as base_url:
        toolset = McpToolset(connection_params=_http_params(base_url, "http", factory), mode="legacy")
        try:
            with anyio.fail_after(DEADLINE), pytest.raises(UpstreamUnavailableError, match="httpx2"):
                await toolset.get_tools()
        finally:
            await toolset.close()


async def test_google_adks_own_stdio_connection_params_object_is_taken_with_its_timeout() -> None:
    adk_mcp = pytest.importorskip("google.adk.tools.mcp_tool")
    toolset = McpToolset(
        connection_params=adk_mcp.StdioConnectionParams(server_params=TINY, timeout=6.0), mode="legacy"
    )

    assert toolset.connection_params == StdioConnectionParams(server_params=TINY, timeout=6.0)
    assert await echo_through(toolset, "from adk") == {"result": "from adk"}


async def test_google_adks_streamable_http_params_with_its_default_factory_use_our_client() -> None:
    adk_mcp = pytest.importorskip("google.adk.tools.mcp_tool")
    async with our_http_server() as base_url:
        adk_params = adk_mcp.StreamableHTTPConnectionParams(url=f"{base_url}/mcp", headers={"X-Team": "blue"})
        toolset = McpToolset(connection_params=adk_params, mode="legacy")
        try:
            with anyio.fail_after(DEADLINE):
                names = {tool.name for tool in await toolset.get_tools()}
        finally:
            await toolset.close()

    assert toolset.connection_params == StreamableHTTPConnectionParams(
        url=f"{base_url}/mcp", headers={"X-Team": "blue"}, timeout=5.0
    )
    assert "add" in names
