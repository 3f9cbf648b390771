"""A request whose JSON-RPC `id` is not a string or an integer is answered -32600 (Invalid Request) with `id: null`.

Before, such a request was taken for a notification (HTTP 202, no answer) and the client waited forever.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import types
from server_harness import (
    DEADLINE,
    HANDSHAKE_VERSION,
    INITIALIZE,
    MCP_HEADERS,
    MODERN_VERSION,
    http_server,
    serve_stdio_lines,
)

pytestmark = pytest.mark.anyio

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
BAD_IDS: list[Any] = [{"a": 1}, [1], True, False, 1.5, None]


def _list_tools(request_id: Any, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/list", "params": params}


def _assert_invalid_request(reply: dict[str, Any]) -> None:
    assert reply["id"] is None
    assert reply["error"]["code"] == types.INVALID_REQUEST


@asynccontextmanager
async def _legacy_session(base_url: str) -> AsyncGenerator[tuple[httpx2.AsyncClient, dict[str, str]]]:
    async with httpx2.AsyncClient(base_url=base_url) as http:
        with anyio.fail_after(DEADLINE):
            opened = await http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            headers = {
                **MCP_HEADERS,
                "mcp-session-id": opened.headers["mcp-session-id"],
                "MCP-Protocol-Version": HANDSHAKE_VERSION,
            }
            await http.post("/mcp", json=INITIALIZED, headers=headers)
        yield http, headers


@pytest.mark.parametrize("bad_id", BAD_IDS)
async def test_a_handshake_era_http_request_with_a_malformed_id_gets_invalid_request_with_a_null_id(
    bad_id: Any,
) -> None:
    async with http_server() as base_url, _legacy_session(base_url) as (http, headers):
        with anyio.fail_after(DEADLINE):
            response = await http.post("/mcp", json=_list_tools(bad_id), headers=headers)
            after = await http.post("/mcp", json=_list_tools(2), headers=headers)
    assert response.status_code == 400
    _assert_invalid_request(response.json())
    assert after.status_code == 200
    assert '"id":2' in after.text


async def test_an_integer_id_nested_in_the_params_does_not_hide_a_malformed_request_id() -> None:
    async with http_server() as base_url, _legacy_session(base_url) as (http, headers):
        with anyio.fail_after(DEADLINE):
            response = await http.post("/mcp", json=_list_tools({"a": 1}, _meta={"id": 1}), headers=headers)
    assert response.status_code == 400
    _assert_invalid_request(response.json())


@pytest.mark.parametrize("bad_id", BAD_IDS)
async def test_a_modern_era_http_request_with_a_malformed_id_gets_invalid_request_with_a_null_id(bad_id: Any) -> None:
    headers = {**MCP_HEADERS, "MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/list"}
    async with http_server() as base_url, httpx2.AsyncClient(base_url=base_url) as http:
        with anyio.fail_after(DEADLINE):
            response = await http.post("/mcp", json=_list_tools(bad_id, _meta=META), headers=headers)
    assert response.status_code == 400
    _assert_invalid_request(response.json())


async def test_a_notification_without_an_id_is_still_accepted_silently() -> None:
    async with http_server() as base_url, _legacy_session(base_url) as (http, headers):
        with anyio.fail_after(DEADLINE):
            response = await http.post(
                "/mcp", json={"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, headers=headers
            )
    assert response.status_code == 202


@pytest.mark.parametrize("bad_id", BAD_IDS)
async def test_an_sse_post_with_a_malformed_id_gets_invalid_request_with_a_null_id(bad_id: Any) -> None:
    async with http_server() as base_url, httpx2.AsyncClient(base_url=base_url, timeout=DEADLINE) as http:
        with anyio.fail_after(DEADLINE):
            async with http.stream("GET", "/sse") as events:
                endpoint = ""
                async for line in events.aiter_lines():
                    if line.startswith("data: /messages/"):
                        endpoint = line.removeprefix("data: ")
                        break
                response = await http.post(endpoint, json=_list_tools(bad_id), headers=MCP_HEADERS)
    assert response.status_code == 400
    _assert_invalid_request(response.json())


async def test_a_stdio_request_with_a_malformed_id_gets_invalid_request_with_a_null_id(tmp_path: Path) -> None:
    lines = [INITIALIZE, INITIALIZED, *(_list_tools(bad_id) for bad_id in BAD_IDS), _list_tools(99)]
    payload = "".join(json.dumps(line) + "\n" for line in lines).encode()
    replies, _ = await serve_stdio_lines(tmp_path / "s.db", payload, until_id=99)
    invalid = [reply for reply in replies if "error" in reply]
    assert len(invalid) == len(BAD_IDS)
    for reply in invalid:
        _assert_invalid_request(reply)
    assert replies[-1]["id"] == 99
    assert "tools" in replies[-1]["result"]
