"""What upstreams say outside a call, relayed to the downstream clients (`gateway.client.forwarding.Downstream`).

An upstream's change notifications and its `roots/list` requests arrive on an upstream session; an isolated
upstream session belongs to one downstream session, a shared one to all of them. Handshake-era downstream sessions
have a channel outside their own requests, so they are remembered (the newest first to stay) and reached on it; a
modern-era (2026-07-28) client hears of changes on the `subscriptions/listen` streams it opened (`ListenStreams`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict, defaultdict
from typing import Any

from mcp import MCPError, types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.subscriptions import event_from_wire
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.hub.listen_streams import ListenStreams
from gateway.hub.passthrough import Passthrough
from gateway.server.client_features import deprecated_in_2026
from gateway.server.session_records import MAX_TRACKED_SESSIONS
from gateway.tools import BaseToolset, ReadonlyContext

__all__ = ["DownstreamRelay"]

logger = logging.getLogger(__name__)


class DownstreamRelay:
    """The handshake-era downstream sessions by owner (`principal/session key`), and who subscribed to what."""

    def __init__(self, passthrough: Passthrough, listen_streams: ListenStreams) -> None:
        self._passthrough = passthrough
        self._listen_streams = listen_streams
        self._sessions: OrderedDict[str, ServerSession] = OrderedDict()
        self._subscribers: defaultdict[str, set[str]] = defaultdict(set)

    def track(self, ctx: ServerRequestContext[Any, Any], owner: str) -> None:
        """Remember the channel of a request's session (modern requests have none outside their own stream)."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        self._sessions[owner] = ctx.session
        self._sessions.move_to_end(owner)
        if len(self._sessions) > MAX_TRACKED_SESSIONS:
            self._sessions.popitem(last=False)

    def session_of(self, owner: str) -> ServerSession | None:
        """The channel of handshake-era session `owner`, if one of its requests was tracked."""
        return self._sessions.get(owner)

    def forget(self, owner: str) -> None:
        """A downstream session ended."""
        self._sessions.pop(owner, None)
        for owners in self._subscribers.values():
            owners.discard(owner)

    def subscribed(self, uri: str, owner: str, *, subscribed: bool) -> None:
        """A downstream session subscribed to (or unsubscribed from) a resource, by its gateway URI."""
        if subscribed:
            self._subscribers[uri].add(owner)
            return
        owners = self._subscribers.get(uri)
        if owners is not None:
            owners.discard(owner)
            if not owners:
                del self._subscribers[uri]

    async def notify(
        self, source: BaseToolset, notification: types.ServerNotification, context: ReadonlyContext | None
    ) -> None:
        """Relay an upstream's change notification to the handshake-era sessions it concerns.

        An isolated upstream session's notifications go to the downstream session it belongs to, a shared one's
        to every session; a resource update only to sessions subscribed to that resource (under its gateway URI).
        """
        owner = f"{context.user_id}/{context.session_id}" if context is not None else None
        owners = [owner] if owner is not None else list(self._sessions)
        if isinstance(notification, types.ResourceUpdatedNotification):
            uri = self._passthrough.downstream_uri(source, str(notification.params.uri))
            subscribed = self._subscribers.get(uri, set[str]())
            owners = [owner for owner in owners if owner in subscribed]
            notification = types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(uri=uri))
        wire = notification.model_dump(by_alias=True, mode="json", exclude_none=True)
        event = event_from_wire(notification.method, wire.get("params"))
        if event is not None:
            self._listen_streams.publish(event, owner)
        for owner in owners:
            session = self._sessions.get(owner)
            if session is None:
                continue
            try:
                await session.send_notification(notification)
            except Exception as exc:  # noqa: BLE001 - a session that went away misses a notification, nothing more
                logger.debug("Could not relay %s to session %s: %s", notification.method, owner, exc)

    async def broadcast(self, notifications: list[types.ServerNotification]) -> int:
        """Send `notifications` to every remembered session and every open `subscriptions/listen` stream.

        Returns how many handshake-era sessions were reached.
        """
        for notification in notifications:
            wire = notification.model_dump(by_alias=True, mode="json", exclude_none=True)
            event = event_from_wire(notification.method, wire.get("params"))
            if event is not None:
                self._listen_streams.publish(event, None)
        reached = 0
        for owner, session in list(self._sessions.items()):
            try:
                for notification in notifications:
                    await session.send_notification(notification)
            except Exception as exc:  # noqa: BLE001 - a session that went away misses a notification, nothing more
                logger.debug("Could not tell session %s that lists changed: %s", owner, exc)
            else:
                reached += 1
        return reached

    async def list_roots(self, context: ReadonlyContext | None) -> types.ListRootsResult:
        """Ask the downstream client of `context` for its roots (for an upstream's `roots/list`).

        Raises:
            MCPError: there is no such client to ask, or it has no roots.
        """
        if context is None:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message="This upstream session is shared by every client of the gateway, so whose roots to give "
                "is ambiguous outside a tool call (set its session policy to isolated).",
            )
        session = self._sessions.get(f"{context.user_id}/{context.session_id}")
        if session is None:
            raise MCPError(
                code=types.INVALID_REQUEST,
                message="The gateway's client cannot be asked for roots now (its session ended, or it speaks MCP "
                "2026-07-28, where a server cannot ask outside a tool call).",
            )
        if not session.check_client_capability(types.ClientCapabilities(roots=types.RootsCapability())):
            raise MCPError(code=types.INVALID_REQUEST, message="The gateway's client does not offer roots.")
        with deprecated_in_2026():
            asking = session.list_roots()  # pyright: ignore[reportDeprecated]
        try:
            return await asking
        except MCPError:
            raise
        except Exception as exc:
            raise MCPError(code=types.INVALID_REQUEST, message=f"The gateway's client cannot answer: {exc}") from exc
