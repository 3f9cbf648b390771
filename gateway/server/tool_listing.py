"""`ToolListing`: the `tools/list` pages a session sees, and `tools/list_changed` when a call changed them.

Pages are kept in their wire form. A page is shaped for the wire once (the SDK validates and dumps a listing
result, which at a thousand tools costs more than everything else a listing does), then answered from
`ToolListing.cached_pages` for as long as the catalog hands out the same `CatalogView` to the caller: the
same tool objects under the same names. So whatever changes what a context sees — an upstream's `list_changed`
(new tool objects), a reload (a new catalog), a pin approval or drift, a local toolset listing other tools, a
context-dependent filter — is a different view with pages of its own; nothing needs to be told to drop a page.
A view is a context's own (a toolset that lists per user gives each user a view), and the policy guard filters
each request's page after the cache, so no caller is shown another's tools. A 2026-07-28 page carries the cache hint
of its sources (`hint`, `gateway.server.caching`), stamped on each answer: what is left of an upstream's TTL
shrinks while a page is kept.
"""

from __future__ import annotations

import contextvars
import json
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar

from mcp import MCPError, types
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.errors import NameConflictError
from gateway.server.caching import LOCAL_HINT, HintedSource, merged_hint, stamped
from gateway.server.catalog import CatalogEntry, CatalogView, ToolCatalog
from gateway.server.pagination import page_of
from gateway.server.session_records import SessionRecords
from gateway.tools import BaseTool, ReadonlyContext

if TYPE_CHECKING:
    from gateway.server.extension import PlainRequest

__all__ = ["ListingContext", "ToolListing"]

_Item = TypeVar("_Item")
_VIEWS_KEPT: Final = 16
"""Views whose pages are kept (sessions whose toolsets give different tools get different views)."""

ListingContext = Callable[[ServerRequestContext[Any, Any]], Awaitable[tuple[ReadonlyContext, str]]]
"""A request's read-only context and session owner (what the `tools/list` handler resolves for it)."""

_view_of_request: contextvars.ContextVar[CatalogView | None] = contextvars.ContextVar("_view_of_request", default=None)
"""The view the page cache resolved for the request being handled (so the handler pages that very view)."""


