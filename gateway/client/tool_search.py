"""`SearchTools`: an `McpToolset(tool_search=True)` offers an agent two tools instead of its whole catalog.

- `search_tools(query, limit)` ranks the toolset's tools (after its `tool_filter`) with the gateway's tool index
  (`gateway.search.tool_index`, the `search` extra: BM25 fused with a sentence encoder's similarity in meaning; a
  request like none of the tools finds nothing) and answers each hit's name, description and input schema.
- `call_tool(name, arguments)` calls one of those tools by the name `search_tools` gave; it runs as a direct call
  would (confirmation, sign-in, errors as ADK's `{"error": ...}` dict). A name the toolset does not offer is an
  error dict listing what search can find, never a call.

The index is built when the toolset's tools differ from the last ones indexed (a `list_changed` upstream).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import anyio.to_thread
from mcp import types

from adapters import FunctionDeclaration
from gateway.tools import BaseTool, FunctionTool, ToolContext

__all__ = ["CALL_TOOL", "SEARCH_TOOL", "SearchTools"]

SEARCH_TOOL: Final = "search_tools"
CALL_TOOL: Final = "call_tool"
_MAX_LIMIT: Final = 50


class SearchTools:
    """The two tools over one toolset's current tools (`offer` them in place of the tools)."""

    def __init__(self) -> None:
        self._tools: dict[str, BaseTool] = {}
        self._indexed: tuple[int, ...] = ()
        self._index: Any = None
        self._offered = [FunctionTool(self._search_tools_function()), FunctionTool(self._call_tool_function())]

    def offer(self, tools: Sequence[BaseTool]) -> list[BaseTool]:
        """`search_tools` and `call_tool`, searching and calling `tools` from now on."""
        self._tools = {tool.name: tool for tool in tools}
        return list(self._offered)

    async def _search(self, query: str, limit: int) -> list[dict[str, Any]]:
        from gateway.search.tool_index import ToolIndex  # the `search` extra, imported when first searched

        declared = {name: tool.get_declaration() for name, tool in self._tools.items()}
        described = [_as_mcp_tool(name, declaration) for name, declaration in declared.items() if declaration]
        key = tuple(id(tool) for tool in self._tools.values())
        if self._index is None or key != self._indexed:
            # Built off the event loop: the first build also loads the encoder and encodes the catalog (seconds,
            # then read from the disk cache).
            self._index, self._indexed = await anyio.to_thread.run_sync(ToolIndex, described), key
        hits: list[dict[str, Any]] = []
        # Searched off the event loop too: the request is encoded (milliseconds of matrix work).
        found = await anyio.to_thread.run_sync(self._index.search, query, limit, self._tools.__contains__)
        for hit in found:
            hits.append({"name": hit.name, "description": hit.description or "", "inputSchema": hit.input_schema})
        return hits

    def _search_tools_function(self) -> Any:
        async def search_tools(query: str, limit: int = 5) -> dict[str, Any]:
            """Find the right tool for a task among this toolset's tools: describe the task in a few words.

            Answers the best matches, best first, each with its name, description and input schema; then use
            call_tool to call one.

            Args:
                query: what you want to do, in plain words.
                limit: how many tools to answer at most (1 to 50).
            """
            if not query.strip():
                return {"error": f"{SEARCH_TOOL} needs 'query': what you want to do, in plain words."}
            if not 1 <= limit <= _MAX_LIMIT:
                return {"error": f"{SEARCH_TOOL}'s 'limit' must be a whole number from 1 to {_MAX_LIMIT}."}
            return {"tools": await self._search(query, limit)}

        return search_tools

    def _call_tool_function(self) -> Any:
        async def call_tool(name: str, tool_context: ToolContext, arguments: dict[str, Any] | None = None) -> Any:
            """Call a tool that search_tools found, by its name, with arguments matching its input schema.

            Args:
                name: the tool's name, as search_tools gave it.
                arguments: the tool's arguments, as its input schema says.
            """
            tool = self._tools.get(name)
            if tool is None:
                return {"error": f"No tool named {name!r} here: use {SEARCH_TOOL} to find the tool's name first."}
            return await tool.run_async(args=dict(arguments or {}), tool_context=tool_context)

        return call_tool


def _as_mcp_tool(name: str, declaration: FunctionDeclaration) -> types.Tool:
    schema = declaration.parameters_json_schema or {"type": "object"}
    return types.Tool(name=name, description=declaration.description or None, input_schema=schema)
