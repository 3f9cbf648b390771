"""`ArtifactResources`: the artifacts a session's tools saved, as that session's MCP resources.

`resources/list` lists the files the caller's session sees (its own, and its principal's `user:` files) at their
latest version, `resources/read` reads one (`artifact://<filename>`, or `artifact://<filename>?version=N`; see
`gateway.artifacts.uri`): text for text and JSON, a base64 blob for anything else. A tool result that saved
artifacts carries a `resource_link` per file saved, and the session hears that its list changed:
`notifications/resources/list_changed` in the handshake era, on the session's `subscriptions/listen` streams in
the modern era. A URI always names a file of the session reading it, so no session or principal ever reads
another's files.

An extension's resource handlers (the gateway's upstream resources) are merged, not replaced: the first page of
`resources/list` starts with the artifacts and continues with the extension's listing, whose cursors pass through;
a URI of another scheme is read by the extension, and so is an `artifact:` URI the session has no file for (an
unprefixed upstream gateway's own artifacts).
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from mcp import MCPError, types
from mcp.server.context import ServerRequestContext
from mcp.shared.subscriptions import ResourcesListChanged, ServerEvent
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from adapters import Media
from gateway.artifacts.uri import ARTIFACT_SCHEME, artifact_uri, parse_artifact_uri
from gateway.server.caching import LOCAL_HINT, with_every_listing
from gateway.server.identity import CallIdentity, identify
from gateway.server.resources.artifact_listen import ArtifactListen
from gateway.tools import ReadonlyContext, ToolContext
from gateway.tools.artifacts import ArtifactService, ArtifactVersion

__all__ = ["ArtifactResources", "EventPublisher", "artifact_links"]

Handler = Callable[..., Awaitable[Any]]
_TEXT_TYPES = ("application/json", "application/xml", "application/yaml", "application/javascript")


@runtime_checkable
class EventPublisher(Protocol):
    """A `subscriptions/listen` handler that takes events for one session's streams (the hub's `ListenStreams`)."""

    def publish(self, event: ServerEvent, owner: str | None) -> None: ...


class ArtifactResources:
    """The artifact side of `resources/*` (see the module docstring).

    Args:
        service: where the server's artifacts live.
        context: the caller of a request as a `ReadonlyContext` (`ServerHooks.context`).
    """

    def __init__(
        self, service: ArtifactService, context: Callable[[ServerRequestContext[Any, Any]], Awaitable[ReadonlyContext]]
    ) -> None:
        self._service = service
        self._context = context
        self._publisher: EventPublisher | None = None

    def merged(self, handlers: Mapping[str, Any]) -> dict[str, Any]:
        """`handlers` (an extension's `on_*` handlers) with the artifacts' resources merged into them (and an empty
        listing for each cacheable listing there is none of: `with_every_listing`)."""
        merged = dict(handlers)
        inner_list: Handler | None = merged.get("on_list_resources")
        inner_read: Handler | None = merged.get("on_read_resource")
        listen = merged.get("on_subscriptions_listen")

        async def on_list_resources(
            ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
        ) -> types.ListResourcesResult:
            cursor = params.cursor if params is not None else None
            own = await self._listing(ctx) if cursor is None else []
            # A session's own files: a listing for its caller alone (its changes are announced, not waited out).
            if inner_list is None:
                return types.ListResourcesResult(resources=own, ttl_ms=LOCAL_HINT.ttl_ms, cache_scope="private")
            theirs: types.ListResourcesResult = await inner_list(ctx, params)
            return theirs.model_copy(update={"resources": [*own, *theirs.resources], "cache_scope": "private"})

        async def on_read_resource(
            ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
        ) -> types.ReadResourceResult:
            uri = str(params.uri)
            if inner_read is None:
                return await self._read(ctx, uri)
            if not uri.startswith(f"{ARTIFACT_SCHEME}:"):
                return await inner_read(ctx, params)
            try:
                return await self._read(ctx, uri)
            except MCPError as missing:
                # An upstream without a prefix may serve `artifact:` URIs of its own (another gateway's).
                try:
                    return await inner_read(ctx, params)
                except MCPError:
                    raise missing from None

        merged["on_list_resources"] = on_list_resources
        merged["on_read_resource"] = on_read_resource
        if isinstance(listen, EventPublisher):
            self._publisher = listen
        elif listen is None:
            feed = ArtifactListen()
            self._publisher = feed
            merged["on_subscriptions_listen"] = feed
        return with_every_listing(merged)

    async def announce(self, ctx: ServerRequestContext[Any, Any], caller: CallIdentity) -> None:
        """Tell the caller's session that its resources changed (a tool saved an artifact).

        Modern era: on this server's own listen streams, every stream of the caller's principal (a listen request
        names no session); on an extension's (a gateway with upstreams), the streams of the caller's session and
        those of the session a keyless request on the same channel has.
        """
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if isinstance(self._publisher, ArtifactListen):
                self._publisher.publish_to_principal(ResourcesListChanged(), caller.principal)
            elif self._publisher is not None:
                self._publisher.publish(ResourcesListChanged(), caller.session_owner)
                # A listen request carries no `_meta` session key: its stream is the session a keyless request on
                # this channel has (the connection's, or the principal's).
                keyless = identify(dataclasses.replace(ctx, meta=None)).session_owner
                if keyless != caller.session_owner:
                    self._publisher.publish(ResourcesListChanged(), keyless)
            return
        await ctx.session.send_notification(types.ResourceListChangedNotification(), related_request_id=ctx.request_id)

    async def _listing(self, ctx: ServerRequestContext[Any, Any]) -> list[types.Resource]:
        caller = await self._context(ctx)
        service = self._service
        app, user, session = caller.app_name, caller.user_id, caller.session_id
        resources: list[types.Resource] = []
        for filename in await service.list_artifact_keys(app_name=app, user_id=user, session_id=session):
            described = await service.get_artifact_version(
                app_name=app, user_id=user, session_id=session, filename=filename
            )
            if described is None:
                continue  # deleted meanwhile
            resources.append(_resource(filename, described, versioned=False))
        return resources

    async def _read(self, ctx: ServerRequestContext[Any, Any], uri: str) -> types.ReadResourceResult:
        named = parse_artifact_uri(uri)
        if named is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown resource {uri!r}: this server's resources are artifact://<filename>[?version=N].",
            )
        filename, version = named
        caller = await self._context(ctx)
        app, user, session = caller.app_name, caller.user_id, caller.session_id
        try:
            value = await self._service.load_artifact(
                app_name=app, user_id=user, session_id=session, filename=filename, version=version
            )
            described = await self._service.get_artifact_version(
                app_name=app, user_id=user, session_id=session, filename=filename, version=version
            )
        except ValueError as exc:  # a filename the service refuses (empty, `..`)
            raise MCPError(code=types.INVALID_PARAMS, message=f"Cannot read {uri!r}: {exc}") from exc
        if value is None or described is None:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Resource {uri!r} not found: this session has no such artifact (or no such version).",
            )
        return types.ReadResourceResult(contents=[_contents(uri, value, described.mime_type)])


async def artifact_links(context: ToolContext, delta: Mapping[str, int]) -> list[types.ContentBlock]:
    """A `resource_link` per artifact a call saved (`delta`: filename → version), to the version it saved."""
    service = context.artifact_service
    if service is None:
        return []
    links: list[types.ContentBlock] = []
    for filename, version in delta.items():
        described = await service.get_artifact_version(
            app_name=context.app_name,
            user_id=context.user_id,
            session_id=context.session_id,
            filename=filename,
            version=version,
        )
        if described is not None:
            fields = _resource(filename, described, versioned=True).model_dump(exclude_none=True)
            links.append(types.ResourceLink(**fields))
    return links


def _resource(filename: str, described: ArtifactVersion, *, versioned: bool) -> types.Resource:
    meta: dict[str, Any] = {"version": described.version}
    if described.custom_metadata:
        meta["customMetadata"] = described.custom_metadata
    return types.Resource(
        uri=artifact_uri(filename, described.version if versioned else None),
        name=filename,
        mime_type=described.mime_type,
        size=described.size,
        _meta=meta,
    )


def _contents(
    uri: str, value: object, mime_type: str | None
) -> types.TextResourceContents | types.BlobResourceContents:
    """Text for text and JSON, a base64 blob for bytes and media (an in-memory value of another kind: as JSON)."""
    if isinstance(value, Media):
        value, mime_type = value.data, value.mime_type
    if isinstance(value, bytes | bytearray):
        if mime_type is not None and _is_text(mime_type):
            try:
                return types.TextResourceContents(uri=uri, mime_type=mime_type, text=bytes(value).decode())
            except UnicodeDecodeError:
                pass
        blob = base64.b64encode(bytes(value)).decode()
        return types.BlobResourceContents(uri=uri, mime_type=mime_type or "application/octet-stream", blob=blob)
    if isinstance(value, str):
        return types.TextResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=value)
    text = json.dumps(value, default=str)
    return types.TextResourceContents(uri=uri, mime_type=mime_type or "application/json", text=text)


def _is_text(mime_type: str) -> bool:
    return mime_type.startswith("text/") or mime_type in _TEXT_TYPES or mime_type.endswith(("+json", "+xml"))
