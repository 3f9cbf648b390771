"""`adk-mcp-gateway tools`: the merged catalog as a table, or as a `tools/list` result."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from adapters import declaration_to_mcp_tool
from gateway.tools import BaseTool, ReadonlyContext
from gateway.tools.tool_union import ToolUnion

__all__ = ["catalog", "print_tools"]


async def catalog(items: list[ToolUnion]) -> list[tuple[BaseTool, str]]:
    """Every tool the sources publish, with its source's name."""
    from gateway.server import ToolServer
    from gateway.state import InMemoryStateStore

    async with ToolServer(items, state_store=InMemoryStateStore()) as server:
        entries = await server.catalog.resolve(ReadonlyContext())
        return [(entry.tool, entry.source) for entry in entries.values()]


def print_tools(tools: Sequence[tuple[BaseTool, str]], as_json: bool) -> None:
    """Print a table (name, arguments with `?` for optional ones, source, first line of the description)."""
    described = [
        (declaration_to_mcp_tool(declaration, long_running=tool.is_long_running), source)
        for tool, source in tools
        if (declaration := tool.get_declaration()) is not None
    ]
    if as_json:
        listing = {"tools": [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t, _ in described]}
        print(json.dumps(listing, indent=2, ensure_ascii=False))
        return
    rows = [("NAME", "ARGUMENTS", "SOURCE", "DESCRIPTION")]
    for tool, source in described:
        properties: dict[str, Any] = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        arguments = ", ".join(f"{name}{'' if name in required else '?'}" for name in properties)
        summary = (tool.description or "").strip().splitlines()[0] if (tool.description or "").strip() else ""
        rows.append((tool.name, arguments, source, summary))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for name, arguments, source, summary in rows:
        print(f"{name:<{widths[0]}}  {arguments:<{widths[1]}}  {source:<{widths[2]}}  {summary}".rstrip())
