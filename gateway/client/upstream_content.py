"""`UpstreamContent`: an upstream's resources, resource templates and prompts, listed (all pages) and read
through its session pool.

A part of `McpToolset` (the gateway forwards these; `load_mcp_resource` reads resources for an agent).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar, cast

import anyio
from mcp import types

from gateway.client.sessions.pagination import every_page
from gateway.client.sessions.pool import SessionPool
from gateway.client.sessions.slot import KeptListing, SessionSlot
from gateway.client.sessions.upstream_session import UpstreamSession
from gateway.tools import ReadonlyContext

__all__ = ["Listing", "UpstreamContent"]

_Page = TypeVar("_Page", types.ListResourcesResult, types.ListResourceTemplatesResult, types.ListPromptsResult)
_Entry = TypeVar("_Entry")


class Listing(list[_Entry]):
    """A listing's entries (all pages), with the cache hint the upstream gave it (`ttlMs`: the smallest of its
    pages'; `cacheScope`: private if one page said so)."""

    def __init__(self, entries: list[_Entry], hint: types.CacheableResult) -> None:
        super().__init__(entries)
        self.hint = hint


class UpstreamContent:
    """Resources and prompts of the upstream that `_pool` reaches."""

    _pool: SessionPool
    listing_token: Callable[[ReadonlyContext | None], tuple[object, ...] | None]

    def listing_hint(self, readonly_context: ReadonlyContext | None = None) -> types.CacheableResult | None:
        """How fresh the tool listing kept for this context is (what is left of the upstream's `ttlMs`) and its
        `cacheScope`: private whatever the upstream said when the listing depends on more than the upstream's answer
        (a filter predicate, a credential, tool search: `listing_token` cannot tell); None when none is kept."""
        hint = self._pool.cached_hint_now(readonly_context)
        if hint is not None and self.listing_token(readonly_context) is None:
            return hint.model_copy(update={"cache_scope": "private"})
        return hint

    async def list_resources(self, readonly_context: ReadonlyContext | None = None) -> list[types.Resource]:
        """Every resource the upstream lists (all pages)."""
        return await self._every(
            readonly_context,
            "resources",
            lambda session, cursor: session.client.list_resources(cursor=cursor, meta=session.meta),
            lambda page: page.resources,
        )

    async def list_resource_templates(
        self, readonly_context: ReadonlyContext | None = None
    ) -> list[types.ResourceTemplate]:
        """Every resource template the upstream lists (all pages)."""
        return await self._every(
            readonly_context,
            "resource templates",
            lambda session, cursor: session.client.list_resource_templates(cursor=cursor, meta=session.meta),
            lambda page: page.resource_templates,
        )

    async def read_resource(
        self, uri: str, readonly_context: ReadonlyContext | None = None
    ) -> types.ReadResourceResult:
        """Read one resource."""
        return await self._pool.request(
            readonly_context,
            f"Reading {uri}",
            lambda _slot, session: session.client.read_resource(uri, meta=session.meta),
        )

    async def list_prompts(self, readonly_context: ReadonlyContext | None = None) -> list[types.Prompt]:
        """Every prompt the upstream lists (all pages)."""
        return await self._every(
            readonly_context,
            "prompts",
            lambda session, cursor: session.client.list_prompts(cursor=cursor, meta=session.meta),
            lambda page: page.prompts,
        )

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, readonly_context: ReadonlyContext | None = None
    ) -> types.GetPromptResult:
        """Render one prompt."""
        return await self._pool.request(
            readonly_context,
            f"Getting the prompt {name!r}",
            lambda _slot, session: session.client.get_prompt(name, arguments, meta=session.meta),
        )

    async def _every(
        self,
        readonly_context: ReadonlyContext | None,
        what: str,
        fetch: Callable[[UpstreamSession, str | None], Awaitable[_Page]],
        entries: Callable[[_Page], list[_Entry]],
    ) -> list[_Entry]:
        """Every entry of a paginated listing, following `next_cursor` to the end, on one session; kept for the TTL
        the upstream gave it, unless the upstream announces a change of its resources or prompts first."""

        async def list_all(slot: SessionSlot, session: UpstreamSession) -> list[_Entry]:
            kept = slot.listings.get(what)
            fresh = kept.fresh(session) if kept is not None else None
            if kept is not None and fresh is not None:
                return Listing(cast("list[_Entry]", list(kept.entries)), fresh)
            generation = session.content_generation
            pages = await every_page(lambda cursor: fetch(session, cursor))
            scope: Literal["public", "private"] = (
                "public" if all(page.cache_scope == "public" for page in pages) else "private"
            )
            hint = types.CacheableResult(ttl_ms=min(page.ttl_ms for page in pages), cache_scope=scope)
            listed = [entry for page in pages for entry in entries(page)]
            if hint.ttl_ms > 0 and slot.session is session:
                expire_at = anyio.current_time() + hint.ttl_ms / 1000
                slot.listings[what] = KeptListing(tuple(listed), scope, expire_at, generation, session)
            return Listing(listed, hint)

        return await self._pool.request(readonly_context, f"Listing the {what}", list_all)
