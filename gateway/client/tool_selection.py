"""`ToolSelection`: the tools a toolset offers from one upstream listing — built, filtered and sorted once.

A gateway resolves its catalog on every `tools/list` and asks each upstream toolset for its tools; the upstream's
listing is cached (the same list object until the upstream announces a change), so the selection made from it is
too, as long as the toolset's filter does not look at the context (a predicate may, so it is asked every time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import cast

from mcp import types

from gateway.client.built_tools import BuiltTools
from gateway.tools import BaseTool, ReadonlyContext
from gateway.tools.base_tool import RESERVED_TOOL_NAMES

__all__ = ["ToolSelection", "context_free"]

logger = logging.getLogger(__name__)

Selected = Callable[[BaseTool, ReadonlyContext | None], bool]
"""Whether the toolset offers a tool in a context (its `tool_filter`)."""


def context_free(tool_filter: object) -> bool:
    """Whether a filter predicate says it decides by the tool alone (a `context_free` attribute that is True): then
    what it selects from one listing is the same in every context."""
    return getattr(tool_filter, "context_free", False) is True


class ToolSelection:
    """The selected tools of the last listing, kept while the listing, the filter and the built tools are the same."""

    def __init__(self, built: BuiltTools) -> None:
        self._built = built
        self._last: tuple[list[types.Tool], object, object, list[BaseTool]] | None = None

    def select(
        self,
        mcp_tools: list[types.Tool],
        tool_filter: object,
        is_selected: Selected,
        readonly_context: ReadonlyContext | None,
    ) -> list[BaseTool]:
        """The listed tools as built tools, ADK-reserved names skipped, filtered, sorted by name (a new list)."""
        contextless = tool_filter is None or isinstance(tool_filter, list) or context_free(tool_filter)
        filter_key: object = tuple(cast("list[object]", tool_filter)) if isinstance(tool_filter, list) else tool_filter
        last = self._last
        built_key = self._built.current_generation()
        if contextless and last is not None and last[0] is mcp_tools and last[1] == filter_key and last[2] == built_key:
            return list(last[3])
        selected: list[BaseTool] = []
        for mcp_tool in mcp_tools:
            if mcp_tool.name in RESERVED_TOOL_NAMES:
                logger.warning("Skipping upstream tool %r: the name is reserved by ADK.", mcp_tool.name)
                continue
            tool = self._built.tool(mcp_tool)
            if is_selected(tool, readonly_context):
                selected.append(tool)
        selected.sort(key=lambda t: t.name)
        self._last = (mcp_tools, filter_key, built_key, selected) if contextless else None
        return list(selected)
