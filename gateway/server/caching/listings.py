"""`with_every_listing`: a server answers every cacheable listing, an empty one for what it does not serve.

A server of local tools alone has no prompts nor resource templates; it still answers `prompts/list` and
`resources/templates/list` (an empty page with its cache hint) rather than "method not found", as clients that
cache listings ask for all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext

from gateway.server.caching.hints import LOCAL_HINT

__all__ = ["with_every_listing"]


async def _no_prompts(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    del ctx, params
    return types.ListPromptsResult(prompts=[], ttl_ms=LOCAL_HINT.ttl_ms, cache_scope=LOCAL_HINT.cache_scope)


async def _no_templates(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    del ctx, params
    return types.ListResourceTemplatesResult(
        resource_templates=[], ttl_ms=LOCAL_HINT.ttl_ms, cache_scope=LOCAL_HINT.cache_scope
    )


def with_every_listing(handlers: Mapping[str, Any]) -> dict[str, Any]:
    """`handlers` (the low-level `Server`'s `on_*` arguments) with an empty listing for each one they lack."""
    return {"on_list_prompts": _no_prompts, "on_list_resource_templates": _no_templates, **handlers}
