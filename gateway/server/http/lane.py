"""The seam in front of the SDK's streamable HTTP app: what the HTTP front lends a lane that answers some POSTs itself.

The server builds no lane of its own. Whoever builds the gateway supplies one (`create_app(..., lane=...)`, or its
extension's `ServerExtension.lane`); the HTTP front hands it only what this seam names — the SDK's app that gets
everything else, the book of sessions, the host check and how often the SDK must see a session — and the server's
answer to one question per call (`PlainPath`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.types import ASGIApp

from gateway.server.http.sessions import HttpSessions

if TYPE_CHECKING:
    from gateway.server.tool_server import ToolServer

__all__ = ["Lane", "LaneSeam"]


@dataclass(frozen=True)
class LaneSeam:
    """What the HTTP front lends a lane."""

    app: ASGIApp
    """The SDK's streamable HTTP app: everything the lane does not answer goes here."""
    server: ToolServer
    """The server the lane answers for."""
    sessions: HttpSessions
    """The book of open sessions (who opened each, when the SDK last served it)."""
    host_check: TransportSecurityMiddleware
    """The DNS-rebinding protection the SDK's transport applies."""
    sdk_refresh: float | None
    """Seconds after which a session's next request goes to the SDK again, so that the SDK's idle timeout, which only
    its own requests reset, does not end a session that is in use."""


Lane = Callable[[LaneSeam], ASGIApp]
"""Builds the ASGI app in front of the SDK's streamable HTTP app (`/mcp`) from what the seam lends."""
