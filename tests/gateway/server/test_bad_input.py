"""Bad input gets a clear error, and the server keeps serving afterwards."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters, types
from server_harness import (
    DEADLINE,
    INITIALIZE,
    MCP_HEADERS,
    Era,
    Transport,
    connect,
    first_text,
    http_server,
    serve_and_connect,
    serve_stdio_lines,
)

from gateway.server import ToolServer

pytestmark = pytest.mark.anyio


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    with anyio.fail_after(DEADLINE):
        return await client.call_tool(name, arguments)


async def _still_serving(client: Client) -> None:
    result = await _call(client, "add", {"a": 20, "b": 22})
    assert result.structured_content == {"result": 42}


async def _check_bad_calls(client: Client) -> None:
    wrong_type = await _call(client, "add", {"a": "seven", "b": 2})
    assert wrong_type.is_error
    assert "Parameter 'a'" in first_text(wrong_type)
    assert "valid integer" in first_text(wrong_type)
    await _still_serving(client)

    missing = await _call(client, "add", {"a": 1})
    assert missing.is_error
    assert "mandatory input parameters are not present:\nb\n" in first_text(missing)
    await _still_serving(client)

    with anyio.fail_after(DEADLINE), pytest.raises(MCPError) as unknown:
        await client.session.call_tool("no_such_tool", {})
    assert "Unknown tool 'no_such_tool'" in unknown.value.error.message
    assert "Available tools: add, ask_name, bump," in unknown.value.error.message
    await _still_serving(client)


@pytest.mark.parametrize(("transport", "era"), [("http", "legacy"), ("http", "modern"), ("stdio", "legacy")])
async def test_wrong_missing_and_unknown_arguments_get_clear_errors_and_serving_goes_on(
    transport: Transport, era: Era, state_file: Path
) -> None:
    async with serve_and_connect(transport, era, state_file) as client:
        await _check_bad_calls(client)


async def test_a_body_over_the_limit_is_refused_with_413_and_the_server_keeps_serving() -> None:
    oversized = json.dumps({**INITIALIZE, "params": {**INITIALIZE["params"], "pad": "x" * (4 * 1024 * 1024)}})
    async with http_server() as base_url:
        async with httpx2.AsyncClient() as http:
            with anyio.fail_after(DEADLINE):
                response = await http.post(f"{base_url}/mcp", content=oversized, headers=MCP_HEADERS)
        assert response.status_code == 413
        async with connect("http", "legacy", base_url) as client:
            with anyio.fail_after(DEADLINE), pytest.raises(MCPError):
                await client.call_tool("greet", {"name": "x" * (5 * 1024 * 1024)})
            await _still_serving(client)


@pytest.mark.parametrize("protocol_version", [None, "2026-07-28"])
async def test_a_malformed_json_body_is_a_json_rpc_parse_error_and_the_server_keeps_serving(
    protocol_version: str | None,
) -> None:
    headers = dict(MCP_HEADERS)
    if protocol_version is not None:
        headers["MCP-Protocol-Version"] = protocol_version
    async with http_server() as base_url:
        async with httpx2.AsyncClient() as http:
            with anyio.fail_after(DEADLINE):
                response = await http.post(f"{base_url}/mcp", content=b'{"jsonrpc": "2.0", "id": 1,', headers=headers)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == types.PARSE_ERROR
        async with connect("http", "modern", base_url) as client:
            await _still_serving(client)


async def test_a_malformed_line_on_stdio_is_dropped_and_the_next_request_is_answered(state_file: Path) -> None:
    # The SDK's stdio transport logs an unparsable line and sends nothing back (HTTP answers 400 with a
    # JSON-RPC parse error); what matters is that the connection survives it.
    payload = b"{this is not json\n" + json.dumps(INITIALIZE).encode() + b"\n"
    replies, returncode = await serve_stdio_lines(state_file, payload, until_id=1)
    assert returncode == 0
    (reply,) = replies
    assert reply["id"] == 1
    assert reply["result"]["serverInfo"]["name"] == "adk-mcp-gateway"


@pytest.mark.parametrize("protocol_version", [None, "2025-11-25", "2026-07-28"])
async def test_a_json_rpc_batch_is_an_invalid_request_said_plainly(protocol_version: str | None) -> None:
    headers = dict(MCP_HEADERS)
    if protocol_version is not None:
        headers["MCP-Protocol-Version"] = protocol_version
    batch = json.dumps([INITIALIZE, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}])
    async with http_server() as base_url:
        async with httpx2.AsyncClient() as http:
            with anyio.fail_after(DEADLINE):
                response = await http.post(f"{base_url}/mcp", content=batch, headers=headers)
        async with connect("http", "legacy", base_url) as client:
            await _still_serving(client)
    assert response.status_code == 400
    body = response.json()
    assert body["id"] is None
    assert body["error"]["code"] == types.INVALID_REQUEST
    assert "batch" in body["error"]["message"]
    assert "validation" not in body["error"]["message"].lower()


@pytest.mark.parametrize("transport", ["stdio", "sse", "http"])
async def test_a_result_that_cannot_be_encoded_fails_its_call_alone_and_the_connection_serves_on(
    transport: Transport, tmp_path: Path
) -> None:
    """A lone surrogate has no UTF-8 form: the SDK's writer raised on a result holding one and ended the client's
    whole stdio or SSE connection; now that call alone is answered with an error. (Streamable HTTP gives each
    request a stream of its own: the SDK ends that one without an answer, and the session serves on.)"""
    from unencodable_tools import TOOLS as UNENCODABLE

    async with contextlib.AsyncExitStack() as stack:
        target: str | StdioServerParameters
        if transport == "stdio":
            tools = f"{Path(__file__).with_name('unencodable_tools.py')}:TOOLS"
            args = ["-m", "gateway.cli", "serve", "--tools", tools, "--state", str(tmp_path / "state.db")]
            target = StdioServerParameters(command=sys.executable, args=args, cwd=Path(__file__).parents[3])
        else:
            target = await stack.enter_async_context(http_server(ToolServer(UNENCODABLE)))
        client = await stack.enter_async_context(connect(transport, "legacy", target))
        with anyio.fail_after(DEADLINE):
            with pytest.raises(MCPError) as refused:
                await client.call_tool("file_name", {})
            after = await client.call_tool("echo", {"text": "still connected"})
    assert first_text(after) == "still connected"
    if transport != "http":
        assert refused.value.error.code == types.INTERNAL_ERROR
        assert "surrogates not allowed" in refused.value.error.message
