"""`ToolListing`: the `tools/list` pages a session sees, and `tools/list_changed` when a call changed them."""

from __future__ import annotations

from typing import Any, TypeVar

from mcp import MCPError, types
from mcp.server.context import ServerRequestContext

from gateway.errors import NameConflictError
from gateway.server.catalog import CatalogEntry, ToolCatalog
from gateway.server.pagination import page_of
from gateway.server.session_records import SessionRecords
from gateway.tools import ReadonlyContext

__all__ = ["ToolListing"]

_Item = TypeVar("_Item")


class ToolListing:
    """Pages of the catalog's tools, and what each session last listed (to announce changes to it).

    Args:
        catalog: the tools a context sees.
        page_size: items per page of a listing.
        changes_after_calls: whether a call can change which tools a session sees (a toolset that is not an
            extension's: an extension's toolsets announce their own list changes).
    """

    def __init__(self, catalog: ToolCatalog, page_size: int, *, changes_after_calls: bool) -> None:
        self.catalog = catalog
        self.page_size = page_size
        self.changes_after_calls = changes_after_calls
        # What each session last listed; sessions end unannounced, so the oldest go first.
        self._listed: SessionRecords[frozenset[str]] = SessionRecords()

    async def resolve(self, readonly: ReadonlyContext) -> dict[str, CatalogEntry]:
        """The tools this context sees, by name."""
        try:
            return await self.catalog.resolve(readonly)
        except NameConflictError as exc:
            # A configuration problem of this server, not of the request: say so with a proper error code.
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from exc

    def page(
        self, items: list[_Item], params: types.PaginatedRequestParams | None, method: str
    ) -> tuple[list[_Item], str | None]:
        """One page of a merged listing (`pagination.page_of` with this server's page size)."""
        return page_of(items, params, self.page_size, method)

    async def list_tools(
        self, readonly: ReadonlyContext, session_owner: str, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """A `tools/list` page for a session, remembering what it listed."""
        entries = list((await self.resolve(readonly)).values())
        self._listed.put(session_owner, frozenset(e.tool.name for e in entries))
        page, next_cursor = self.page([entry.mcp_tool for entry in entries], params, "tools/list")
        return types.ListToolsResult(tools=page, next_cursor=next_cursor)

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
