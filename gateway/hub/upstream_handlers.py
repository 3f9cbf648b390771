"""The gateway's resource, prompt, completion and roots handlers: requests routed to upstreams by `Passthrough`.

Registered on the SDK server only when the gateway has upstreams. Listings are merged and paginated like
`tools/list`; subscriptions are remembered so that an upstream's `resources/updated` reaches the subscribers.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.client.relayed_round import RelayedRound
from gateway.client.upstream_content import Listing
from gateway.hub.kept_results import KEPT_RESULT_SCHEME, KeptResults
from gateway.hub.passthrough import Passthrough
from gateway.hub.relay import DownstreamRelay
from gateway.server.caching import UNKNOWN_HINT
from gateway.server.extension import ContextOf, Pager
from gateway.server.identity import identify
from gateway.server.round_state import RoundState

__all__ = ["UpstreamHandlers"]


def _hint_of(merged: list[Any]) -> dict[str, Any]:
    """The merged listing's cache hint as a result's fields (`gateway.server.caching`)."""
    hint = merged.hint if isinstance(merged, Listing) else UNKNOWN_HINT
    return {"ttl_ms": hint.ttl_ms, "cache_scope": hint.cache_scope}


class UpstreamHandlers:
    """The `on_*` handlers for everything but tools, over the upstreams of one server."""

    def __init__(
        self, passthrough: Passthrough, relay: DownstreamRelay, context: ContextOf, page: Pager, kept: KeptResults
    ) -> None:
        self._passthrough = passthrough
        self._kept = kept
        self._relay = relay
        self._context = context
        self._page = page

    def as_server_handlers(self) -> dict[str, Any]:
        """The handlers as keyword arguments of the SDK's low-level `Server`."""
        return {
            "on_list_resources": self._on_list_resources,
            "on_list_resource_templates": self._on_list_resource_templates,
            "on_read_resource": self._on_read_resource,
            "on_subscribe_resource": self._on_subscribe_resource,
            "on_unsubscribe_resource": self._on_unsubscribe_resource,
            "on_list_prompts": self._on_list_prompts,
            "on_get_prompt": self._on_get_prompt,
            "on_completion": self._on_completion,
            "on_roots_list_changed": self._on_roots_list_changed,
        }

    async def _on_list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        merged = await self._passthrough.list_resources(await self._context(ctx))
        page, next_cursor = self._page(merged, params, "resources/list")
        return types.ListResourcesResult(resources=page, next_cursor=next_cursor, **_hint_of(merged))

    async def _on_list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        merged = await self._passthrough.list_resource_templates(await self._context(ctx))
        page, next_cursor = self._page(merged, params, "resources/templates/list")
        return types.ListResourceTemplatesResult(resource_templates=page, next_cursor=next_cursor, **_hint_of(merged))

    async def _on_read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri.startswith(f"{KEPT_RESULT_SCHEME}://"):
            await self._context(ctx)
            return self._kept.read(uri, identify(ctx).session_owner)
        return await self._passthrough.read_resource(await self._context(ctx), uri)

    async def _on_subscribe_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        result = await self._passthrough.subscribe(await self._context(ctx), str(params.uri), subscribe=True)
        self._relay.subscribed(str(params.uri), identify(ctx).session_owner, subscribed=True)
        return result

    async def _on_unsubscribe_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        result = await self._passthrough.subscribe(await self._context(ctx), str(params.uri), subscribe=False)
        self._relay.subscribed(str(params.uri), identify(ctx).session_owner, subscribed=False)
        return result

    async def _on_list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        merged = await self._passthrough.list_prompts(await self._context(ctx))
        page, next_cursor = self._page(merged, params, "prompts/list")
        return types.ListPromptsResult(prompts=page, next_cursor=next_cursor, **_hint_of(merged))

    async def _on_get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """Render a prompt on its upstream; a modern client's rounds go to a modern upstream as they are."""
        readonly = await self._context(ctx)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            earlier = RoundState.parse(params.request_state)
            declared = ctx.session.client_capabilities
            answer = RelayedRound(
                input_responses=params.input_responses,
                request_state=earlier.upstream,
                capabilities=None
                if declared is None
                else declared.model_dump(by_alias=True, mode="json", exclude_none=True),
            )
            result = await self._passthrough.get_prompt_round(readonly, params.name, params.arguments, answer)
            if isinstance(result, types.InputRequiredResult):
                state = RoundState(relayed=True, upstream=result.request_state).dump()
                return result.model_copy(update={"request_state": state})
            if result is not None:
                return result
        return await self._passthrough.get_prompt(readonly, params.name, params.arguments)

    async def _on_completion(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        return await self._passthrough.complete(await self._context(ctx), params)

    async def _on_roots_list_changed(
        self, ctx: ServerRequestContext[Any, Any], params: types.NotificationParams | None
    ) -> None:
        """A client's roots changed: tell the upstream sessions that serve it."""
        del params
        readonly = await self._context(ctx)
        for upstream in self._passthrough.upstreams:
            await upstream.roots_changed(readonly)
