"""A 2026-07-28 upstream that stamps cache hints (SEP-2549) on every cacheable result and counts its listings.

Built in the test's process on the SDK's low-level `Server` (served over streamable HTTP by `serving_asgi`), so a
test reads how often the gateway asked it and changes its tools and its hints between listings. With `listen`, it
serves `subscriptions/listen`: `change_tools` then tells the gateway on its listen stream.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Literal

from mcp import types
from mcp.server import NotificationOptions, Server
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourcesListChanged, ToolsListChanged

from tests.support.loopback import serving_asgi

_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


class HintedUpstream:
    """The upstream's state: its tools, the hint it stamps, and how many times each method was asked."""

    def __init__(
        self, name: str, ttl_ms: int, scope: Literal["public", "private"] = "public", *, listen: bool = False
    ) -> None:
        self.name = name
        self.ttl_ms = ttl_ms
        self.scope: Literal["public", "private"] = scope
        self.tools = [f"{name}_one"]
        self.asked: Counter[str] = Counter()
        self._bus = InMemorySubscriptionBus() if listen else None
        listen_handler = ListenHandler(self._bus) if self._bus is not None else None
        self.server = Server(
            name,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_subscriptions_listen=listen_handler,
        )
        if listen:
            # The SDK's HTTP transport asks for default options, which hide `tools.listChanged`; this one announces.
            self.server.create_initialization_options = functools.partial(  # type: ignore[method-assign]
                Server.create_initialization_options, self.server, NotificationOptions(tools_changed=True)
            )

    def _hint(self, method: str) -> dict[str, Any]:
        self.asked[method] += 1
        return {"ttl_ms": self.ttl_ms, "cache_scope": self.scope}

    async def change_tools(self, tools: list[str]) -> None:
        """List `tools` from now on, and say so on the listen streams (with `listen`)."""
        self.tools = tools
        if self._bus is not None:
            await self._bus.publish(ToolsListChanged())

    async def change_resources(self) -> None:
        """Say on the listen streams (with `listen`) that the resources changed."""
        if self._bus is not None:
            await self._bus.publish(ResourcesListChanged())

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = [types.Tool(name=name, description=f"Tool {name}.", input_schema=_EMPTY) for name in self.tools]
        return types.ListToolsResult(tools=tools, **self._hint("tools/list"))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=f"{params.name} ran")])

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompt = types.Prompt(name=f"{self.name}_prompt", description="A prompt.")
        return types.ListPromptsResult(prompts=[prompt], **self._hint("prompts/list"))

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resource = types.Resource(uri=f"memo://{self.name}", name=f"{self.name} memo", mime_type="text/plain")
        return types.ListResourcesResult(resources=[resource], **self._hint("resources/list"))

    async def _list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(uri_template=f"memo://{self.name}/{{day}}", name=f"{self.name} day")
        return types.ListResourceTemplatesResult(
            resource_templates=[template], **self._hint("resources/templates/list")
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        contents = types.TextResourceContents(uri=str(params.uri), mime_type="text/plain", text="nothing planned")
        return types.ReadResourceResult(contents=[contents], **self._hint("resources/read"))


@asynccontextmanager
async def serving(upstream: HintedUpstream) -> AsyncGenerator[str]:
    """`upstream` over streamable HTTP on a loopback port; yields its `/mcp` URL."""
    async with serving_asgi(upstream.server.streamable_http_app()) as base_url:
        yield f"{base_url}/mcp"
