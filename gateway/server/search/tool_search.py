"""Tool search for large catalogs: `tools/list` offers `search_tools` and `call_tool` instead of every tool.

A `ToolServer` with `tool_search` (the config's `toolSearch`) adds this middleware ahead of its policy guard:

- `tools/list` answers `search_tools(query, limit)`, `call_tool(name, arguments)`, the tools the settings mark
  always visible and any toolset's sign-in tool (`gateway.tools.auth_sign_in`: a user who has not signed in to
  that source yet sees it, as without search), when the mode is `on`, or `auto` and the caller may use more tools
  than the threshold. Otherwise the listing is the usual one.
- `search_tools` ranks the caller's catalog by BM25 fused with a sentence encoder's similarity in meaning where
  the `search` extra's encoder is installed (`gateway.search.tool_index`); a request like nothing in the catalog
  finds nothing; and answers each hit's name, title, description and full input schema. The
  catalog is the session's, so upstreams' `allowTools`/`denyTools` hold, and hits the caller's policy does not
  allow are left out: search never reveals such a tool.
- `call_tool(name, arguments)` becomes a `tools/call` of `name` before the policy guard and the handler see it, so
  it takes the very path a direct call takes: policy, rate limits, confirmations, elicitation, forwarding.
- The index is built when the catalog it covers first differs from the last one indexed (an upstream's
  `list_changed` gives the catalog new tool objects), off the event loop.

A catalog tool named like one of the two search tools stays callable directly and through `call_tool`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Final, Literal, cast

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from gateway.search.tool_index import ToolIndex
from gateway.server.catalog import CatalogEntry
from gateway.server.identity import current_principal
from gateway.server.policy.rules import Policy

if TYPE_CHECKING:
    from gateway.server.extension import PlainRequest
from gateway.tools.auth_sign_in import SignInTool

__all__ = ["CALL_TOOL", "SEARCH_TOOL", "ToolSearch", "ToolSearchSettings"]

logger = logging.getLogger(__name__)

SEARCH_TOOL: Final = "search_tools"
CALL_TOOL: Final = "call_tool"
DEFAULT_LIMIT: Final = 5
MAX_LIMIT: Final = 50
_INDEXES_KEPT: Final = 4
"""Distinct catalogs whose index is kept (sessions whose toolsets give different tools get different ones)."""

Entries = Callable[[ServerRequestContext[Any, Any]], Awaitable[dict[str, CatalogEntry]]]
"""The catalog of the session a request belongs to."""


@dataclass(frozen=True)
class ToolSearchSettings:
    """When `tools/list` offers search instead of the catalog.

    Attributes:
        mode: `off`; `on`; or `auto`: when the caller may use more than `threshold` tools.
        threshold: the catalog size `auto` tolerates before it switches to search.
        always_visible: globs of tool names listed next to the search tools (the policy still applies).
    """

    mode: Literal["off", "auto", "on"] = "auto"
    threshold: int = 40
    always_visible: tuple[str, ...] = ()


def _search_tool(catalog_size: int) -> types.Tool:
    return types.Tool(
        name=SEARCH_TOOL,
        title="Search tools",
        description=f"Find the right tool among this gateway's {catalog_size} tools: describe what you want to do "
        f"in a few words. Answers the best matches (name, description and input schema), best first; then use "
        f"{CALL_TOOL} to call one.",
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do, in plain words."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": DEFAULT_LIMIT,
                    "description": "How many tools to answer at most.",
                },
            },
            "required": ["query"],
        },
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )


_CALL_TOOL: Final = types.Tool(
    name=CALL_TOOL,
    title="Call a tool",
    description=f"Call a tool that {SEARCH_TOOL} found, by its name, with arguments matching its input schema.",
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": f"The tool's name, as {SEARCH_TOOL} gave it."},
            "arguments": {"type": "object", "description": "The tool's arguments, as its input schema says."},
        },
        "required": ["name"],
    },
)


def _refusal(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _hit(tool: types.Tool) -> dict[str, Any]:
    hit: dict[str, Any] = {"name": tool.name}
    title = tool.title or (tool.annotations.title if tool.annotations else None)
    if title:
        hit["title"] = title
    if tool.description:
        hit["description"] = tool.description
    hit["inputSchema"] = tool.input_schema
    return hit


class ToolSearch:
    """The middleware (add it to `Server.middleware` before the policy guard)."""

    def __init__(self, settings: ToolSearchSettings, entries: Entries, policy: Policy | None = None) -> None:
        self.settings = settings
        self._entries = entries
        self.policy = policy
        """The caller's policy hides what it may not use from searches (replaced on a config reload)."""
        self._indexes: OrderedDict[tuple[tuple[str, int], ...], ToolIndex] = OrderedDict()
        self._building = anyio.Lock()

    def applies_to(self, request: PlainRequest) -> bool:
        """Search may replace any listing and reach any tool (`CallPipeline`): nothing takes the plain
        path while it is on."""
        del request
        return self.settings.mode != "off"

    def _allowed(self) -> Callable[[str], bool]:
        policy = self.policy
        if policy is None or not policy.governs("tools"):
            return lambda _name: True
        principal = current_principal()
        return lambda name: policy.allows(principal, "tools", name)

    async def _visible(self, ctx: ServerRequestContext[Any, Any]) -> tuple[list[CatalogEntry], bool]:
        """The caller's tools, and whether search replaces them in the listing."""
        allowed = self._allowed()
        visible = [entry for entry in (await self._entries(ctx)).values() if allowed(entry.tool.name)]
        searching = self.settings.mode == "on" or len(visible) > self.settings.threshold
        return visible, searching

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if self.settings.mode == "off" or ctx.method not in ("tools/list", "tools/call"):
            return await call_next(ctx)
        params = cast("dict[str, Any]", ctx.params or {})
        if ctx.method == "tools/call" and params.get("name") not in (SEARCH_TOOL, CALL_TOOL):
            return await call_next(ctx)
        visible, searching = await self._visible(ctx)
        if not searching:
            return await call_next(ctx)
        if ctx.method == "tools/list":
            shown = [entry.mcp_tool for entry in visible if self._listed(entry)]
            return types.ListToolsResult(tools=[_search_tool(len(visible)), _CALL_TOOL, *shown])
        arguments = params.get("arguments")
        arguments = cast("dict[str, Any]", arguments) if isinstance(arguments, dict) else {}
        if params["name"] == SEARCH_TOOL:
            return await self._search(visible, arguments)
        name = arguments.get("name")
        if not isinstance(name, str) or name in (SEARCH_TOOL, CALL_TOOL):
            return _refusal(f"{CALL_TOOL} needs 'name': the name of a tool {SEARCH_TOOL} found.")
        inner = arguments.get("arguments", {})
        if not isinstance(inner, dict):
            return _refusal(f"{CALL_TOOL}'s 'arguments' must be an object (the tool's arguments by name).")
        # From here on this is a call of `name`: the policy guard, the handler and any extension see only that.
        return await call_next(dataclasses.replace(ctx, params={**params, "name": name, "arguments": inner}))

    def _listed(self, entry: CatalogEntry) -> bool:
        """Whether a tool is listed beside the search tools: the settings mark it always visible, or it is a
        toolset's sign-in tool (a user who has not signed in to a source must be told where to, and its tools can
        be found only afterwards)."""
        return isinstance(entry.tool, SignInTool) or any(
            fnmatchcase(entry.tool.name, glob) for glob in self.settings.always_visible
        )

    async def _search(self, visible: list[CatalogEntry], arguments: dict[str, Any]) -> types.CallToolResult:
        query = arguments.get("query")
        limit = arguments.get("limit", DEFAULT_LIMIT)
        if not isinstance(query, str) or not query.strip():
            return _refusal(f"{SEARCH_TOOL} needs 'query': what you want to do, in plain words.")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            return _refusal(f"{SEARCH_TOOL}'s 'limit' must be a whole number from 1 to {MAX_LIMIT}.")
        index = await self.index([entry.mcp_tool for entry in visible])
        names = {entry.tool.name for entry in visible}
        # Off the event loop: with the sentence encoder, a search encodes the request (milliseconds of matrix work).
        found_tools = await anyio.to_thread.run_sync(index.search, query, limit, names.__contains__)
        hits = [_hit(tool) for tool in found_tools]
        found: dict[str, Any] = {"tools": hits}
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(found, ensure_ascii=False))], structured_content=found
        )

    async def index(self, tools: list[types.Tool]) -> ToolIndex:
        """The index of exactly these tools (built, off the event loop, when first asked for)."""
        key = tuple(sorted((tool.name, id(tool)) for tool in tools))
        async with self._building:
            index = self._indexes.get(key)
            if index is None:
                logger.info("Indexing %d tools for tool search", len(tools))
                index = await anyio.to_thread.run_sync(ToolIndex, tools)
                self._indexes[key] = index
                if len(self._indexes) > _INDEXES_KEPT:
                    self._indexes.popitem(last=False)
            self._indexes.move_to_end(key)
            return index
