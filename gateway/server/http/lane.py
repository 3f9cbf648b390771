"""The seam in front of the SDK's streamable HTTP app: what the HTTP front lends a lane that answers some POSTs itself.

The server builds no lane of its own. Whoever builds the gateway supplies one (`create_app(..., lane=...)`, or its
extension's `ServerExtension.lane`); the HTTP front hands it only what this seam names: the SDK's app that gets
everything else, the request's JSON-RPC message as the front parsed it, the book of sessions, the host check, how
often the SDK must see a session, and the server as `PlainPath`, whose `relayed_call` and `relayed_listing` ask the
one question of the plain path (`gateway.server.extension.CallPipeline`) before anything is relayed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from mcp import types
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.types import ASGIApp, Scope

from gateway.server.catalog import CatalogEntry
from gateway.server.http.sessions import HttpSessions
from gateway.server.identity import CallIdentity
from gateway.server.observe.observation import RequestObservation
from gateway.tools import ToolContext

__all__ = ["Lane", "LaneSeam", "PlainPath", "RawInvoke", "RelayedTool"]

RawInvoke = Callable[[dict[str, Any], ToolContext], Awaitable[dict[str, Any]]]
"""Run a call (its arguments, its `ToolContext`) and give the `CallToolResult` in its wire form, as the JSON object
the client receives (the fast lane, `gateway.hub.forwarding.fast_lane`)."""


@dataclass(frozen=True)
class RelayedTool:
    """How a lane runs a call of one of the extension's tools (`ServerExtension.relayed_call`)."""

    invoke: RawInvoke
    client_can: Callable[[types.ClientCapabilities], bool]
    """Whether the calling session's client declared a capability (for what the upstream asks mid-call)."""


class PlainPath(Protocol):
    """What a lane may ask of the server it answers for, and nothing else."""

    @property
    def name(self) -> str: ...

    @property
    def observation(self) -> RequestObservation:
        """Where the lane reports what it answered (`RequestObservation.relayed`)."""
        ...

    @property
    def refusing_calls(self) -> bool: ...

    @property
    def stop_reason(self) -> str | None: ...

    def running_call(
        self, scope: anyio.CancelScope | None = None
    ) -> contextlib.AbstractContextManager[anyio.CancelScope]: ...

    async def relayed_call(
        self, name: str, identity: CallIdentity, *, declared: dict[str, Any] | None = None
    ) -> tuple[CatalogEntry, RelayedTool, types.LoggingLevel | None] | None:
        """A call that may take the plain path: its tool, how the extension relays it, the session's log level.
        `declared`: a modern (2026-07-28) caller's capabilities, as its request's `_meta` declared them."""
        ...

    def call_session(self, identity: CallIdentity) -> contextlib.AbstractAsyncContextManager[None]:
        """While inside, an anonymous call's own session (`identity.call_scoped`) lives; it ends on leaving, what
        it holds upstream released (the general path's `end_call_sessions`). Other sessions are not touched."""
        ...

    async def modern_answer(
        self, version: str, name: str, arguments: dict[str, Any], result: dict[str, Any]
    ) -> dict[str, Any]:
        """A modern `tools/call` result as the SDK's path answers it: shaped for `version`, `serverInfo` stamped,
        an `input_required` one's `requestState` sealed for its next round (which takes the general path)."""
        ...

    async def relayed_listing(self, identity: CallIdentity, version: str, cursor: str | None) -> bytes | None:
        """A `tools/list` page that may take the plain path: its JSON, cached from an earlier answer."""
        ...


@dataclass(frozen=True)
class LaneSeam:
    """What the HTTP front lends a lane."""

    app: ASGIApp
    """The SDK's streamable HTTP app: everything the lane does not answer goes here."""
    server: PlainPath
    """The server the lane answers for, as far as a lane may see it."""
    message: Callable[[Scope], dict[str, Any] | None]
    """The POST's JSON-RPC message as the front parsed it (None: not one message)."""
    sessions: HttpSessions
    """The book of open sessions (who opened each, when the SDK last served it)."""
    host_check: TransportSecurityMiddleware
    """The DNS-rebinding protection the SDK's transport applies."""
    sdk_refresh: float | None
    """Seconds after which a session's next request goes to the SDK again, so that the SDK's idle timeout, which only
    its own requests reset, does not end a session that is in use."""


Lane = Callable[[LaneSeam], ASGIApp]
"""Builds the ASGI app in front of the SDK's streamable HTTP app (`/mcp`) from what the seam lends."""
