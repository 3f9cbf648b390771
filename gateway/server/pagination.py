"""Offset cursors for the merged listings a server publishes: tools, resources, resource templates, prompts.

A cursor is the decimal offset of the next page, exactly as this server issued it in `nextCursor`. Anything else
(`"²"`, `"٣"`, `"-1"`, a 5,000-digit number, an offset past the end) is a JSON-RPC -32602 with a short message;
it never reaches `int()` unchecked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeVar

from mcp import MCPError, types

__all__ = ["page_of"]

_MAX_CURSOR_DIGITS: Final = 18
_MAX_SHOWN: Final = 32
_Item = TypeVar("_Item")


def page_of(
    items: Sequence[_Item], params: types.PaginatedRequestParams | None, page_size: int, method: str
) -> tuple[list[_Item], str | None]:
    """One page of `items` for the request's cursor, and the cursor of the next page (None on the last).

    Raises:
        MCPError: -32602, the cursor is not one this server issues for `items`.
    """
    cursor = params.cursor if params is not None else None
    start = 0 if cursor is None else _offset(cursor, len(items), method)
    end = start + page_size
    return list(items[start:end]), (str(end) if end < len(items) else None)


def _offset(cursor: str, total: int, method: str) -> int:
    # ASCII digits only: `str.isdigit` also accepts "²" and "٣", which `int()` then refuses or reads differently.
    if 0 < len(cursor) <= _MAX_CURSOR_DIGITS and cursor.isascii() and cursor.isdigit():
        offset = int(cursor)
        if offset <= total:
            return offset
    shown = cursor if len(cursor) <= _MAX_SHOWN else f"{cursor[: _MAX_SHOWN - 3]}..."
    raise MCPError(
        code=types.INVALID_PARAMS,
        message=f"Invalid cursor {shown!r} for {method}: pass the nextCursor of the previous page, or no cursor "
        "for the first page.",
    )
