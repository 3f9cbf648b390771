"""`BuiltTools`: each listed upstream tool turned into an `McpTool` once, not on every listing.

Building converts the tool's schemas (deep copies, the declaration), which at a thousand tools is the whole cost
of a listing. A cached listing hands out the same `types.Tool` objects, found by identity; a new session lists
equal copies, found by content. The built tools carry the toolset's confirmation policy, so changing the policy
rebuilds them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Protocol, TypeVar

from mcp import types

from gateway.client.mcp_tool import McpTool, ToolCaller
from gateway.tools.function_tool import ConfirmationPolicy

__all__ = ["BuiltTools"]

KEPT: Final = 8192
"""Built tools remembered per key kind (the oldest entries go first)."""
_K = TypeVar("_K")
_V = TypeVar("_V")


def _remember(cache: OrderedDict[_K, _V], key: _K, value: _V) -> None:
    cache[key] = value
    if len(cache) > KEPT:
        cache.popitem(last=False)


class ToolOwner(ToolCaller, Protocol):
    """The toolset the built tools call through, with its confirmation policy (an `McpToolset`)."""

    require_confirmation: ConfirmationPolicy
    confirm_tool: Callable[[types.Tool], bool] | None


class BuiltTools:
    """The `McpTool`s of one toolset, by listed object and by content."""

    def __init__(self, toolset: ToolOwner) -> None:
        self._toolset = toolset
        self._by_object: OrderedDict[int, tuple[types.Tool, McpTool]] = OrderedDict()
        self._by_content: OrderedDict[str, McpTool] = OrderedDict()
        self._policies: tuple[object, object] = (toolset.require_confirmation, toolset.confirm_tool)
        self.generation = 0
        """Counts the rebuilds (a changed confirmation policy): tools built before belong to an older one."""

    def current_generation(self) -> int:
        """`generation`, after dropping what was built under a confirmation policy the toolset no longer has."""
        toolset = self._toolset
        if toolset.require_confirmation is not self._policies[0] or toolset.confirm_tool is not self._policies[1]:
            self._by_object.clear()
            self._by_content.clear()
            self._policies = (toolset.require_confirmation, toolset.confirm_tool)
            self.generation += 1
        return self.generation

    def tool(self, mcp_tool: types.Tool) -> McpTool:
        """The `McpTool` for a listed tool."""
        toolset = self._toolset
        self.current_generation()
        by_object = self._by_object.get(id(mcp_tool))
        if by_object is not None and by_object[0] is mcp_tool:
            return by_object[1]
        content = mcp_tool.model_dump_json(by_alias=True)
        tool = self._by_content.get(content)
        if tool is None:
            policy: ConfirmationPolicy = toolset.require_confirmation
            if toolset.confirm_tool is not None and toolset.confirm_tool(mcp_tool):
                policy = True
            tool = McpTool(mcp_tool=mcp_tool, toolset=toolset, require_confirmation=policy)
            _remember(self._by_content, content, tool)
        # The entry holds the listed object, so its id cannot be reused by another object while it is cached.
        _remember(self._by_object, id(mcp_tool), (mcp_tool, tool))
        return tool
