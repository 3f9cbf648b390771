"""`BaseToolset`: a source of tools, with ADK's filter and name prefix."""

from __future__ import annotations

import contextlib
import copy
import weakref
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

import anyio

from gateway.tools.base_tool import BaseTool
from gateway.tools.context import ReadonlyContext

__all__ = ["BaseToolset", "ToolPredicate"]


@runtime_checkable
class ToolPredicate(Protocol):
    """Decides whether a tool is offered in a context (ADK's `ToolPredicate`)."""

    def __call__(self, tool: BaseTool, readonly_context: ReadonlyContext | None = None) -> bool: ...


class BaseToolset(ABC):
    """A group of tools that may change with the context, closed when no longer needed.

    Args:
        tool_filter: the tool names to offer, or a predicate; matched against names before any prefix.
        tool_name_prefix: when set, `get_tools_with_prefix` renames each tool to `{prefix}_{name}`.
    """

    def __init__(
        self, *, tool_filter: ToolPredicate | list[str] | None = None, tool_name_prefix: str | None = None
    ) -> None:
        self.tool_filter = tool_filter
        self.tool_name_prefix = tool_name_prefix

    @abstractmethod
    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The tools this toolset offers in `readonly_context`, already filtered."""

    async def get_tools_with_prefix(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """`get_tools`, with each tool renamed `{prefix}_{name}` when a prefix is set.

        The tools are shallow copies, so calls still reach the original under its own name.
        """
        return self._with_prefix(await self.get_tools(readonly_context))

    async def get_tool_with_prefix(self, name: str, readonly_context: ReadonlyContext | None = None) -> BaseTool | None:
        """The tool published as `name` (prefix included) in `readonly_context`, or None.

        A server resolves the tool of a call this way. The default looks through `get_tools_with_prefix`; a toolset
        may look further here than a listing would wait (the call is its own), or look up one tool faster.
        """
        found = await self.get_tools_with_prefix(readonly_context)
        return next((tool for tool in found if tool.name == name), None)

    def listing_token(self, readonly_context: ReadonlyContext | None = None) -> tuple[object, ...] | None:
        """What `get_tools_with_prefix` would answer now depends on, told without awaiting anything; None: unknown.

        While two tokens of one toolset hold the same objects (compared by identity), its listing is the same tools
        under the same names, so a server may reuse what it built from that listing instead of listing again. The
        default knows nothing. A toolset answering here must answer None whenever it cannot vouch for that (a
        subclass that overrides `get_tools` overrides this too, or the token would not cover what it adds).
        """
        del readonly_context
        return None

    def _with_prefix(self, tools: list[BaseTool]) -> list[BaseTool]:
        """`tools` renamed `{prefix}_{name}` when a prefix is set (the same copies for the same tools)."""
        if not self.tool_name_prefix:
            return tools
        # The same tools as last time (a cached listing): the same renamed copies, without looking each one up.
        last: tuple[str, list[BaseTool], list[str], list[BaseTool]] | None = getattr(self, "_last_renamed", None)
        if (
            last is not None
            and last[0] == self.tool_name_prefix
            and len(last[1]) == len(tools)
            and all(a is b and a.name == n for a, b, n in zip(last[1], tools, last[2], strict=True))
        ):
            return list(last[3])
        # A toolset that hands out the same tool objects again gets the same renamed copies again.
        # (Looked up lazily: a subclass may not call `BaseToolset.__init__`.)
        clones: weakref.WeakKeyDictionary[BaseTool, BaseTool] | None = getattr(self, "_renamed_tools", None)
        if clones is None:
            clones = self._renamed_tools = weakref.WeakKeyDictionary[BaseTool, BaseTool]()
        renamed: list[BaseTool] = []
        for tool in tools:
            name = f"{self.tool_name_prefix}_{tool.name}"
            try:
                clone = clones.get(tool)
            except TypeError:  # a tool class that is not hashable: copied on every listing
                clone = None
            if clone is None or clone.name != name:
                clone = copy.copy(tool)
                clone.name = name  # refuses a reserved name
                with contextlib.suppress(TypeError):
                    clones[tool] = clone
            renamed.append(clone)
        self._last_renamed = (self.tool_name_prefix, list(tools), [tool.name for tool in tools], renamed)
        return list(renamed)

    def _is_tool_selected(self, tool: BaseTool, readonly_context: ReadonlyContext | None) -> bool:
        if self.tool_filter is None:
            return True
        if isinstance(self.tool_filter, list):
            return tool.name in self.tool_filter
        return bool(self.tool_filter(tool, readonly_context))

    async def release(self, readonly_context: ReadonlyContext | None = None) -> None:  # noqa: B027 - optional hook
        """Let go of what the toolset holds for one session (called when that session ends); default: nothing."""

    async def close(self) -> None:  # noqa: B027 - optional hook, most toolsets hold nothing
        """Release what the toolset holds (connections, processes)."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # Shielded: a cancelled task leaving the `async with` must still release connections and processes.
        with anyio.CancelScope(shield=True):
            await self.close()
