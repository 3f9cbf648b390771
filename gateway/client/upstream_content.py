"""`UpstreamContent`: an upstream's resources, resource templates and prompts, listed (all pages) and read
through its session pool.

A part of `McpToolset` (the gateway forwards these; `load_mcp_resource` reads resources for an agent).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from mcp import types

from gateway.client.sessions.pagination import every_page
from gateway.client.sessions.pool import SessionPool
from gateway.client.sessions.slot import SessionSlot
from gateway.client.sessions.upstream_session import UpstreamSession
from gateway.tools import ReadonlyContext

__all__ = ["UpstreamContent"]

_Page = TypeVar("_Page", types.ListResourcesResult, types.ListResourceTemplatesResult, types.ListPromptsResult)
_Entry = TypeVar("_Entry")


class UpstreamContent:
    """Resources and prompts of the upstream that `_pool` reaches."""

    _pool: SessionPool

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
        """Every entry of a paginated listing, following `next_cursor` to the end, on one session."""

        async def list_all(_slot: SessionSlot, session: UpstreamSession) -> list[_Entry]:
            pages = await every_page(lambda cursor: fetch(session, cursor))
            return [entry for page in pages for entry in entries(page)]

        return await self._pool.request(readonly_context, f"Listing the {what}", list_all)
