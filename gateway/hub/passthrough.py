"""Resources, prompts and completion of upstream MCP servers, merged and served by the gateway.

Names follow the tools' prefixes: a prompt becomes `{prefix}_{name}`; a resource URI `{prefix}+{uri}` (and a URI
template `{prefix}+{template}`), an app's `ui://{rest}` becomes `ui://{prefix}/{rest}` (`gateway.hub.apps`), so a
read finds its upstream again. With an empty prefix everything passes through
unchanged, and a request is routed to the upstream that listed the name or URI (URIs unknown to all listings go to
the first upstream whose templates match, else to the first unprefixed upstream).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

from mcp import MCPError, types
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.client import McpToolset
from gateway.client.relayed_round import RelayedRound, declaring
from gateway.client.upstream_content import Listing
from gateway.hub.apps import namespaced_meta, namespaced_uri, upstream_uri
from gateway.server.caching import merged_hint
from gateway.tools import BaseToolset, ReadonlyContext

__all__ = ["Passthrough"]

_TEMPLATE_VARIABLE = re.compile(r"\{[^}]*\}")
_Entry = TypeVar("_Entry", types.Resource, types.ResourceTemplate, types.Prompt)


def _prefixed(prefix: str | None, value: str, separator: str) -> str:
    return f"{prefix}{separator}{value}" if prefix else value


def _own_meta(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    """An upstream result's `_meta` without the protocol envelope (the upstream's server info is not ours)."""
    if not meta:
        return meta
    kept = {key: value for key, value in meta.items() if not key.startswith("io.modelcontextprotocol/")}
    return kept or None


def _downstream_block(prefix: str, block: types.ContentBlock) -> types.ContentBlock:
    """A content block with the resource URI it names made the gateway's (`namespaced_uri`)."""
    if isinstance(block, types.ResourceLink):
        return block.model_copy(update={"uri": namespaced_uri(prefix, str(block.uri))})
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource.model_copy(update={"uri": namespaced_uri(prefix, str(block.resource.uri))})
        return block.model_copy(update={"resource": resource})
    return block


def _downstream_raw_block(prefix: str, block: Any) -> Any:
    """`_downstream_block` for a content block in its wire form."""
    if not isinstance(block, dict):
        return block
    fields = cast("dict[str, Any]", block)
    kind = fields.get("type")
    if kind == "resource_link" and isinstance(fields.get("uri"), str):
        return {**fields, "uri": namespaced_uri(prefix, fields["uri"])}
    resource: Any = fields.get("resource")
    if kind == "resource" and isinstance(resource, dict):
        inner = cast("dict[str, Any]", resource)
        if isinstance(inner.get("uri"), str):
            return {**fields, "resource": {**inner, "uri": namespaced_uri(prefix, inner["uri"])}}
    return fields


def _template_pattern(template: str) -> re.Pattern[str]:
    parts = _TEMPLATE_VARIABLE.split(template)
    return re.compile("^" + "[^/]+".join(re.escape(part) for part in parts) + "$")


