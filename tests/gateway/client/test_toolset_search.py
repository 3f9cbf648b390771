"""`McpToolset(tool_search=True)`: an agent gets `search_tools` and `call_tool` instead of the whole catalog.

The upstream is our server mode over HTTP on loopback, publishing `upstream_tools.TOOLS`.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from client_harness import DEADLINE, http_params, our_http_server

from gateway.client import McpToolset
from gateway.tools import BaseTool, ToolContext

pytestmark = pytest.mark.anyio


async def run(tools: list[BaseTool], name: str, args: dict[str, Any]) -> Any:
    tool = next(tool for tool in tools if tool.name == name)
    with anyio.fail_after(DEADLINE):
        return await tool.run_async(args=args, tool_context=ToolContext())


async def test_a_searching_toolset_offers_two_tools_that_find_and_call_the_filtered_catalog() -> None:
    async with (
        our_http_server() as base_url,
        McpToolset(
            connection_params=http_params(base_url, "http"),
            tool_filter=["add", "weather", "place_order"],
            tool_search=True,
        ) as toolset,
    ):
        with anyio.fail_after(DEADLINE):
            tools = await toolset.get_tools()
        found = await run(tools, "search_tools", {"query": "weather forecast for a city", "limit": 3})
        secret = await run(tools, "search_tools", {"query": "secret door"})
        weather = await run(tools, "call_tool", {"name": "weather", "arguments": {"city": "Paris"}})
        added = await run(tools, "call_tool", {"name": "add", "arguments": {"a": 2, "b": 3}})
        refused = await run(tools, "call_tool", {"name": "secret_door", "arguments": {}})
    assert [tool.name for tool in tools] == ["search_tools", "call_tool"]
    hits = found["tools"]
    assert hits[0]["name"] == "weather"
    assert hits[0]["inputSchema"]["properties"]["city"]["type"] == "string"
    assert {hit["name"] for hit in hits} <= {"add", "weather", "place_order"}
    assert all(hit["name"] != "secret_door" for hit in secret["tools"])
    assert weather == {"city": "Paris", "celsius": 21}
    assert added == {"result": 5}
    assert "search_tools" in refused["error"]


async def test_a_searching_toolset_with_a_prefix_is_called_by_the_prefixed_names() -> None:
    async with (
        our_http_server() as base_url,
        McpToolset(connection_params=http_params(base_url, "http"), tool_name_prefix="up", tool_search=True) as toolset,
    ):
        with anyio.fail_after(DEADLINE):
            tools = await toolset.get_tools_with_prefix()
            call = await toolset.get_tool_with_prefix("up_call_tool")
        assert call is not None
        with anyio.fail_after(DEADLINE):
            added = await call.run_async(
                args={"name": "add", "arguments": {"a": 1, "b": 1}}, tool_context=ToolContext()
            )
    assert [tool.name for tool in tools] == ["up_search_tools", "up_call_tool"]
    assert added == {"result": 2}


async def test_a_searching_toolset_ranks_by_meaning_and_finds_nothing_for_a_request_out_of_scope() -> None:
    from gateway.search import _sentence_encoder

    if _sentence_encoder.loaded_encoder() is None:
        pytest.skip(
            "the search extra's sentence encoder (tokenizers and the all-MiniLM-L6-v2 weights) is not installed"
        )
    async with (
        our_http_server() as base_url,
        McpToolset(
            connection_params=http_params(base_url, "http"),
            tool_filter=["add", "weather", "place_order"],
            tool_search=True,
        ) as toolset,
    ):
        with anyio.fail_after(DEADLINE):
            tools = await toolset.get_tools()
        rain = await run(tools, "search_tools", {"query": "will it rain in Paris tomorrow", "limit": 1})
        total = await run(tools, "search_tools", {"query": "the sum of 2 and 3", "limit": 1})
        joke = await run(tools, "search_tools", {"query": "who painted the Mona Lisa"})
    assert [hit["name"] for hit in rain["tools"]] == ["weather"]
    assert [hit["name"] for hit in total["tools"]] == ["add"]
    assert joke == {"tools": []}
