"""The tool catalog: `tools/list` is paginated, cached, and invalidated when the server announces a change."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest
from client_harness import DEADLINE, http_params, our_http_server
from mcp import types
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import Context, MCPServer
from upstream_tools import TOOLS

from gateway.client import McpToolset
from gateway.server import ToolServer
from gateway.server.observe.observation import RequestRecord
from gateway.state import InMemoryStateStore
from gateway.tools import ToolContext
from tests.support.loopback import serving_asgi

PAGE_SIZE = 2


class MethodCounter:
    """Server middleware counting the requests of each method."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is not None:
            self.counts[ctx.method] += 1
        return await call_next(ctx)

    @property
    def listings(self) -> int:
        return self.counts["tools/list"]


class ListingObserver:
    """A `RequestObserver` of our server counting the `tools/list` requests it answered."""

    def __init__(self) -> None:
        self.listings = 0

    def request_done(self, record: RequestRecord) -> None:
        if record.method == "tools/list":
            self.listings += 1


def paginated_server(counter: MethodCounter) -> Server[Any]:
    """A low-level server with five tools in pages of two; calling `grow` adds one and announces it."""
    tools = [types.Tool(name=f"tool_{index}", input_schema={"type": "object"}) for index in range(4)]
    tools.append(types.Tool(name="grow", input_schema={"type": "object"}))

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        del ctx
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE_SIZE
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    async def on_call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        if params.name == "grow":
            tools.append(types.Tool(name="grown", input_schema={"type": "object"}))
            # On the call's own stream, so the notice arrives before the result.
            await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
        return types.CallToolResult(content=[types.TextContent(text="done")])

    server = Server("paginated", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    server.middleware.append(counter)
    return server


async def names(toolset: McpToolset) -> list[str]:
    with anyio.fail_after(DEADLINE):
        return [tool.name for tool in await toolset.get_tools()]


async def call(toolset: McpToolset, name: str, args: dict[str, Any] | None = None) -> Any:
    with anyio.fail_after(DEADLINE):
        tool = next(tool for tool in await toolset.get_tools() if tool.name == name)
        return await tool.run_async(args=args or {}, tool_context=ToolContext())


@pytest.mark.anyio
async def test_tools_list_is_paginated_and_cached_until_the_server_announces_a_change() -> None:
    counter = MethodCounter()
    async with (
        serving_asgi(paginated_server(counter).streamable_http_app()) as base_url,
        McpToolset(connection_params=http_params(base_url, "http"), mode="legacy") as toolset,
    ):
        assert await names(toolset) == ["grow", "tool_0", "tool_1", "tool_2", "tool_3"]
        assert counter.listings == 3  # five tools, pages of two
        await names(toolset)
        await names(toolset)
        assert counter.listings == 3

        assert await call(toolset, "grow") == {"result": "done"}
        assert "grown" in await names(toolset)
        assert counter.listings == 6
        await names(toolset)
        assert counter.listings == 6


@pytest.mark.anyio
async def test_a_modern_session_without_a_change_subscription_lists_every_time() -> None:
    counter = MethodCounter()
    async with (
        serving_asgi(paginated_server(counter).streamable_http_app()) as base_url,
        McpToolset(connection_params=http_params(base_url, "http"), mode="auto") as toolset,
    ):
        with anyio.fail_after(DEADLINE):
            assert (await toolset.session()).client.protocol_version == "2026-07-28"
        await names(toolset)
        await names(toolset)
        assert counter.listings == 6


def growing_mcp_server(counter: MethodCounter) -> MCPServer:
    server = MCPServer("growing", log_level="WARNING", middleware=[counter])

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool `grown` and announce it."""

        def grown() -> str:
            """A tool that was not there at first."""
            return "new"

        server.add_tool(grown)
        await ctx.notify_tools_changed()
        return "done"

    return server


@pytest.mark.anyio
async def test_a_modern_session_caches_while_it_listens_for_changes() -> None:
    counter = MethodCounter()
    async with (
        serving_asgi(growing_mcp_server(counter).streamable_http_app()) as base_url,
        McpToolset(connection_params=http_params(base_url, "http"), mode="auto") as toolset,
    ):
        with anyio.fail_after(DEADLINE):
            session = await toolset.session()
            assert session.client.protocol_version == "2026-07-28"
            # The subscription is acknowledged in the background; nothing to wait on but its flag.
            while not session.watches_tools:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert await names(toolset) == ["grow"]
        await names(toolset)
        assert counter.listings == 1

        assert await call(toolset, "grow") == {"result": "done"}
        # The change arrives on the subscription stream, independently of the call's result.
        with anyio.fail_after(DEADLINE):
            while "grown" not in await names(toolset):  # noqa: ASYNC110 - the server's state, seen by listing
                await anyio.sleep(0.01)
        assert counter.listings == 2


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tools_our_server_mode_adds_during_a_session_show_up(mode: str) -> None:
    counter = ListingObserver()
    tool_server = ToolServer(TOOLS, state_store=InMemoryStateStore())
    # The server's own observation sees every tools/list the client sends, whichever lane answers it (the HTTP
    # front's fast lane answers a warm page below the SDK's server, where no SDK middleware would count it).
    tool_server.observation.observers.append(counter)
    async with (
        our_http_server(tool_server) as base_url,
        McpToolset(connection_params=http_params(base_url, "http"), mode=mode) as toolset,
    ):
        assert "secret_door" not in await names(toolset)
        assert await call(toolset, "toggle_feature") == {"result": True}
        assert "secret_door" in await names(toolset)
        assert await call(toolset, "secret_door") == {"result": "you found it"}
        assert await call(toolset, "toggle_feature") == {"result": False}
        assert "secret_door" not in await names(toolset)
        if mode == "legacy":
            # Listed once, then once after each announced change.
            assert counter.listings == 3


@pytest.mark.anyio
async def test_upstream_tools_with_names_adk_reserves_are_left_out(caplog: pytest.LogCaptureFixture) -> None:
    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        del ctx, params
        names = ["transfer_to_agent", "lookup", "adk_request_confirmation"]
        return types.ListToolsResult(tools=[types.Tool(name=name, input_schema={"type": "object"}) for name in names])

    server = Server("reserved", on_list_tools=on_list_tools)
    async with (
        serving_asgi(server.streamable_http_app()) as base_url,
        McpToolset(connection_params=http_params(base_url, "http"), mode="legacy") as toolset,
    ):
        assert await names(toolset) == ["lookup"]
    assert "transfer_to_agent" in caplog.text
    assert "reserved by ADK" in caplog.text


@pytest.mark.anyio
async def test_a_cached_listing_gives_the_same_tool_objects_and_a_changed_one_new_ones_where_it_changed() -> None:
    async with (
        serving_asgi(paginated_server(MethodCounter()).streamable_http_app()) as base_url,
        McpToolset(connection_params=http_params(base_url, "http"), mode="legacy", tool_name_prefix="p") as toolset,
    ):
        with anyio.fail_after(DEADLINE):
            first = await toolset.get_tools_with_prefix()
            again = await toolset.get_tools_with_prefix()
            # Building a tool converts its schemas; a listing that did not change reuses what was built.
            assert [id(tool) for tool in again] == [id(tool) for tool in first]
            assert await call(toolset, "grow") == {"result": "done"}
            grown = {tool.name: tool for tool in await toolset.get_tools_with_prefix()}
        assert set(grown) == {tool.name for tool in first} | {"p_grown"}
        # The upstream listed its unchanged tools anew; equal tools are still not rebuilt.
        assert all(grown[tool.name] is tool for tool in first)


@pytest.mark.anyio
async def test_a_cached_listing_follows_a_changed_filter_and_confirmation_policy() -> None:
    counter = MethodCounter()
    async with (
        serving_asgi(paginated_server(counter).streamable_http_app()) as base_url,
        McpToolset(connection_params=http_params(base_url, "http"), mode="legacy", tool_filter=["tool_0"]) as toolset,
    ):
        first = await names(toolset)
        assert toolset.tool_filter == ["tool_0"]
        toolset.tool_filter.append("tool_1")  # the same list, changed in place
        widened = await names(toolset)
        toolset.tool_filter = ["grow"]
        narrowed = await names(toolset)
        (unconfirmed,) = await toolset.get_tools()
        toolset.require_confirmation = True
        (confirmed,) = await toolset.get_tools()
        asks = await confirmed.check_require_confirmation({}, ToolContext())
    assert (first, widened, narrowed) == (["tool_0"], ["tool_0", "tool_1"], ["grow"])
    assert counter.listings == 3  # one listing of three pages, cached throughout
    assert unconfirmed is not confirmed
    assert asks is True