class Passthrough:
    """Routes resource, prompt and completion requests to the upstream toolsets that own them."""

    def __init__(self, upstreams: Sequence[McpToolset]) -> None:
        self._upstreams = list(upstreams)

    @property
    def upstreams(self) -> list[McpToolset]:
        """The upstream toolsets, in config order."""
        return list(self._upstreams)

    def replace(self, upstreams: Sequence[McpToolset]) -> None:
        """Route to `upstreams` from now on (a config reload)."""
        self._upstreams = list(upstreams)

    def __bool__(self) -> bool:
        return bool(self._upstreams)

    @staticmethod
    def downstream_uri(upstream: BaseToolset, uri: str) -> str:
        """A resource URI of an upstream as the gateway's clients know it."""
        return namespaced_uri(upstream.tool_name_prefix, uri)

    @staticmethod
    def tool_result(upstream: BaseToolset | None, result: types.CallToolResult) -> types.CallToolResult:
        """An upstream's tool result as the gateway's clients receive it: as sent, resource URIs (and the app its
        `_meta` names) rewritten."""
        prefix = upstream.tool_name_prefix if upstream is not None else None
        if not prefix:
            return result
        content = [_downstream_block(prefix, block) for block in result.content]
        return result.model_copy(update={"content": content, "meta": namespaced_meta(prefix, result.meta)})

    @staticmethod
    def raw_tool_result(upstream: BaseToolset | None, result: dict[str, Any]) -> dict[str, Any]:
        """`tool_result` for a result in its wire form (the fast lane): the same object when there is no prefix."""
        prefix = upstream.tool_name_prefix if upstream is not None else None
        content = result.get("content")
        if not prefix or not isinstance(content, list):
            return result
        blocks: list[Any] = [_downstream_raw_block(prefix, block) for block in cast("list[Any]", content)]
        rewritten = {**result, "content": blocks}
        meta: Any = result.get("_meta")
        if isinstance(meta, dict):
            rewritten["_meta"] = namespaced_meta(prefix, cast("dict[str, Any]", meta))
        return rewritten

    # --- routing ------------------------------------------------------------------------------------------------

    def _by_uri(self, uri: str) -> tuple[McpToolset, str]:
        for upstream in self._upstreams:
            prefix = upstream.tool_name_prefix
            own = upstream_uri(prefix, uri) if prefix else None
            if own is not None:
                return upstream, own
        unprefixed = [upstream for upstream in self._upstreams if not upstream.tool_name_prefix]
        if not unprefixed:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource {uri!r}: no upstream serves it.")
        return unprefixed[0], uri

    async def _by_uri_listed(self, ctx: ReadonlyContext, uri: str) -> tuple[McpToolset, str]:
        upstream, upstream_uri = self._by_uri(uri)
        if upstream.tool_name_prefix:
            return upstream, upstream_uri
        # Several unprefixed upstreams: the one that lists the URI, or whose template matches it.
        candidates = [u for u in self._upstreams if not u.tool_name_prefix]
        if len(candidates) > 1:
            for candidate in candidates:
                client = (await candidate.session(ctx)).client
                listed = await client.list_resources()
                if any(resource.uri == uri for resource in listed.resources):
                    return candidate, uri
                templates = await client.list_resource_templates()
                if any(_template_pattern(t.uri_template).match(uri) for t in templates.resource_templates):
                    return candidate, uri
        return upstream, upstream_uri

    async def _by_prompt(self, ctx: ReadonlyContext, name: str) -> tuple[McpToolset, str]:
        for upstream in self._upstreams:
            prefix = upstream.tool_name_prefix
            if prefix and name.startswith(f"{prefix}_"):
                return upstream, name[len(prefix) + 1 :]
        for upstream in self._upstreams:
            if not upstream.tool_name_prefix:
                prompts = await upstream.list_prompts(ctx)
                if any(prompt.name == name for prompt in prompts):
                    return upstream, name
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt {name!r}.")

    # --- handlers -----------------------------------------------------------------------------------------------

    async def _merged(
        self,
        listing: Callable[[McpToolset], Awaitable[list[_Entry]]],
        renamed: Callable[[str | None, _Entry], _Entry],
    ) -> list[_Entry]:
        """Every upstream's `listing`, in upstream order, each entry `renamed` under its upstream's prefix; a `Listing`
        whose hint is the upstreams' merged (`gateway.server.caching`)."""
        merged: list[_Entry] = []
        hints: list[types.CacheableResult | None] = []
        for upstream in self._upstreams:
            listed = await listing(upstream)
            merged.extend(renamed(upstream.tool_name_prefix, entry) for entry in listed)
            hints.append(listed.hint if isinstance(listed, Listing) else None)
        return Listing(merged, merged_hint(hints))

    async def list_resources(self, ctx: ReadonlyContext) -> list[types.Resource]:
        """Every upstream's resources, URIs prefixed."""
        return await self._merged(
            lambda upstream: upstream.list_resources(ctx),
            lambda prefix, resource: resource.model_copy(update={"uri": namespaced_uri(prefix, str(resource.uri))}),
        )

    async def list_resource_templates(self, ctx: ReadonlyContext) -> list[types.ResourceTemplate]:
        """Every upstream's resource templates, prefixed."""
        return await self._merged(
            lambda upstream: upstream.list_resource_templates(ctx),
            lambda prefix, template: template.model_copy(
                update={"uri_template": namespaced_uri(prefix, template.uri_template)}
            ),
        )

    async def read_resource(self, ctx: ReadonlyContext, uri: str) -> types.ReadResourceResult:
        """Read a resource from its upstream; contents carry the URI the client asked for."""
        upstream, upstream_uri = await self._by_uri_listed(ctx, uri)
        result = await upstream.read_resource(upstream_uri, ctx)
        prefix = upstream.tool_name_prefix
        contents = [c.model_copy(update={"uri": namespaced_uri(prefix, str(c.uri))}) for c in result.contents]
        return result.model_copy(update={"contents": contents, "meta": _own_meta(result.meta)})

    async def subscribe(self, ctx: ReadonlyContext, uri: str, *, subscribe: bool) -> types.EmptyResult:
        """Forward `resources/subscribe` or `resources/unsubscribe`."""
        upstream, upstream_uri = await self._by_uri_listed(ctx, uri)
        client = (await upstream.session(ctx)).client
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # 2026-07-28 removed resources/subscribe; updates there come from `subscriptions/listen`, which the
            # gateway does not relay yet, so the subscription is acknowledged here.
            return types.EmptyResult()
        # `send_request` rather than the SDK's subscribe helpers, which warn about the 2026 deprecation.
        request: types.SubscribeRequest | types.UnsubscribeRequest = (
            types.SubscribeRequest(params=types.SubscribeRequestParams(uri=upstream_uri))
            if subscribe
            else types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=upstream_uri))
        )
        return await client.session.send_request(request, types.EmptyResult)

    async def list_prompts(self, ctx: ReadonlyContext) -> list[types.Prompt]:
        """Every upstream's prompts, names prefixed."""
        return await self._merged(
            lambda upstream: upstream.list_prompts(ctx),
            lambda prefix, prompt: prompt.model_copy(update={"name": _prefixed(prefix, prompt.name, "_")}),
        )

    async def get_prompt(
        self, ctx: ReadonlyContext, name: str, arguments: dict[str, str] | None
    ) -> types.GetPromptResult:
        """Render a prompt on its upstream."""
        upstream, upstream_name = await self._by_prompt(ctx, name)
        result = await upstream.get_prompt(upstream_name, arguments, ctx)
        return result.model_copy(update={"meta": _own_meta(result.meta)})

    async def get_prompt_round(
        self, ctx: ReadonlyContext, name: str, arguments: dict[str, str] | None, answer: RelayedRound
    ) -> types.GetPromptResult | types.InputRequiredResult | None:
        """One round of a modern client's `prompts/get`, relayed as it is when the upstream session is modern.

        None: the upstream's session speaks the handshake era (render it with `get_prompt`).
        """
        upstream, upstream_name = await self._by_prompt(ctx, name)
        session = await upstream.session(ctx)
        if not session.modern:
            return None
        with session.busy(), declaring(answer.capabilities):
            result = await session.client.session.get_prompt(
                upstream_name,
                arguments,
                input_responses=answer.input_responses,
                request_state=answer.request_state,
                meta=session.meta,
                allow_input_required=True,
            )
        return result.model_copy(update={"meta": _own_meta(result.meta)})

    async def complete(self, ctx: ReadonlyContext, params: types.CompleteRequestParams) -> types.CompleteResult:
        """Forward `completion/complete` to the upstream owning the prompt or resource template."""
        ref: Any = params.ref
        if isinstance(ref, types.PromptReference):
            upstream, name = await self._by_prompt(ctx, ref.name)
            upstream_ref: types.PromptReference | types.ResourceTemplateReference = ref.model_copy(
                update={"name": name}
            )
        else:
            upstream, uri = self._by_uri(str(ref.uri))
            upstream_ref = ref.model_copy(update={"uri": uri})
        client = (await upstream.session(ctx)).client
        context_arguments = params.context.arguments if params.context else None
        result = await client.complete(
            upstream_ref, {"name": params.argument.name, "value": params.argument.value}, context_arguments
        )
        return result.model_copy(update={"meta": _own_meta(result.meta)})
