"""Every page of a paginated MCP listing (`tools/list`, `resources/list`, `prompts/list`, ...), cursor by cursor."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

__all__ = ["Paged", "every_page"]


class Paged(Protocol):
    """A page of a listing: it names the cursor of the next page, or none on the last."""

    @property
    def next_cursor(self) -> str | None: ...


_Page = TypeVar("_Page", bound=Paged)


async def every_page(fetch: Callable[[str | None], Awaitable[_Page]]) -> list[_Page]:
    """The pages `fetch` returns, from the first (cursor None) following `next_cursor` until a page names none."""
    pages = [await fetch(None)]
    while cursor := pages[-1].next_cursor:
        pages.append(await fetch(cursor))
    return pages
