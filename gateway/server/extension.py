"""The seam through which another room adds to a `ToolServer` (the hub plugs upstream forwarding in here).

A `ToolServer` serves local tools and knows nothing of what plugs in. An extension may add SDK request handlers
(resources, prompts, completion, ...), run the calls of the tools it owns its own way, hear of each request's
session and of the sessions that ended, and report its health. The server enters it as an async context for as
long as it serves, after its toolsets (so it leaves first).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Self

from mcp import types
from mcp.server.context import ServerRequestContext

from gateway.server.catalog import CatalogEntry
from gateway.server.client_features import McpClientFeatures
from gateway.server.identity import CallIdentity
from gateway.server.tool_call import Invoke
from gateway.tools import BaseTool, ReadonlyContext, ToolContext
from gateway.tools.tool_union import ToolUnion

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from gateway.server.http.lane import LaneSeam

__all__ = ["ContextOf", "Pager", "PendingCall", "RawInvoke", "RelayedTool", "ServerExtension", "ServerHooks"]

ContextOf = Callable[[ServerRequestContext[Any, Any]], Awaitable[ReadonlyContext]]
"""The caller of a request as a `ReadonlyContext` (its scoped state loaded)."""
Pager = Callable[[list[Any], types.PaginatedRequestParams | None, str], tuple[list[Any], str | None]]
"""One page of a merged listing, by the request's cursor (`method` names the listing in errors)."""
RawInvoke = Callable[[dict[str, Any], ToolContext], Awaitable[dict[str, Any]]]
"""Run a call (its arguments, its `ToolContext`) and give the `CallToolResult` in its wire form, as the JSON object
the client receives (the fast lane, `gateway.hub.forwarding.fast_lane`)."""


@dataclass(frozen=True)
class ServerHooks:
    """What a server lends its extension's handlers."""

    context: ContextOf
    page: Pager


@dataclass(frozen=True)
class PendingCall:
    """A `tools/call` the server resolved (tool found, arguments checked) and is about to run."""

    ctx: ServerRequestContext[Any, Any]
    entry: CatalogEntry
    arguments: dict[str, Any]
    owner: str
    """The calling session (`principal/session key`)."""
    identity: CallIdentity
    """The caller: principal and session key (`owner` is made of them)."""
    features: McpClientFeatures
    run: Callable[[Invoke | None], Awaitable[types.CallToolResult]]
    """Run the call the server's way (a `ToolContext`, confirmation, state), the tool run by the `Invoke` given
    (None: `run_async`, its response made a `CallToolResult` by the adapters)."""


@dataclass(frozen=True)
class RelayedTool:
    """How the fast lane runs a call of one of the extension's tools (`ServerExtension.relayed_call`)."""

    invoke: RawInvoke
    client_can: Callable[[types.ClientCapabilities], bool]
    """Whether the calling session's client declared a capability (for what the upstream asks mid-call)."""


class ServerExtension(Protocol):
    """What plugs into a `ToolServer`."""

    def owns(self, source: ToolUnion) -> bool:
        """Whether `source` is served through this extension (it announces its own list changes)."""
        ...

    def describe(self, tool: BaseTool) -> types.Tool | None:
        """The MCP description of one of the extension's tools (None: the server describes it from its declaration)."""
        ...

    def handlers(self, hooks: ServerHooks) -> dict[str, Any]:
        """Extra `on_*` handlers for the SDK's low-level `Server` (keyword arguments)."""
        ...

    def track(self, ctx: ServerRequestContext[Any, Any], owner: str) -> None:
        """A request of session `owner` arrived."""
        ...

    async def call_tool(self, call: PendingCall) -> types.CallToolResult | types.InputRequiredResult | None:
        """Run `call` if it is the extension's to run; None lets the server run it."""
        ...

    def relays_for(self, owner: str) -> bool:
        """Whether calls of session `owner` may take the fast lane at all (asked before the tool is looked up, which
        may open an upstream session for `owner`)."""
        ...

    def relayed_call(self, entry: CatalogEntry, owner: str) -> RelayedTool | None:
        """How to run a call of `entry` for session `owner` on the fast lane, relayed as JSON-RPC; None when the call
        needs the general path (the extension does not own the tool, or something must be applied to it)."""
        ...

    def lane(self, seam: LaneSeam) -> ASGIApp:
        """The lane in front of the HTTP front's streamable HTTP app (`gateway.server.http.lane`), built from what the
        seam lends: it answers what it relays and hands everything else to `seam.app`."""
        ...

    def session_ended(self, owner: str) -> None:
        """Session `owner` ended."""
        ...

    def status(self) -> dict[str, dict[str, Any]]:
        """Health reports by name (`/healthz` shows them under `upstreams`)."""
        ...

    def held_call_count(self) -> int:
        """How many calls are held open now, waiting for a modern client's next round."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, *exc_info: object) -> None: ...
