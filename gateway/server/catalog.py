"""The tools a server publishes, resolved per session (toolsets may depend on state or role).

Failure stays with its source. A listing asks every toolset at once; one whose listing raises
`UpstreamUnavailableError` (an upstream that cannot be reached, or does not answer within its list timeout)
contributes nothing to that listing. A call resolves only the source that can publish the named tool — the one that
published it before, else those whose prefix fits the name — so a hung upstream never delays another source's
tools, and a call of a down upstream's tool fails with that upstream's reason.

Names: the source that published a name first keeps it. A source that starts publishing the same name later (an
upstream that restarted with a new tool) has that tool withheld, with a warning naming both sources; `withheld`
reports it for `/healthz`.
"""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import anyio
from mcp import types

from adapters import declaration_to_mcp_tool
from gateway.adk.acceptance import as_tool
from gateway.errors import ToolNotFoundError, UpstreamUnavailableError
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext
from gateway.tools.function_tool import FunctionTool
from gateway.tools.tool_union import ToolUnion

__all__ = ["CatalogEntry", "CatalogView", "ToolCatalog"]

logger = logging.getLogger(__name__)

_RESOLUTIONS_KEPT = 16
"""Distinct resolved catalogs remembered (sessions whose toolsets give different tools get different ones)."""


@dataclass(frozen=True)
class CatalogEntry:
    """One published tool: the tool object and its MCP description."""

    tool: BaseTool
    mcp_tool: types.Tool
    source: str
    upstream: str | None = None
    """The config key of the gateway upstream that publishes the tool (None for local tools)."""


@dataclass(frozen=True, eq=False)
class CatalogView:
    """The published tools one context sees, in publishing order.

    Compared by identity: the catalog hands out the same view again while the same tool objects are published under
    the same names (no source changed what it lists), so a view can key what is derived from it (a listing's pages).
    """

    entries: dict[str, CatalogEntry]
    """By published name, in publishing order. Read-only: the catalog shares it."""
    stable: bool
    """Whether the catalog will hand out this view again for the same tools (False while two sources collide)."""


_Listing = list[BaseTool] | UpstreamUnavailableError
"""What one source gave for a listing: its tools, or why it could not."""


_Tokens = tuple[tuple[object, ...], ...]
"""Each source's `listing_token`, in publishing order."""


def _token_key(tokens: _Tokens) -> tuple[object, ...]:
    """Tokens as a key: their parts by identity, except strings, numbers, None and tuples, by value."""
    return tuple(_by_value_or_identity(part) for token in tokens for part in token)


def _by_value_or_identity(part: object) -> object:
    if part is None or isinstance(part, str | int | tuple):
        return cast("object", part)
    return id(part)


def _source_name(item: BaseTool | BaseToolset) -> str:
    if isinstance(item, BaseToolset):
        return getattr(item, "source_name", None) or f"toolset {type(item).__name__}"
    return "local"


Describe = Callable[[BaseTool], types.Tool | None]
"""A tool's MCP description given by someone else than its declaration (None: from its declaration)."""


def _to_mcp_tool(tool: BaseTool) -> types.Tool | None:
    declaration = tool.get_declaration()
    if declaration is None:
        return None
    confirms = isinstance(tool, FunctionTool) and tool.require_confirmation is not False
    described = declaration_to_mcp_tool(
        declaration, long_running=tool.is_long_running, destructive=True if confirms else None
    )
    support = tool.task_support
    if support == "forbidden":
        return described
    return described.model_copy(update={"execution": types.ToolExecution(task_support=support)})


