"""The tools a server publishes, resolved per session (toolsets may depend on state or role)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp import types

from adapters import declaration_to_mcp_tool
from gateway.errors import NameConflictError
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext
from gateway.tools.function_tool import FunctionTool
from gateway.tools.tool_union import ToolUnion, as_tool

__all__ = ["CatalogEntry", "ToolCatalog"]


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
        self._cache: dict[int, tuple[BaseTool, types.Tool | None]] = {}

    @property
    def items(self) -> list[BaseTool | BaseToolset]:
        """The tools and toolsets as given."""
        return list(self._items)

    def _entry(self, tool: BaseTool, source: str) -> CatalogEntry | None:
        cached = self._cache.get(id(tool))
        if cached is None or cached[0] is not tool or cached[0].name != tool.name:
            cached = (tool, _to_mcp_tool(tool))
            self._cache[id(tool)] = cached
        mcp_tool = cached[1]
        return None if mcp_tool is None else CatalogEntry(tool, mcp_tool, source)

    async def resolve(self, readonly_context: ReadonlyContext) -> dict[str, CatalogEntry]:
        """The published tools by name for one session.

        Raises:
            NameConflictError: two sources publish the same name.
        """
        entries: dict[str, CatalogEntry] = {}
        for item in self._items:
            if isinstance(item, BaseToolset):
                source = getattr(item, "source_name", None) or f"toolset {type(item).__name__}"
                tools = await item.get_tools_with_prefix(readonly_context)
            else:
                source = "local"
                tools = [item]
            for tool in tools:
                entry = self._entry(tool, source)
                if entry is None:
                    continue
                if tool.name in entries:
                    raise NameConflictError(
                        f"Two tools are named {tool.name!r}: one from {entries[tool.name].source}, one from "
                        f"{source}. Rename one of them or give a toolset a tool_name_prefix."
                    )
                entries[tool.name] = entry
        return entries

    async def aclose(self) -> None:
        """Close every toolset."""
        for item in self._items:
            if isinstance(item, BaseToolset):
                await item.close()
