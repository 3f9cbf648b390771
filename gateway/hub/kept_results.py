"""`KeptResults`: upstream tool results too large to return whole, kept for a while for the session that got them.

A result over its upstream's `maxResultBytes` (else the gateway's) reaches the client as a truncated text and a
`resource_link` to `gateway-result://{id}`; `resources/read` of that URI returns the whole result (its JSON) to
the session that made the call, and a not-found error to anyone else. The id is 128 random bits, so a URI cannot be
guessed either; for anonymous sessionless clients, which have no session to tell apart, it is the only key.

The store is bounded: each entry expires after `ttl` seconds, and the total size of the entries is at most
`max_bytes` (the oldest go first; a result larger than the whole store is not kept, and its link says so). So a
flood of huge results costs at most `max_bytes` of memory, never more.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from mcp import MCPError, types

__all__ = [
    "DEFAULT_KEPT_BYTES",
    "DEFAULT_KEPT_TTL",
    "KEPT_RESULT_SCHEME",
    "KeptResults",
    "cap_result",
    "result_size",
]

KEPT_RESULT_SCHEME: Final = "gateway-result"
DEFAULT_KEPT_BYTES: Final = 64 * 1024 * 1024
"""The store's default bound on the total size of the results it keeps."""
DEFAULT_KEPT_TTL: Final = 600.0
"""Seconds a kept result stays readable by default."""
RESOURCE_NOT_FOUND: Final = -32002
"""The JSON-RPC error of a resource that does not exist (SEP-2164)."""
_MIME: Final = "application/json"


@dataclass(frozen=True)
class _Kept:
    owner: str
    body: str
    size: int
    expires: float


class KeptResults:
    """The kept results of one gateway, in memory, by URI."""

    def __init__(self, *, max_bytes: int = DEFAULT_KEPT_BYTES, ttl: float = DEFAULT_KEPT_TTL) -> None:
        self.max_bytes = max_bytes
        self.ttl = ttl
        self._entries: OrderedDict[str, _Kept] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        """The total size of the kept results."""
        return self._bytes

    def keep(self, owner: str, body: str) -> str | None:
        """Keep `body` for session `owner`; its URI, or None when it is larger than the whole store."""
        size = len(body.encode())
        if size > self.max_bytes:
            return None
        self._expire()
        while self._entries and self._bytes + size > self.max_bytes:
            _, oldest = self._entries.popitem(last=False)
            self._bytes -= oldest.size
        uri = f"{KEPT_RESULT_SCHEME}://{secrets.token_hex(16)}"
        self._entries[uri] = _Kept(owner, body, size, time.monotonic() + self.ttl)
        self._bytes += size
        return uri

    def read(self, uri: str, owner: str) -> types.ReadResourceResult:
        """The kept result at `uri`, for session `owner`.

        Raises:
            MCPError: -32002, no such result for this session (never kept, expired, evicted, or another's).
        """
        self._expire()
        kept = self._entries.get(uri)
        if kept is None or not secrets.compare_digest(kept.owner, owner):
            raise MCPError(
                code=RESOURCE_NOT_FOUND,
                message=f"Resource not found: {uri} (kept results expire after {self.ttl:g} s and are readable only "
                "by the session that made the call; call the tool again).",
                data={"uri": uri},
            )
        contents = types.TextResourceContents(uri=uri, mime_type=_MIME, text=kept.body)
        return types.ReadResourceResult(contents=[contents])

    def _expire(self) -> None:
        now = time.monotonic()
        while self._entries:
            uri, first = next(iter(self._entries.items()))
            if first.expires > now:
                return
            del self._entries[uri]
            self._bytes -= first.size


def result_size(result: types.CallToolResult) -> int:
    """The size of a result on the wire (its JSON, UTF-8)."""
    return len(_wire(result).encode())


def _wire(result: types.CallToolResult) -> str:
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return json.dumps(dumped, ensure_ascii=False, separators=(",", ":"))


def _truncated(text: str, limit: int) -> str:
    """The longest prefix of `text` whose UTF-8 form fits in `limit` bytes."""
    return text.encode()[: max(limit, 0)].decode(errors="ignore")


def cap_result(
    result: types.CallToolResult, limit: int, store: KeptResults, owner: str, tool: str
) -> types.CallToolResult:
    """`result` if it fits in `limit` bytes; else a truncated text and a `resource_link` to the whole, kept in `store`.

    The truncated text is the start of the result's text blocks, joined, with a note saying what happened; the
    capped result fits in `limit` bytes itself. `isError` is kept; a result with `structuredContent` becomes an
    error result, since it no longer carries the structured content its tool's output schema promises (clients
    check that only on results that are not errors).
    """
    size = result_size(result)
    if size <= limit:
        return result
    uri = store.keep(owner, _wire(result))
    extra: list[types.ContentBlock] = []
    is_error = result.is_error or result.structured_content is not None
    if uri is None:
        note = (
            f"[The result of {tool} is {size} bytes, over this gateway's limit of {limit} bytes, and too large to "
            "keep; it was cut. Ask for less.]"
        )
    else:
        note = (
            f"[Truncated: the result of {tool} is {size} bytes, over this gateway's limit of {limit} bytes. The "
            f"whole result (JSON) can be read for {store.ttl:g} s with resources/read of {uri}.]"
        )
        extra.append(
            types.ResourceLink(
                uri=uri,
                name=f"{tool} result",
                description=f"The whole result of {tool} ({size} bytes), kept for this session.",
                mime_type=_MIME,
                size=size,
            )
        )
    texts = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    budget = limit - len(note.encode())
    while True:
        head = _truncated(texts, budget)
        text = f"{head}\n{note}" if head else note
        capped = types.CallToolResult(content=[types.TextContent(text=text), *extra], is_error=is_error)
        over = result_size(capped) - limit
        if over <= 0 or not head:
            return capped
        # JSON escapes and the link take room too: shrink by what is over, and a little more.
        budget = len(head.encode()) - over - 16
