"""`tools/list` over every transport and in both protocol eras, and its pagination."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, types
from server_harness import DEADLINE, ERAS, Era, Transport, expected_version, serve_and_connect

from adapters.mcp_tool import LONG_RUNNING_META_KEY
from gateway.server import ToolServer

pytestmark = pytest.mark.anyio

PUBLISHED = [
    "add",
    "greet",
    "remove_item",
    "transfer",
    "count_up",
    "wait_forever",
    "slow_job",
    "bump",
    "set_key",
    "read_state",
    "ask_name",
    "summarize",
    "chatty",
    "toggle_feature",
]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("transport", ["stdio", "sse", "http"])
async def test_tools_list_describes_every_tool_over_each_transport(
    transport: Transport, era: Era, tmp_path: Path
) -> None:
    async with serve_and_connect(transport, era, tmp_path / "state.db") as client:
        with anyio.fail_after(DEADLINE):
            listing = await client.list_tools()
        assert client.protocol_version == expected_version(era)

    tools = {tool.name: tool for tool in listing.tools}
    assert list(tools) == PUBLISHED
    assert listing.next_cursor is None
    for tool in listing.tools:
        assert tool.input_schema["type"] == "object"
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert tools["add"].input_schema["properties"]["a"]["type"] == "integer"
    assert tools["add"].output_schema is not None
    assert tools["add"].output_schema["properties"]["result"]["type"] == "integer"
    annotations = tools["remove_item"].annotations
    assert annotations is not None
    assert annotations.destructive_hint is True
    assert tools["add"].annotations is None or tools["add"].annotations.destructive_hint is not True
    assert tools["count_up"].meta == {LONG_RUNNING_META_KEY: True}
    assert tools["add"].meta is None
    assert "tool_context" not in tools["bump"].input_schema.get("properties", {})


def _numbered_tool(index: int) -> Callable[[int], int]:
    def tool(x: int) -> int:
        return x + index

    tool.__name__ = tool.__qualname__ = f"tool_{index:03d}"
    tool.__doc__ = f"Add {index}."
    return tool


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_more_than_a_page_of_tools_is_listed_page_by_page_with_cursors(mode: str) -> None:
    server = ToolServer([_numbered_tool(i) for i in range(250)])
    pages: list[list[str]] = []
    async with Client(server.server, mode=mode) as client:
        cursor: str | None = None
        with anyio.fail_after(DEADLINE):
            while True:
                page = await client.list_tools(cursor=cursor)
                pages.append([tool.name for tool in page.tools])
                cursor = page.next_cursor
                if cursor is None:
                    break
            result = await client.call_tool("tool_249", {"x": 1})

    assert [len(page) for page in pages] == [100, 100, 50]
    assert [name for page in pages for name in page] == [f"tool_{i:03d}" for i in range(250)]
    assert result.structured_content == {"result": 250}


async def test_a_cursor_the_server_did_not_issue_is_a_json_rpc_error() -> None:
    server = ToolServer([_numbered_tool(i) for i in range(3)])
    async with Client(server.server, mode="legacy") as client:
        with anyio.fail_after(DEADLINE), pytest.raises(MCPError) as raised:
            await client.list_tools(cursor="not-a-cursor")
        listing: Any = await client.list_tools()
    assert "Invalid cursor" in raised.value.error.message
    assert len(listing.tools) == 3


@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param("²", id="superscript-digit"),
        pytest.param("9" * 5000, id="5000-digits"),
        pytest.param("-1", id="negative"),
        pytest.param("1.5", id="fraction"),
        pytest.param(" 1", id="space"),
        pytest.param("٣", id="arabic-indic-digit"),
    ],
)
async def test_a_malformed_cursor_is_invalid_params_with_a_short_plain_message(cursor: str) -> None:
    server = ToolServer([_numbered_tool(i) for i in range(3)], page_size=2)
    async with Client(server.server, mode="legacy") as client:
        with anyio.fail_after(DEADLINE), pytest.raises(MCPError) as raised:
            await client.list_tools(cursor=cursor)
        second_page: Any = await client.list_tools(cursor="2")
    error = raised.value.error
    assert error.code == types.INVALID_PARAMS
    assert error.message.startswith("Invalid cursor")
    assert "tools/list" in error.message
    assert "int()" not in error.message
    assert len(error.message) < 200
    assert [tool.name for tool in second_page.tools] == ["tool_002"]
