"""`ListenStreamSet`: the bookkeeping every `subscriptions/listen` (2026-07-28) handler of the gateway shares.

A stream is registered before its acknowledgement, so an event arriving meanwhile is buffered, not lost; then every
buffered event is sent as a notification that carries the request's id under
`_meta["io.modelcontextprotocol/subscriptionId"]`, until the client leaves. Each stream buffers a bounded number of
events: one whose client stopped reading is ended at the cap (the client listens and lists again, as the spec
expects of a dropped stream). What a handler honours and how many streams it lets a client open are its own
(`ArtifactListen`, the hub's `ListenStreams`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.streams.memory
from mcp import MCPError, types
from mcp.server.context import ServerRequestContext
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ServerEvent, event_matches, event_to_notification

__all__ = ["ListenStream", "ListenStreamSet"]

logger = logging.getLogger(__name__)


@dataclass(eq=False)
class ListenStream:
    """One open listen stream: whose session it serves, which client holds it, and what it asked for."""

    owner: str
    holder: str
    honored: types.SubscriptionFilter
    uris: frozenset[str]
    send: anyio.streams.memory.MemoryObjectSendStream[ServerEvent]


class ListenStreamSet:
    """The open listen streams of one handler: serving one, handing events to the chosen ones, ending them all."""

    def __init__(self, *, max_buffered: int) -> None:
        self._max_buffered = max_buffered
        self._streams: set[ListenStream] = set()

    def __len__(self) -> int:
        return len(self._streams)

    def count(self, chosen: Callable[[ListenStream], bool]) -> int:
        """How many of the open streams are `chosen` (a limit's share)."""
        return sum(1 for stream in self._streams if chosen(stream))

    @staticmethod
    def subscription_id(ctx: ServerRequestContext[Any, Any]) -> types.RequestId:
        """The listen request's id, which names its stream; a request without one is refused."""
        if ctx.request_id is None:
            raise MCPError(code=types.INVALID_REQUEST, message="subscriptions/listen needs a request id.")
        return ctx.request_id

    async def serve(
        self,
        ctx: ServerRequestContext[Any, Any],
        subscription_id: types.RequestId,
        *,
        owner: str,
        holder: str,
        honored: types.SubscriptionFilter,
    ) -> types.SubscriptionsListenResult:
        """Acknowledge `honored`, then send the stream's events until the client leaves; return the final result."""
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        send, receive = anyio.create_memory_object_stream[ServerEvent](self._max_buffered)
        # Registered before the acknowledgement, so an event arriving meanwhile is buffered, not lost; it is still
        # sent after the acknowledgement, since only this task writes to the stream.
        stream = ListenStream(owner, holder, honored, frozenset(honored.resource_subscriptions or ()), send)
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

    def publish_where(self, event: ServerEvent, chosen: Callable[[ListenStream], bool]) -> None:
        """Hand `event` to the `chosen` streams that asked for its kind, ending any that fell too far behind."""
        for stream in list(self._streams):
            if not chosen(stream) or not event_matches(stream.honored, stream.uris, event):
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
