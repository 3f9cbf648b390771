"""`ArtifactListen`: `subscriptions/listen` (2026-07-28) for a server whose extension serves none.

A modern client hears that a session's resources changed (a tool saved an artifact) only on a listen stream. When
the gateway has upstreams, the hub's listen streams carry these events too (`EventPublisher`); otherwise this small
handler serves the streams: it acknowledges the kinds of change it can send (resource list changes), then sends
each one of the stream's principal until the client leaves: a modern client's listen request names no session
(`mcp.Client.listen` sends no `_meta` session key), so every stream of the principal hears it. The event is a hint
that carries nothing of the files ("list again"); what a list shows is still the listing session's alone.
Streams are bounded in all and per session, and each buffers a bounded number of events (a stream that falls
behind is ended; the client listens and lists again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.streams.memory
from mcp import MCPError, types
from mcp.server.context import ServerRequestContext
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ServerEvent, event_matches, event_to_notification

from gateway.server.identity import identify

__all__ = ["ArtifactListen"]

logger = logging.getLogger(__name__)

_MAX_STREAMS: Final = 1024
_MAX_PER_SESSION: Final = 8
_MAX_BUFFERED: Final = 64


@dataclass(eq=False)
class _Stream:
    owner: str
    principal: str
    honored: types.SubscriptionFilter
    send: anyio.streams.memory.MemoryObjectSendStream[ServerEvent]


class ArtifactListen:
    """The listen streams of a server without an extension's (see the module docstring)."""

    def __init__(self) -> None:
        self._streams: set[_Stream] = set()

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """Serve one stream: acknowledge what is honoured, then send the session's events until the client leaves."""
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(code=types.INVALID_REQUEST, message="subscriptions/listen needs a request id.")
        caller = identify(ctx)
        owner = caller.session_owner
        if len(self._streams) >= _MAX_STREAMS or sum(s.owner == owner for s in self._streams) >= _MAX_PER_SESSION:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message="Too many listen streams are open: close one (one stream can ask for every kind) and retry.",
            )
        honored = types.SubscriptionFilter(
            resources_list_changed=True if params.notifications.resources_list_changed else None
        )
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        send, receive = anyio.create_memory_object_stream[ServerEvent](_MAX_BUFFERED)
        stream = _Stream(owner, caller.principal, honored, send)
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

    def publish(self, event: ServerEvent, owner: str | None) -> None:
        """Hand `event` to the streams of session `owner` (all, for None) that asked for its kind."""
        self._publish(event, lambda stream: owner is None or stream.owner == owner)

    def publish_to_principal(self, event: ServerEvent, principal: str) -> None:
        """Hand `event` to every stream of `principal` that asked for its kind."""
        self._publish(event, lambda stream: stream.principal == principal)

    def _publish(self, event: ServerEvent, chosen: Callable[[_Stream], bool]) -> None:
        for stream in list(self._streams):
            if not chosen(stream):
                continue
            if not event_matches(stream.honored, frozenset(), event):
                continue
            try:
                stream.send.send_nowait(event)
            except anyio.WouldBlock:
                logger.warning("A listen stream of %s fell %d events behind; ending it.", stream.owner, _MAX_BUFFERED)
                self._streams.discard(stream)
                stream.send.close()
            except anyio.ClosedResourceError:
                self._streams.discard(stream)
