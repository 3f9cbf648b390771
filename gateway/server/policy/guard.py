"""A `Policy` applied to every MCP request of a `ToolServer` (SDK server middleware), in both eras, on every transport.

- Listings (`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`) leave out what the caller
  may not use. Pages can come out shorter than the page size (MCP promises no page size).
- A call of a tool the caller may not use is answered like a call of an unknown tool: JSON-RPC error -32602.
  Reading a resource, getting a prompt, subscribing (`resources/subscribe`, or a `subscriptions/listen` stream's
  `resourceSubscriptions`) or completing for one likewise. While resources are governed, a resource URI an
  upstream could resolve to another resource than the one matched (dot segments, encoded separators:
  `gateway.server.policy.resource_uri.ambiguity`) is refused with -32602 saying why.
- A `tools/call` past a rate limit gets an `isError` result the model can read, saying when to retry, with the
  seconds also in `_meta["adk-mcp-gateway/retryAfterSeconds"]`. The later rounds of one call (modern-era
  `requestState` retries) are not counted again, and a call of a tool that does not exist (`UnknownToolError`)
  gives its token back: tool names are the caller's to make up, and each would otherwise keep a bucket.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from mcp import MCPError, types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from pydantic import BaseModel

from adapters.meta_keys import RETRY_AFTER_META_KEY
from gateway.server.identity import Principal, current_principal
from gateway.server.policy.resource_uri import ambiguity
from gateway.server.policy.rules import Kind, Policy

if TYPE_CHECKING:
    from gateway.server.extension import PlainRequest

__all__ = ["PolicyGuard", "UnknownToolError"]

logger = logging.getLogger(__name__)

_LISTINGS: dict[str, tuple[Kind, str, str]] = {
    "tools/list": ("tools", "tools", "name"),
    "resources/list": ("resources", "resources", "uri"),
    "resources/templates/list": ("resources", "resource_templates", "uri_template"),
    "prompts/list": ("prompts", "prompts", "name"),
}
"""method → (kind, the result's list field, the item's name field)."""
_USES: dict[str, tuple[Kind, str]] = {
    "tools/call": ("tools", "name"),
    "resources/read": ("resources", "uri"),
    "resources/subscribe": ("resources", "uri"),
    "resources/unsubscribe": ("resources", "uri"),
    "prompts/get": ("prompts", "name"),
}
"""method → (kind, the param naming what is used)."""


def _filtered(result: HandlerResult, field: str, keep: Callable[[str], bool], name_field: str) -> HandlerResult:
    """The listing without what the caller may not use: a listing of the caller's own, so never shared by caches."""
    if isinstance(result, BaseModel):
        items = cast("list[Any]", getattr(result, field, None) or [])
        kept = [item for item in items if keep(str(getattr(item, name_field)))]
        return result.model_copy(update={field: kept, "cache_scope": "private"})
    if isinstance(result, dict):
        wire_field = "resourceTemplates" if field == "resource_templates" else field
        wire_name = "uriTemplate" if name_field == "uri_template" else name_field
        items = cast("list[dict[str, Any]]", result.get(wire_field) or [])
        filtered = {**result, wire_field: [item for item in items if keep(str(item.get(wire_name)))]}
        # Only a 2026-07-28 answer carries a scope (`gateway.server.caching`).
        return {**filtered, "cacheScope": "private"} if "cacheScope" in result else filtered
    return result


class UnknownToolError(MCPError):
    """-32602 for a `tools/call` of a name no tool has (the guard then counts the call against no rate limit)."""


class PolicyGuard:
    """The middleware; add it to `Server.middleware` after the request-state boundary."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def applies_to(self, request: PlainRequest) -> bool:
        """Every request is checked against the policy (`CallPipeline`): none takes the plain path."""
        del request
        return True

    def _refuse_use(self, principal: Principal, kind: Kind, name: str) -> None:
        logger.info("Policy: %s may not use %s %r", principal.name, kind[:-1], name[:200])
        what = {"tools": "tool", "resources": "resource", "prompts": "prompt"}[kind]
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Unknown {what} {name!r}, or one the gateway's policies do not allow principal "
            f"{principal.name!r} to use.",
        )

    def _check_use(self, principal: Principal, kind: Kind, name: str) -> None:
        """Refuse the use of `name` unless the policy allows it by that very spelling (`_refuse_ambiguous`)."""
        self._refuse_ambiguous(kind, name)
        if not self.policy.allows(principal, kind, name):
            self._refuse_use(principal, kind, name)

    def _refuse_ambiguous(self, kind: Kind, name: str) -> None:
        if kind != "resources" or not self.policy.governs(kind):
            return
        reason = ambiguity(name)
        if reason is not None:
            logger.info("Policy: refused the ambiguous resource URI %r (%s)", name[:200], reason)
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Resource URI {name!r} holds {reason}: the gateway's policies cannot tell which resource "
                "an upstream would read for it. Ask for the resource by its plain URI.",
            )

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        method = ctx.method
        params = ctx.params or {}
        if method in _USES:
            kind, param = _USES[method]
            name = params.get(param)
            principal = current_principal()
            if isinstance(name, str):
                self._check_use(principal, kind, name)
            if method == "tools/call" and isinstance(name, str) and params.get("requestState") is None:
                refused = self._rate_limited(principal, name)
                if refused is not None:
                    return refused
                try:
                    return await call_next(ctx)
                except UnknownToolError:
                    self.policy.give_back(principal, name)
                    raise
            return await call_next(ctx)
        if method == "completion/complete":
            ref = params.get("ref")
            if isinstance(ref, dict):
                fields = cast("dict[str, Any]", ref)
                kind, name = (
                    ("prompts", fields.get("name"))
                    if fields.get("type") == "ref/prompt"
                    else ("resources", fields.get("uri"))
                )
                if isinstance(name, str):
                    self._check_use(current_principal(), kind, name)
            return await call_next(ctx)
        if method == "subscriptions/listen":
            wanted = cast("dict[str, Any]", params.get("notifications") or {}).get("resourceSubscriptions")
            if isinstance(wanted, list):
                principal = current_principal()
                for uri in cast("list[Any]", wanted):
                    if isinstance(uri, str):
                        self._check_use(principal, "resources", uri)
            return await call_next(ctx)
        result = await call_next(ctx)
        if method in _LISTINGS:
            kind, field, name_field = _LISTINGS[method]
            if self.policy.governs(kind):
                principal = current_principal()
                return _filtered(result, field, lambda name: self.policy.allows(principal, kind, name), name_field)
        return result

    def _rate_limited(self, principal: Principal, tool: str) -> types.CallToolResult | None:
        wait, limit = self.policy.take(principal, tool)
        if limit is None:
            return None
        seconds = math.ceil(wait * 10) / 10
        logger.info("Policy: rate limit for %s calling %s; retry in %.1f s", principal.name, tool, seconds)
        return types.CallToolResult(
            content=[
                types.TextContent(
                    text=f"Rate limit reached: {tool} allows {limit.describe()} for {principal.name}. "
                    f"Retry in {seconds:g} seconds."
                )
            ],
            is_error=True,
            _meta={RETRY_AFTER_META_KEY: seconds},
        )
