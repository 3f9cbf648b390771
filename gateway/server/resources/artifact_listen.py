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

from typing import Any, Final

from mcp import MCPError, types
from mcp.server.context import ServerRequestContext
from mcp.shared.subscriptions import ServerEvent

from gateway.server.identity import identify
from gateway.server.resources.listen_stream_set import ListenStreamSet

__all__ = ["ArtifactListen"]

_MAX_STREAMS: Final = 1024
_MAX_PER_SESSION: Final = 8
_MAX_BUFFERED: Final = 64


class ArtifactListen(ListenStreamSet):
    """The listen streams of a server without an extension's (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(max_buffered=_MAX_BUFFERED)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """Serve one stream: acknowledge what is honoured, then send the session's events until the client leaves."""
        subscription_id = self.subscription_id(ctx)
        caller = identify(ctx)
        owner = caller.session_owner
        if len(self) >= _MAX_STREAMS or self.count(lambda stream: stream.owner == owner) >= _MAX_PER_SESSION:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message="Too many listen streams are open: close one (one stream can ask for every kind) and retry.",
            )
        honored = types.SubscriptionFilter(
            resources_list_changed=True if params.notifications.resources_list_changed else None
        )
        return await self.serve(ctx, subscription_id, owner=owner, holder=caller.principal, honored=honored)

    def publish(self, event: ServerEvent, owner: str | None) -> None:
        """Hand `event` to the streams of session `owner` (all, for None) that asked for its kind."""
        self.publish_where(event, lambda stream: owner is None or stream.owner == owner)

    def publish_to_principal(self, event: ServerEvent, principal: str) -> None:
        """Hand `event` to every stream of `principal` that asked for its kind."""
        self.publish_where(event, lambda stream: stream.holder == principal)
