"""A handshake-era call's result crosses the hop as the upstream sent it: the gateway relays it, its client judges it.

The gateway used to hand an upstream's result to the SDK client's checks before forwarding it; a result whose
`structuredContent` breaks its tool's `outputSchema` then became the gateway's own `isError` text. Called directly,
the client receives the result and judges it itself, so through the gateway it must receive the same result.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import DEADLINE, connect, gateway_http, write_config
from mcp import types
from mcp.server import Server
from mcp.server.context import ServerRequestContext

from tests.support.loopback import serving_asgi

pytestmark = pytest.mark.anyio

OUTPUT_SCHEMA = {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]}
SENT = {"celsius": "warm"}
"""What the upstream returns: not a number, against its own output schema."""


def _upstream() -> Server[Any]:
    async def list_tools(
        _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tool = types.Tool(name="temperature", input_schema={"type": "object"}, output_schema=OUTPUT_SCHEMA)
        return types.ListToolsResult(tools=[tool])

    async def call_tool(
        _ctx: ServerRequestContext[Any, Any], _params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="warm")], structured_content=SENT)

    return Server("loose-upstream", on_list_tools=list_tools, on_call_tool=call_tool)


@asynccontextmanager
async def _served(server: Server[Any]) -> AsyncGenerator[str]:
    async with serving_asgi(server.streamable_http_app()) as base_url:
        yield f"{base_url}/mcp"


async def test_a_result_breaking_its_output_schema_reaches_the_client_as_the_upstream_sent_it(tmp_path: Path) -> None:
    async with _served(_upstream()) as upstream_url:
        config = write_config(tmp_path, {"loose": {"url": upstream_url, "prefix": ""}})
        async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
            request = types.CallToolRequest(params=types.CallToolRequestParams(name="temperature", arguments={}))
            with anyio.fail_after(DEADLINE):
                # The session's own request, not `call_tool`: this client receives the result without judging it.
                result = await client.session.send_request(request, types.CallToolResult)
    assert result.is_error is not True, result.content
    assert result.structured_content == SENT
    assert result.content == [types.TextContent(text="warm")]
