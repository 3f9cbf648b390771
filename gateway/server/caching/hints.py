"""What a cacheable result (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`,
`resources/read`) tells a client about its freshness, when the server merged it from several sources.

A proxy's answer is as fresh as its stalest part and as shareable as its least shareable one: the merged `ttlMs` is
the smallest of the sources' (what is left of it, for a listing the gateway kept), and the scope is `private` as soon
as one source says so or the answer depends on the caller (a policy's filter, tool search, pins, a session's own
artifacts). A source that cannot tell (an upstream left out of the listing, a toolset listing per context) counts as
`ttlMs: 0`, `private`. The hints travel on the 2026-07-28 wire only; earlier versions have no such fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from mcp import types
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.tools import ReadonlyContext

__all__ = ["LOCAL_HINT", "UNKNOWN_HINT", "HintedSource", "merged_hint", "stamped"]

UNKNOWN_HINT = types.CacheableResult(ttl_ms=0, cache_scope="private")
"""The hint of a source that cannot tell: immediately stale, never shared."""

LOCAL_HINT = types.CacheableResult(ttl_ms=0, cache_scope="public")
"""The hint of the server's own tools: the same for every caller, and a change is announced (`list_changed`) rather
than waited out."""


@runtime_checkable
class HintedSource(Protocol):
    """A tool source that knows how fresh its listing for a context is (an upstream toolset's kept listing)."""

    def listing_hint(self, readonly_context: ReadonlyContext | None = None) -> types.CacheableResult | None:
        """The listing's remaining freshness and scope; None when it is not kept (the next listing asks anew)."""
        ...


def merged_hint(hints: Iterable[types.CacheableResult | None], *, private: bool = False) -> types.CacheableResult:
    """The hint of an answer merged from sources with these hints (None: a source that cannot tell).

    `private`: the answer depends on the caller whatever its sources say. No source at all: `LOCAL_HINT`.
    """
    ttl_ms: int | None = None
    shared = not private
    for given in hints:
        hint = given or UNKNOWN_HINT
        ttl_ms = hint.ttl_ms if ttl_ms is None else min(ttl_ms, hint.ttl_ms)
        shared = shared and hint.cache_scope == "public"
    if ttl_ms is None:
        ttl_ms = LOCAL_HINT.ttl_ms
    return types.CacheableResult(ttl_ms=ttl_ms, cache_scope="public" if shared else "private")


def stamped(result: Mapping[str, Any], hint: types.CacheableResult, protocol_version: str | None) -> dict[str, Any]:
    """A result in its wire form with `hint` stamped on it (on the 2026-07-28 wire only; other versions as given)."""
    if protocol_version not in MODERN_PROTOCOL_VERSIONS or result.get("resultType") == "input_required":
        return dict(result)
    return {**result, "ttlMs": hint.ttl_ms, "cacheScope": hint.cache_scope}
