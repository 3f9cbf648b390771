"""`HttpChannel`: the HTTP side of one handshake-era streamable HTTP upstream session, lent to the hub.

The session's own `httpx2` client (its connection pool, headers and auth), its endpoint and the `Mcp-Session-Id`
the upstream assigned, with what answers the upstream's messages (`IncomingHandlers`, the session's callbacks).
The hub POSTs a forwarded call on it itself (`gateway.hub.forwarding.direct_post`); the client only keeps it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

import anyio.abc
import httpx2
from mcp import types

__all__ = ["HttpChannel", "IncomingHandlers"]

_SESSION_HEADER: Final = "mcp-session-id"


@dataclass(frozen=True)
class IncomingHandlers:
    """What answers the upstream's messages on a call's stream: the SDK client callbacks of the session (None: the
    SDK's default answer) and its message handler (for notifications other than progress and cancellation)."""

    elicitation: Any | None
    sampling: Any | None
    list_roots: Any | None
    logging: Any | None
    message: Callable[[types.ServerNotification], Awaitable[None]]


@dataclass(eq=False)
class HttpChannel:
    """The HTTP side of one handshake-era upstream session: its client, endpoint and `Mcp-Session-Id`.

    Args:
        client: the session's `httpx2` client (the SDK transport's, so connections, headers and auth are shared).
        url: the MCP endpoint.
    """

    client: httpx2.AsyncClient
    url: str
    session_id: str | None = None
    closer: anyio.abc.TaskGroup | None = None
    """Where responses are closed after their call returned (the session owner's task group)."""

    def observe(self, response: httpx2.Response) -> None:
        """Take the session id from the first successful response that assigns one (the answer to `initialize`)."""
        if self.session_id is None and response.is_success:
            self.session_id = response.headers.get(_SESSION_HEADER)
