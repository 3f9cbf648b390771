"""Upstreams that cannot be used fail fast with one clear `UpstreamUnavailableError` naming them, never a hang."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from client_harness import DEADLINE, http_params, our_http_server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse
from starlette.routing import Route

from gateway.client import McpTool, McpToolset, StdioConnectionParams
from gateway.client.connection import ConnectionParams
from gateway.errors import UpstreamUnavailableError
from gateway.tools import ToolContext
from tests.support.loopback import bound_socket, free_port, serving_asgi
from tests.support.processes import child_pids

QUICK = 1.0
"""The connect timeout of upstreams that never answer."""

HttpTransport = Literal["sse", "http"]


async def connect_error(params: ConnectionParams, mode: str = "auto") -> str:
    """The message of the error that opening a session with `params` raises."""
    with anyio.fail_after(DEADLINE):
        async with McpToolset(connection_params=params, mode=mode) as toolset:
            with pytest.raises(UpstreamUnavailableError) as caught:
                await toolset.get_tools()
    message = str(caught.value)
    assert params.describe() in message
    return message


def website() -> Starlette:
    """A web site that is not an MCP server: an HTML page at `/`, 404 everywhere else."""

    async def home(request: Request) -> HTMLResponse:
        del request
        return HTMLResponse("<html><body>Welcome</body></html>")

    async def missing(request: Request) -> PlainTextResponse:
        del request
        return PlainTextResponse("Not Found", status_code=404)

    return Starlette(
        routes=[
            Route("/", home, methods=["GET", "POST"]),
            Route("/{path:path}", missing, methods=["GET", "POST", "DELETE"]),
        ]
    )


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["sse", "http"])
async def test_a_closed_port_is_unavailable(transport: HttpTransport) -> None:
    message = await connect_error(http_params(f"http://127.0.0.1:{free_port()}", transport))
    assert "Check the URL" in message


@pytest.mark.anyio
async def test_a_command_that_does_not_exist_is_unavailable() -> None:
    message = await connect_error(StdioConnectionParams(command="/nonexistent/mcp-server", args=["--flag"]))
    assert "/nonexistent/mcp-server --flag" in message
    assert "Check the command" in message


@pytest.mark.anyio
async def test_a_bare_command_found_nowhere_names_the_path_searched_and_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    message = await connect_error(StdioConnectionParams(command="no-such-mcp-server-here"))
    assert "'no-such-mcp-server-here' was not found" in message
    assert "PATH /usr/bin:/bin" in message
    assert str(Path(sys.executable).parent) in message
    assert "absolute path" in message
    assert "Traceback" not in message


@pytest.mark.anyio
async def test_a_bare_command_beside_the_gateways_interpreter_starts_without_it_on_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert (Path(sys.executable).parent / "mcp-server-time").exists()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with anyio.fail_after(DEADLINE):
        async with McpToolset(connection_params=StdioConnectionParams(command="mcp-server-time")) as toolset:
            names = {tool.name for tool in await toolset.get_tools()}
    assert "get_current_time" in names


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["sse", "http"])
async def test_an_http_endpoint_that_is_not_mcp_is_unavailable(transport: HttpTransport) -> None:
    async with serving_asgi(website()) as base_url:
        message = await connect_error(http_params(base_url, transport))
    assert "404" in message


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["sse", "http"])
async def test_an_html_page_is_not_mistaken_for_an_mcp_server(transport: HttpTransport) -> None:
    async with serving_asgi(website()) as base_url:
        params = (
            http_params(base_url, "http", connect_timeout=QUICK)
            if transport == "http"
            else http_params(base_url, "sse", connect_timeout=QUICK)
        )
        params = params.model_copy(update={"url": f"{base_url}/"})
        await connect_error(params)


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["sse", "http"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_server_that_wants_a_token_refuses_a_client_without_one(transport: HttpTransport, mode: str) -> None:
    async with our_http_server(auth_tokens={"a-token-that-is-long-enough": "alice"}) as base_url:
        message = await connect_error(http_params(base_url, transport), mode)
    assert "401" in message
    assert "check the token" in message


@pytest.mark.anyio
async def test_a_forbidden_request_is_unavailable() -> None:
    async with our_http_server() as base_url:
        # DNS-rebinding protection answers a foreign Origin with 403.
        params = http_params(base_url, "http", headers={"Origin": "http://evil.example.com"})
        message = await connect_error(params)
    assert "403" in message


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["sse", "http"])
async def test_a_listener_that_never_answers_times_out_at_the_connect_timeout(transport: HttpTransport) -> None:
    with bound_socket() as silent:  # accepts connections (the kernel does) and never says a word
        base_url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        message = await connect_error(http_params(base_url, transport, connect_timeout=QUICK))
    assert f"within {QUICK:g} s" in message


@pytest.mark.anyio
async def test_a_stdio_command_that_never_answers_times_out_and_is_killed() -> None:
    before = child_pids()
    message = await connect_error(StdioConnectionParams(command="sleep", args=["100"], connect_timeout=QUICK))
    assert f"within {QUICK:g} s" in message
    assert child_pids() == before


@pytest.mark.anyio
async def test_a_tool_of_an_unavailable_upstream_answers_with_an_error_dict() -> None:
    port = free_port()
    async with our_http_server(sock=bound_socket(port)) as base_url:
        toolset = McpToolset(connection_params=http_params(base_url, "http"), mode="legacy")
        with anyio.fail_after(DEADLINE):
            async with toolset:
                tools: dict[str, Any] = {tool.name: tool for tool in await toolset.get_tools()}
                await toolset.close()
    add = tools["add"]
    assert isinstance(add, McpTool)
    # The server is gone: the call opens a new session, which fails, and the model reads why.
    async with toolset:
        with anyio.fail_after(DEADLINE):
            response = await add.run_async(args={"a": 1, "b": 2}, tool_context=ToolContext())
    assert set(response) == {"error"}
    assert f"127.0.0.1:{port}" in response["error"]


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["sse", "http"])
async def test_a_listing_gives_up_at_the_list_timeout_and_the_upstream_is_failing(transport: HttpTransport) -> None:
    with bound_socket() as silent:
        params = http_params(f"http://127.0.0.1:{silent.getsockname()[1]}", transport, connect_timeout=DEADLINE * 3)
        with anyio.fail_after(DEADLINE):
            async with McpToolset(connection_params=params, list_timeout=QUICK) as toolset:
                with pytest.raises(UpstreamUnavailableError) as caught:
                    await toolset.get_tools()
                status = toolset.status()
    assert f"did not answer the tool listing within {QUICK:g} s" in str(caught.value)
    assert params.describe() in str(caught.value)
    assert status["state"] == "failing"
    assert "tool listing" in status["error"]
