"""The tools a server publishes, resolved per session (toolsets may depend on state or role)."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from mcp import types

from adapters import declaration_to_mcp_tool
from gateway.errors import NameConflictError
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext
from gateway.tools.function_tool import FunctionTool
from gateway.tools.tool_union import ToolUnion, as_tool

__all__ = ["CatalogEntry", "ToolCatalog"]

_RESOLUTIONS_KEPT = 16
"""Distinct resolved catalogs remembered (sessions whose toolsets give different tools get different ones)."""


@dataclass(frozen=True)
class CatalogEntry:
    """One published tool: the tool object and its MCP description."""

    tool: BaseTool
    mcp_tool: types.Tool
    source: str


def _to_mcp_tool(tool: BaseTool) -> types.Tool | None:
    declaration = tool.get_declaration()
    if declaration is None:
        return None
    confirms = isinstance(tool, FunctionTool) and tool.require_confirmation is not False
    return declaration_to_mcp_tool(
        declaration, long_running=tool.is_long_running, destructive=True if confirms else None
    )


class ToolCatalog:
    """Tools and toolsets in publishing order; names must be unique across all of them."""

    def __init__(self, items: Sequence[ToolUnion]) -> None:
        self._items: list[BaseTool | BaseToolset] = [as_tool(item) for item in items]
        # Per tool object: the name it was published under and its MCP description (converting schemas is the
        # costly part of a listing). Per resolution: the tool objects each source gave, and the entries made.
        self._published: weakref.WeakKeyDictionary[BaseTool, tuple[str, types.Tool | None]] = (
            weakref.WeakKeyDictionary()
        )
        self._resolved: OrderedDict[tuple[object, ...], tuple[list[list[BaseTool]], dict[str, CatalogEntry]]] = (
            OrderedDict()
        )

    @property
    def items(self) -> list[BaseTool | BaseToolset]:
        """The tools and toolsets as given."""
        return list(self._items)

    def _mcp_tool(self, tool: BaseTool) -> types.Tool | None:
        try:
            published = self._published.get(tool)
        except TypeError:  # a tool class that is not hashable: described anew on every listing
            return _to_mcp_tool(tool)
        if published is None or published[0] != tool.name:
            published = (tool.name, _to_mcp_tool(tool))
            self._published[tool] = published
        return published[1]

    async def resolve(self, readonly_context: ReadonlyContext) -> dict[str, CatalogEntry]:
        """The published tools by name for one session.

        Raises:
            NameConflictError: two sources publish the same name.
        """
        listed: list[list[BaseTool]] = [
            await item.get_tools_with_prefix(readonly_context) if isinstance(item, BaseToolset) else [item]
            for item in self._items
        ]
        # The same tool objects under the same names resolve to the same entries (sessions of one gateway
        # mostly see the same catalog); the key holds no objects, the cached lists keep their ids unique.
        key = tuple(id(tool) for tools in listed for tool in tools) + tuple(
            tool.name for tools in listed for tool in tools
        )
        cached = self._resolved.get(key)
        if cached is not None:
            self._resolved.move_to_end(key)
            return dict(cached[1])
        entries: dict[str, CatalogEntry] = {}
        for item, tools in zip(self._items, listed, strict=True):
            source = (
                getattr(item, "source_name", None) or f"toolset {type(item).__name__}"
                if isinstance(item, BaseToolset)
                else "local"
            )
            for tool in tools:
                mcp_tool = self._mcp_tool(tool)
                if mcp_tool is None:
                    continue
                if tool.name in entries:
                    raise NameConflictError(
                        f"Two tools are named {tool.name!r}: one from {entries[tool.name].source}, one from "
                        f"{source}. Rename one of them or give a toolset a tool_name_prefix."
                    )
                entries[tool.name] = CatalogEntry(tool, mcp_tool, source)
        self._resolved[key] = (listed, entries)
        if len(self._resolved) > _RESOLUTIONS_KEPT:
            self._resolved.popitem(last=False)
        return dict(entries)

    async def aclose(self) -> None:
        """Close every toolset."""
        for item in self._items:
            if isinstance(item, BaseToolset):
                await item.close()