class ToolListing:
    """Pages of the catalog's tools, and what each session last listed (to announce changes to it).

    Args:
        catalog: the tools a context sees.
        page_size: items per page of a listing.
        changes_after_calls: whether a call can change which tools a session sees (a toolset that is not an
            extension's: an extension's toolsets announce their own list changes).
    """

    def __init__(self, catalog: ToolCatalog, page_size: int, *, changes_after_calls: bool) -> None:
        self._catalog = catalog
        self.page_size = page_size
        self.changes_after_calls = changes_after_calls
        # What each session last listed; sessions end unannounced, so the oldest go first.
        self._listed: SessionRecords[frozenset[str]] = SessionRecords()
        self._pages: OrderedDict[CatalogView, dict[tuple[str | None, str | None], dict[str, Any]]] = OrderedDict()
        self._encoded: dict[tuple[CatalogView, str | None, str | None], bytes] = {}
        """Pages encoded as JSON for the fast lane (`cached_page`), for the views in `_pages` only."""

    @property
    def catalog(self) -> ToolCatalog:
        """The tools a context sees."""
        return self._catalog

    @catalog.setter
    def catalog(self, catalog: ToolCatalog) -> None:
        self._catalog = catalog
        self._pages.clear()
        self._encoded.clear()

    async def view(self, readonly: ReadonlyContext) -> CatalogView:
        """The tools this context sees."""
        try:
            return await self.catalog.view(readonly)
        except NameConflictError as exc:
            # A configuration problem of this server, not of the request: say so with a proper error code.
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from exc

    async def resolve(self, readonly: ReadonlyContext) -> dict[str, CatalogEntry]:
        """The tools this context sees, by name."""
        return dict((await self.view(readonly)).entries)

    def page(
        self, items: list[_Item], params: types.PaginatedRequestParams | None, method: str
    ) -> tuple[list[_Item], str | None]:
        """One page of a merged listing (`pagination.page_of` with this server's page size)."""
        return page_of(items, params, self.page_size, method)

    async def list_tools(
        self, readonly: ReadonlyContext, session_owner: str, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """A `tools/list` page for a session, remembering what it listed."""
        view = _view_of_request.get() or await self.view(readonly)
        self._listed.put(session_owner, frozenset(view.entries))
        page, next_cursor = self.page([entry.mcp_tool for entry in view.entries.values()], params, "tools/list")
        return types.ListToolsResult(tools=page, next_cursor=next_cursor)

    def cached_pages(self, context: ListingContext) -> ServerMiddleware[Any]:
        """SDK server middleware answering `tools/list` with the page's wire form when this view had it before.

        Add it innermost (after the policy guard, which then filters each request's page for its caller).
        """

        async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
            if ctx.method != "tools/list":
                return await call_next(ctx)
            readonly, session_owner = await context(ctx)
            view = await self.view(readonly)
            cursor = (ctx.params or {}).get("cursor")
            key = (ctx.protocol_version, cursor if isinstance(cursor, str) else None)
            pages = self._pages.get(view)
            if pages is not None and key in pages and (cursor is None or isinstance(cursor, str)):
                self._pages.move_to_end(view)
                self._listed.put(session_owner, frozenset(view.entries))
                return self._hinted(pages[key], readonly, ctx.protocol_version)
            token = _view_of_request.set(view)
            try:
                result = await call_next(ctx)
            finally:
                _view_of_request.reset(token)
            if view.stable and isinstance(result, dict) and (cursor is None or isinstance(cursor, str)):
                self._remember(view, key, result)
            return self._hinted(result, readonly, ctx.protocol_version) if isinstance(result, dict) else result

        return middleware

    def _hinted(self, page: dict[str, Any], readonly: ReadonlyContext, version: str | None) -> dict[str, Any]:
        """A page with this context's cache hint stamped on it (asked of the sources only where the wire has room)."""
        if version not in MODERN_PROTOCOL_VERSIONS:
            return dict(page)
        return stamped(page, self.hint(readonly), version)

    def hint(self, readonly: ReadonlyContext) -> types.CacheableResult:
        """The cache hint of the catalog's listing for this context (`gateway.server.caching`): the server's own
        tools' (`LOCAL_HINT`), merged with what each toolset says of its listing (a toolset that cannot tell: 0)."""
        hints: list[types.CacheableResult | None] = []
        for item in self.catalog.items:
            if isinstance(item, HintedSource):
                hints.append(item.listing_hint(readonly))
            else:
                hints.append(LOCAL_HINT if isinstance(item, BaseTool) else None)
        return merged_hint(hints)

    def cached_page(self, view: CatalogView, session_owner: str, version: str, cursor: str | None) -> bytes | None:
        """The JSON of a page `cached_pages` answered for this view before (None: it has not; ask the SDK).

        For the fast lane (`gateway.hub.forwarding.fast_lane`): no policy guard filters pages on this server.
        """
        pages = self._pages.get(view)
        page = pages.get((version, cursor)) if pages is not None else None
        if page is None:
            return None
        self._pages.move_to_end(view)
        self._listed.put(session_owner, frozenset(view.entries))
        key = (view, version, cursor)
        encoded = self._encoded.get(key)
        if encoded is None:
            encoded = self._encoded[key] = json.dumps(page, separators=(",", ":"), ensure_ascii=False).encode()
        return encoded

    def _remember(self, view: CatalogView, key: tuple[str | None, str | None], result: dict[str, Any]) -> None:
        pages = self._pages.get(view)
        if pages is None:
            pages = self._pages[view] = {}
            if len(self._pages) > _VIEWS_KEPT:
                dropped, _ = self._pages.popitem(last=False)
                self._encoded = {k: v for k, v in self._encoded.items() if k[0] is not dropped}
        pages[key] = dict(result)

    def applies_to(self, request: PlainRequest) -> bool:
        """Whether a call must be followed by comparing the session's tools (`CallPipeline`): while
        local toolsets, whose lists a call may change, are served."""
        return self.changes_after_calls and request.method == "tools/call"

    def watches(self, session_owner: str) -> bool:
        """Whether a call of this session may change a listing it has seen."""
        return self.changes_after_calls and self._listed.get(session_owner) is not None

    async def announce_changes(
        self, ctx: ServerRequestContext[Any, Any], session_owner: str, readonly: ReadonlyContext
    ) -> None:
        """Send `tools/list_changed` when the session now sees other tools than it last listed."""
        now = frozenset(await self.resolve(readonly))
        if now != self._listed.get(session_owner):
            self._listed.put(session_owner, now)
            await ctx.session.send_tool_list_changed()
