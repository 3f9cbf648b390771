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
from typing import Any, Final

from mcp import MCPError, types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import ServerRequestContext
from mcp.shared.subscriptions import ServerEvent
from starlette.requests import Request

from gateway.server.identity import client_share_key, identify
from gateway.server.resources.listen_stream_set import ListenStreamSet

__all__ = ["MAX_BUFFERED_EVENTS", "MAX_LISTEN_STREAMS", "MAX_LISTEN_STREAMS_PER_CLIENT", "ListenStreams"]

logger = logging.getLogger(__name__)

MAX_LISTEN_STREAMS: Final = 1024
"""Open `subscriptions/listen` streams at most; more are refused before their acknowledgement."""
MAX_LISTEN_STREAMS_PER_CLIENT: Final = 32
"""Open listen streams of one principal (one address, for anonymous clients) at most, by default."""
MAX_BUFFERED_EVENTS: Final = 256
"""Undelivered events per stream at most; a stream that falls this far behind is ended."""


class ListenStreams(ListenStreamSet):
    """The open listen streams of this gateway's modern clients (the `on_subscriptions_listen` handler)."""

    def __init__(
        self,
        *,
        max_streams: int = MAX_LISTEN_STREAMS,
        max_per_client: int = MAX_LISTEN_STREAMS_PER_CLIENT,
        max_buffered: int = MAX_BUFFERED_EVENTS,
    ) -> None:
        super().__init__(max_buffered=max_buffered)
        self._max_streams = max_streams
        self._max_per_client = max_per_client

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """Serve one stream: acknowledge the honoured filter, then send matching events until the client leaves."""
        subscription_id = self.subscription_id(ctx)
        if len(self) >= self._max_streams:
            # A limit reached is the request's fault in the same way as the per-client share: -32600 with the
            # limit named, never an internal error.
            raise MCPError(
                code=types.INVALID_REQUEST,
                message=f"This gateway has {self._max_streams} listen streams open already; try again later.",
                data={"maxListenStreams": self._max_streams},
            )
        request: object = ctx.request
        client = client_share_key(request.client.host if isinstance(request, Request) and request.client else None)
        if self.count(lambda stream: stream.holder == client) >= self._max_per_client:
            raise self._over_share(client)
        requested = params.notifications
        honored = types.SubscriptionFilter(
            tools_list_changed=True if requested.tools_list_changed else None,
            prompts_list_changed=True if requested.prompts_list_changed else None,
            resources_list_changed=True if requested.resources_list_changed else None,
            resource_subscriptions=list(requested.resource_subscriptions) if requested.resource_subscriptions else None,
        )
        owner = identify(ctx).session_owner
        return await self.serve(ctx, subscription_id, owner=owner, holder=client, honored=honored)

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
        self.publish_where(event, lambda stream: owner is None or stream.owner == owner)
