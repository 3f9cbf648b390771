"""`SessionSlot`: the pooled upstream session of one identity, its cached tool list and its calls in flight."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import secrets
from dataclasses import dataclass
from typing import Literal, cast

import anyio
from mcp import types

from gateway.client.sessions.pagination import every_page
from gateway.client.sessions.upstream_session import UpstreamSession
from gateway.tools import ToolContext

__all__ = ["KeptListing", "SessionSlot", "identity_of", "slot_key"]


@dataclass(frozen=True)
class KeptListing:
    """A listing of one session kept until `expire_at` (the monotonic clock), unless the upstream announces a change
    first (`UpstreamSession.content_generation` moves on)."""

    entries: tuple[object, ...]
    scope: Literal["public", "private"]
    expire_at: float
    generation: int
    session: UpstreamSession

    def fresh(self, session: UpstreamSession) -> types.CacheableResult | None:
        """What is left of the listing's TTL, and its scope, while it is that of `session` and current; else None."""
        left = self.expire_at - anyio.current_time()
        if session is not self.session or self.generation != session.content_generation or left <= 0:
            return None
        return types.CacheableResult(ttl_ms=math.floor(left * 1000), cache_scope=self.scope)


class SessionSlot:
    """The pooled session of one identity, with its cached tool list."""

    def __init__(self, session_key: str | None = None) -> None:
        self.lock = anyio.Lock()
        self.session: UpstreamSession | None = None
        self.tools: list[types.Tool] | None = None
        self.tools_generation = 0
        self.tools_expire_at = 0.0
        self.tools_scope: Literal["public", "private"] = "private"
        """The `cacheScope` the upstream gave its listing (private if one page said so)."""
        self.listings: dict[str, KeptListing] = {}
        """Resource, template and prompt listings kept for the TTL their upstream gave them, by what they list."""
        self.active: list[ToolContext] = []
        """The calls in flight on this session, newest last: where forwarded upstream requests go."""
        self.session_key = session_key or secrets.token_urlsafe(32)
        """The key a sessionless upstream knows this slot's session by (a bearer secret; see `session_meta_key`)."""
        self.client = ""
        """The client whose request opened the slot (`SessionLimits.per_client` counts by it)."""
        self.borrower: str | None = None
        """Who the slot is lent to now, if it is lent (`SessionPool.borrower`)."""
        """The client whose request opened the slot (`SessionLimits.per_client` counts by it)."""

    @classmethod
    def derived(cls, secret: bytes, key: str) -> SessionSlot:
        """The slot of `key`, its session key derived from `key` with `secret` (so it outlives the slot)."""
        derived = hmac.new(secret, key.encode(), hashlib.sha256).digest()
        return cls(base64.urlsafe_b64encode(derived).decode().rstrip("="))

    def cached_tools(self, session: UpstreamSession) -> list[types.Tool] | None:
        """The cached listing, while no change was announced since (and, unwatched, while its TTL lasts)."""
        if self.tools is None or self.session is not session or self.tools_generation != session.tools_generation:
            return None  # a change was announced (a TTL still running is no reason to keep what changed)
        if session.watches_tools:
            return self.tools
        return self.tools if anyio.current_time() < self.tools_expire_at else None

    def tools_hint(self, session: UpstreamSession) -> types.CacheableResult | None:
        """How fresh the cached listing still is (what is left of the upstream's `ttlMs`) and its scope; None when
        nothing is cached."""
        if self.cached_tools(session) is None:
            return None
        left = max(0, math.floor((self.tools_expire_at - anyio.current_time()) * 1000))
        return types.CacheableResult(ttl_ms=left, cache_scope=self.tools_scope)

    async def list_tools(self, session: UpstreamSession) -> list[types.Tool]:
        """Every tool of the upstream (all pages): the cached listing, else listed anew and cached for `session`."""
        cached = self.cached_tools(session)
        if cached is not None:
            return cached
        generation = session.tools_generation
        pages = await every_page(lambda cursor: session.client.list_tools(cursor=cursor, meta=session.meta))
        tools = [tool for page in pages for tool in page.tools]
        ttl_ms = min(page.ttl_ms for page in pages)
        if self.session is session:
            self.tools = tools
            self.tools_generation = generation
            self.tools_expire_at = anyio.current_time() + (ttl_ms or 0) / 1000
            self.tools_scope = "public" if all(page.cache_scope == "public" for page in pages) else "private"
        return tools


def slot_key(
    identity: str, headers: dict[str, str] | None, speaks_for: str, declared: types.ClientCapabilities | None
) -> str:
    """The key of a context's slot: its session key, the headers its header provider gave, whom it speaks for and
    what its session declares."""
    capabilities = None if declared is None else declared.model_dump(by_alias=True, mode="json", exclude_none=True)
    return json.dumps([identity, headers or {}, speaks_for, capabilities], sort_keys=True)


def identity_of(key: str) -> list[object]:
    """A slot key without what its session declares."""
    return cast("list[object]", json.loads(key))[:3]
