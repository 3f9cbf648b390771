"""`McpToolset(use_mcp_resources=True)`: ADK's `load_mcp_resource` tool, reading an upstream's resources over HTTP."""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import pytest
from client_harness import DEADLINE
from mcp.server.mcpserver import MCPServer

from gateway.client import McpToolset, StreamableHTTPConnectionParams
from gateway.tools import ToolContext
from tests.support.loopback import serving_asgi

pytestmark = pytest.mark.anyio

README = "# Docs\n\nEverything about the docs server."
LOGO = b"\x89PNG\r\n\x1a\n" + bytes(range(64))


@asynccontextmanager
async def docs_server() -> AsyncGenerator[str]:
    """An upstream with one tool and two resources: markdown text and a PNG blob; yields its `/mcp` URL."""
    server = MCPServer("docs", log_level="WARNING")

    @server.tool()
    def search(query: str) -> str:
        """Search the docs."""
        return query

    @server.resource("docs://readme", name="readme", mime_type="text/markdown")
    def readme() -> str:
        return README

    @server.resource("docs://logo.png", name="logo", mime_type="image/png")
    def logo() -> bytes:
        return LOGO

    async with serving_asgi(server.streamable_http_app()) as base_url:
        yield f"{base_url}/mcp"


def toolset(url: str, **options: object) -> McpToolset:
    params = StreamableHTTPConnectionParams(url=url, connect_timeout=DEADLINE)
    return McpToolset(connection_params=params, mode="legacy", **options)  # type: ignore[arg-type]


async def test_use_mcp_resources_adds_load_mcp_resource_listing_the_resources_and_returning_text_and_blobs() -> None:
    async with docs_server() as url, toolset(url, use_mcp_resources=True, tool_name_prefix="docs") as tools:
        with anyio.fail_after(DEADLINE):
            listed = await tools.get_tools_with_prefix()
            (loader,) = [tool for tool in listed if tool.name == "docs_load_mcp_resource"]
            answer = await loader.run_async(args={"resource_names": ["readme", "logo"]}, tool_context=ToolContext())
            by_uri = await loader.run_async(args={"resource_names": ["docs://readme"]}, tool_context=ToolContext())
            unknown = await loader.run_async(args={"resource_names": ["nope"]}, tool_context=ToolContext())
    assert [tool.name for tool in listed] == ["docs_search", "docs_load_mcp_resource"]
    declaration = loader.get_declaration()
    assert declaration is not None
    assert declaration.parameters_json_schema == {
        "type": "object",
        "properties": {"resource_names": {"type": "array", "items": {"type": "string"}}},
    }
    assert loader.description.startswith("Loads resources from the MCP server.")
    assert "readme (docs://readme, text/markdown)" in loader.description
    assert "logo (docs://logo.png, image/png)" in loader.description
    assert answer["resource_names"] == ["readme", "logo"]
    texts = [part.get("text") for part in answer["parts"]]
    assert texts[:3] == ["Resource readme is:", README, "Resource logo is:"]
    image = answer["parts"][3]
    assert (image["type"], image["mime_type"]) == ("image", "image/png")
    assert base64.b64decode(image["data"]) == LOGO
    assert [part.get("text") for part in by_uri["parts"]] == ["Resource docs://readme is:", README]
    assert "nope" in unknown["error"]
    assert "readme" in unknown["error"]


async def test_without_use_mcp_resources_there_is_no_resource_tool() -> None:
    async with docs_server() as url, toolset(url) as tools:
        with anyio.fail_after(DEADLINE):
            names = [tool.name for tool in await tools.get_tools()]
    assert names == ["search"]