class ToolCatalog:
    """Tools and toolsets in publishing order; a name belongs to the first source that published it."""

    def __init__(self, items: Sequence[ToolUnion], *, describe: Describe | None = None) -> None:
        self._items: list[BaseTool | BaseToolset] = [as_tool(item) for item in items]
        self._describe = describe
        self._sources = [_source_name(item) for item in self._items]
        self._upstreams: list[str | None] = [getattr(item, "key", None) for item in self._items]
        # Per tool object: the name it was published under and its MCP description (converting schemas is the
        # costly part of a listing). Per resolution without a name collision: the tool objects each source gave,
        # and the entries made.
        self._published: weakref.WeakKeyDictionary[BaseTool, tuple[str, types.Tool | None]] = (
            weakref.WeakKeyDictionary()
        )
        self._resolved: OrderedDict[tuple[object, ...], tuple[list[list[BaseTool]], CatalogView]] = OrderedDict()
        self._by_tokens: OrderedDict[tuple[object, ...], tuple[_Tokens, CatalogView]] = OrderedDict()
        """Stable views by their sources' listing tokens (the tokens kept, so the ids in the key stay theirs)."""
        self._owners: dict[str, int] = {}
        """Tool name -> index of the source that published it first."""
        self._withheld: dict[int, dict[str, str]] = {}
        """Source index -> {withheld tool name: the source that keeps the name}, as of its last listing."""

    @property
    def items(self) -> list[BaseTool | BaseToolset]:
        """The tools and toolsets as given."""
        return list(self._items)

    def withheld(self, item: BaseTool | BaseToolset) -> list[dict[str, str]]:
        """The tools of a source withheld because another source had their names first (as last listed)."""
        found = [index for index, candidate in enumerate(self._items) if candidate is item]
        withheld = self._withheld.get(found[0], {}) if found else {}
        return [{"tool": name, "kept": kept} for name, kept in sorted(withheld.items())]

    def _mcp_tool(self, tool: BaseTool) -> types.Tool | None:
        try:
            published = self._published.get(tool)
        except TypeError:  # a tool class that is not hashable: described anew on every listing
            return self._described(tool)
        if published is None or published[0] != tool.name:
            published = (tool.name, self._described(tool))
            self._published[tool] = published
        return published[1]

    def _described(self, tool: BaseTool) -> types.Tool | None:
        described = self._describe(tool) if self._describe is not None else None
        return described if described is not None else _to_mcp_tool(tool)

    async def _list(
        self, indexes: Sequence[int], readonly_context: ReadonlyContext, name: str | None = None
    ) -> list[_Listing]:
        """What each of these sources publishes (only the tool `name`, if given), the toolsets asked at once."""
        listings: list[_Listing] = [[] for _ in indexes]

        async def list_one(position: int, toolset: BaseToolset) -> None:
            try:
                if name is None:
                    listings[position] = await toolset.get_tools_with_prefix(readonly_context)
                else:
                    tool = await toolset.get_tool_with_prefix(name, readonly_context)
                    listings[position] = [] if tool is None else [tool]
            except UpstreamUnavailableError as exc:
                if name is None:
                    logger.warning("Leaving out the tools of %s for now: %s", _source_name(toolset), exc)
                listings[position] = exc

        toolsets: list[tuple[int, BaseToolset]] = []
        for position, index in enumerate(indexes):
            item = self._items[index]
            if isinstance(item, BaseToolset):
                toolsets.append((position, item))
            else:
                listings[position] = [item]
        if len(toolsets) == 1:
            await list_one(*toolsets[0])
        elif toolsets:
            async with anyio.create_task_group() as tg:
                for position, toolset in toolsets:
                    tg.start_soon(list_one, position, toolset)
        return listings

    async def resolve(self, readonly_context: ReadonlyContext) -> dict[str, CatalogEntry]:
        """The published tools by name for one session (a name two sources publish goes to the first owner)."""
        return dict((await self.view(readonly_context)).entries)

    def _listing_tokens(self, readonly_context: ReadonlyContext) -> _Tokens | None:
        """Every source's `listing_token` (a plain tool's: itself and its name); None if one cannot tell."""
        tokens: list[tuple[object, ...]] = []
        for item in self._items:
            token = item.listing_token(readonly_context) if isinstance(item, BaseToolset) else (item, item.name)
            if token is None:
                return None
            tokens.append(token)
        return tuple(tokens)

    async def view(self, readonly_context: ReadonlyContext) -> CatalogView:
        """`resolve` as a shared view: the same object while the context's sources publish the same tools.

        While every source's listing token holds what it held when a view was made, that view is answered without
        listing (a warm thousand-tool listing spent half its time asking twenty toolsets for their cached tools).
        """
        tokens = self._listing_tokens(readonly_context)
        token_key = None if tokens is None else _token_key(tokens)
        if token_key is not None:
            known = self._by_tokens.get(token_key)
            if known is not None:
                self._by_tokens.move_to_end(token_key)
                return known[1]
        view = await self._resolve_view(readonly_context)
        # Kept only if nothing changed while the sources listed (an upstream's list change, a session's end).
        after = self._listing_tokens(readonly_context) if token_key is not None and view.stable else None
        if token_key is not None and after is not None and _token_key(after) == token_key:
            self._by_tokens[token_key] = (after, view)
            if len(self._by_tokens) > _RESOLUTIONS_KEPT:
                self._by_tokens.popitem(last=False)
        return view

    async def _resolve_view(self, readonly_context: ReadonlyContext) -> CatalogView:
        listings = await self._list(range(len(self._items)), readonly_context)
        listed = [listing if isinstance(listing, list) else [] for listing in listings]
        # The same tool objects under the same names resolve to the same entries (sessions of one gateway
        # mostly see the same catalog); the key holds no objects, the cached lists keep their ids unique.
        key = tuple(id(tool) for tools in listed for tool in tools) + tuple(
            tool.name for tools in listed for tool in tools
        )
        cached = self._resolved.get(key)
        if cached is not None:
            self._resolved.move_to_end(key)
            return cached[1]
        publishers: dict[str, list[tuple[int, BaseTool, types.Tool]]] = {}
        for index, tools in enumerate(listed):
            for tool in tools:
                mcp_tool = self._mcp_tool(tool)
                if mcp_tool is not None:
                    publishers.setdefault(tool.name, []).append((index, tool, mcp_tool))
        entries: dict[str, CatalogEntry] = {}
        withheld: dict[int, dict[str, str]] = {
            index: {} for index, listing in enumerate(listings) if isinstance(listing, list)
        }
        for name, candidates in publishers.items():
            owner = self._owners.get(name)
            # Without an owner yet: a plain local tool (published from the start), else the first source.
            first = next((c for c in candidates if not isinstance(self._items[c[0]], BaseToolset)), candidates[0])
            index, tool, mcp_tool = next((c for c in candidates if c[0] == owner), first)
            # Ownership moves only when the owner listed without the name (not while it is unavailable).
            if owner is None or (all(c[0] != owner for c in candidates) and isinstance(listings[owner], list)):
                self._owners[name] = index
            entries[name] = CatalogEntry(tool, mcp_tool, self._sources[index], self._upstreams[index])
            for other, _, _ in candidates:
                if other != index:
                    withheld.setdefault(other, {})[name] = self._sources[index]
        for index, names in withheld.items():
            self._note_withheld(index, names)
        stable = all(len(candidates) == 1 for candidates in publishers.values())
        view = CatalogView(entries, stable)
        if stable:
            self._resolved[key] = (listed, view)
            if len(self._resolved) > _RESOLUTIONS_KEPT:
                self._resolved.popitem(last=False)
        return view

    def _note_withheld(self, index: int, names: dict[str, str]) -> None:
        known = self._withheld.get(index, {})
        for name, kept in names.items():
            if known.get(name) != kept:
                logger.warning(
                    "Withholding the tool %r of %s: %s published that name first. Give one of them a different "
                    '"prefix", or leave the tool out with "denyTools".',
                    name,
                    self._sources[index],
                    kept,
                )
        self._withheld[index] = names

    def _could_publish(self, index: int, name: str) -> bool:
        item = self._items[index]
        if isinstance(item, BaseToolset):
            prefix = item.tool_name_prefix
            return not prefix or name.startswith(f"{prefix}_")
        return item.name == name

    def has_published(self, name: str) -> bool:
        """Whether a source has published `name` (to some caller, at some time): a call of it most likely names a
        published tool. Asks no source."""
        return name in self._owners

    async def find(self, name: str, readonly_context: ReadonlyContext) -> CatalogEntry:
        """The tool a call names, resolving only the sources that can publish it (its owner first).

        Raises:
            UpstreamUnavailableError: the tool's source (or, for a name never seen, a source that might publish
                it) cannot be reached now; the message names it and says why.
            ToolNotFoundError: no source publishes the name.
        """
        candidates = [index for index in range(len(self._items)) if self._could_publish(index, name)]
        owner = self._owners.get(name)
        if owner is None:
            # A plain local tool of that name was published from the start, so it owns the name.
            owner = next((i for i in candidates if not isinstance(self._items[i], BaseToolset)), None)
        if owner is not None and owner in candidates:
            # The usual case: a client calls what it listed. Only the owner is asked.
            candidates.remove(owner)
            [listing] = await self._list([owner], readonly_context, name)
            entry = self._entry(owner, listing, name)
            if entry is not None:
                self._owners[name] = owner
                return entry
            if isinstance(listing, UpstreamUnavailableError):
                raise listing
        listings = await self._list(candidates, readonly_context, name)
        for index, listing in zip(candidates, listings, strict=True):
            entry = self._entry(index, listing, name)
            if entry is not None:
                # Here the owner (if any) listed without the name: the name moves to the source that has it.
                self._owners[name] = index
                return entry
        failures = [listing for listing in listings if isinstance(listing, UpstreamUnavailableError)]
        if failures:
            raise failures[0]
        raise ToolNotFoundError(f"Unknown tool {name!r}.")

    def _entry(self, index: int, listing: _Listing, name: str) -> CatalogEntry | None:
        if not isinstance(listing, list):
            return None
        for tool in listing:
            if tool.name == name:
                mcp_tool = self._mcp_tool(tool)
                if mcp_tool is None:
                    return None
                return CatalogEntry(tool, mcp_tool, self._sources[index], self._upstreams[index])
        return None

    async def aclose(self) -> None:
        """Close every toolset."""
        for item in self._items:
            if isinstance(item, BaseToolset):
                await item.close()
