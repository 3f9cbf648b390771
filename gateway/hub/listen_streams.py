"""`ListenStreams`: the gateway's `subscriptions/listen` (2026-07-28), fed by what its upstreams announce.

A modern client hears of changes only on a stream it opened with `subscriptions/listen`: the acknowledgement comes
first, every frame carries the request's id under `_meta["io.modelcontextprotocol/subscriptionId"]`, and only the
kinds of change the client asked for are sent. The upstreams' change notifications (tool, prompt and resource lists
changed, a resource updated under its gateway URI) reach the streams through `DownstreamRelay`: those of a shared
upstream session go to every stream, those of an isolated one only to the streams of the session it serves.

Each stream buffers a bounded number of events; a stream whose client stopped reading is ended at the cap (the
client listens again and lists again, as the spec expects of a dropped stream). The number of open streams is
bounded in all, and per client (its principal, or its address when anonymous: `client_share_key`), so that one
client cannot take every stream: one more is refused with -32600 naming the limit (`maxListenStreamsPerClient`).
Closing the hub ends every stream with its final `SubscriptionsListenResult`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.streams.memory
from mcp import MCPError, types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ServerEvent, event_matches, event_to_notification
from starlette.requests import Request

from gateway.server.identity import client_share_key, identify

__all__ = ["MAX_BUFFERED_EVENTS", "MAX_LISTEN_STREAMS", "MAX_LISTEN_STREAMS_PER_CLIENT", "ListenStreams"]

logger = logging.getLogger(__name__)

MAX_LISTEN_STREAMS: Final = 1024
"""Open `subscriptions/listen` streams at most; more are refused before their acknowledgement."""
MAX_LISTEN_STREAMS_PER_CLIENT: Final = 32
"""Open listen streams of one principal (one address, for anonymous clients) at most, by default."""
MAX_BUFFERED_EVENTS: Final = 256
"""Undelivered events per stream at most; a stream that falls this far behind is ended."""


@dataclass(eq=False)
class _Stream:
    owner: str
    client: str
    honored: types.SubscriptionFilter
    uris: frozenset[str]
    send: anyio.streams.memory.MemoryObjectSendStream[ServerEvent]


class ListenStreams:
    """The open listen streams of this gateway's modern clients (the `on_subscriptions_listen` handler)."""

    def __init__(
        self,
        *,
        max_streams: int = MAX_LISTEN_STREAMS,
        max_per_client: int = MAX_LISTEN_STREAMS_PER_CLIENT,
        max_buffered: int = MAX_BUFFERED_EVENTS,
    ) -> None:
        self._max_streams = max_streams
        self._max_per_client = max_per_client
        self._max_buffered = max_buffered
        self._streams: set[_Stream] = set()

    def __len__(self) -> int:
        return len(self._streams)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """Serve one stream: acknowledge the honoured filter, then send matching events until the client leaves."""
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(code=types.INVALID_REQUEST, message="subscriptions/listen needs a request id.")
        if len(self._streams) >= self._max_streams:
            # A limit reached is the request's fault in the same way as the per-client share: -32600 with the
            # limit named, never an internal error.
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"This gateway has {self._max_streams} listen streams open already; try again later.",
                data={"maxListenStreams": self._max_streams},
            )
        request: object = ctx.request
        client = client_share_key(request.client.host if isinstance(request, Request) and request.client else None)
        if sum(1 for stream in self._streams if stream.client == client) >= self._max_per_client:
            raise self._over_share(client)
        requested = params.notifications
        honored = types.SubscriptionFilter(
            tools_list_changed=True if requested.tools_list_changed else None,
            prompts_list_changed=True if requested.prompts_list_changed else None,
            resources_list_changed=True if requested.resources_list_changed else None,
            resource_subscriptions=list(requested.resource_subscriptions) if requested.resource_subscriptions else None,
        )
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        send, receive = anyio.create_memory_object_stream[ServerEvent](self._max_buffered)
        # Registered before the acknowledgement, so an event arriving meanwhile is buffered, not lost; it is still
        # sent after the acknowledgement, since only this task writes to the stream.
        uris = frozenset(honored.resource_subscriptions or ())
        stream = _Stream(identify(ctx).session_owner, client, honored, uris, send)
        self._streams.add(stream)
        try:
            acknowledged = types.SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
            await ctx.session.send_notification(
                types.SubscriptionsAcknowledgedNotification(params=acknowledged), related_request_id=subscription_id
            )
            async for event in receive:
                await ctx.session.send_notification(
                    event_to_notification(event, meta), related_request_id=subscription_id
                )
        finally:
            self._streams.discard(stream)
            send.close()
            receive.close()
        return types.SubscriptionsListenResult(_meta=meta)

    def _over_share(self, client: str) -> MCPError:
        limit = self._max_per_client
        per = "principal" if get_access_token() is not None else "client address"
        logger.warning("Refused a listen stream of %s: %d open already (the limit per client)", client, limit)
        return MCPError(
            code=types.INVALID_REQUEST,
            message=(
                f"This client has {limit} listen streams open already, the limit per {per}: close one it no longer "
                "needs (one stream can ask for every kind of change) and listen again; an operator can raise the "
                "limit (maxListenStreamsPerClient in the config)."
            ),
            data={"maxListenStreamsPerClient": limit},
        )

    def publish(self, event: ServerEvent, owner: str | None) -> None:
        """Hand `event` to the streams that asked for its kind: those of session `owner`, or all (None)."""
        for stream in list(self._streams):
            if owner is not None and stream.owner != owner:
                continue
            if not event_matches(stream.honored, stream.uris, event):
                continue
            try:
                stream.send.send_nowait(event)
            except anyio.WouldBlock:
                logger.warning(
                    "A listen stream of %s fell %d events behind; ending it.", stream.owner, self._max_buffered
                )
                self._streams.discard(stream)
                stream.send.close()
            except anyio.ClosedResourceError:
                self._streams.discard(stream)

    def close(self) -> None:
        """End every stream (each sends its final result after the events already buffered)."""
        for stream in list(self._streams):
            stream.send.close()
        self._streams.clear()
