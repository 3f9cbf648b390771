"""The seams through which another room adds to a `ToolServer` (the hub plugs upstream forwarding in here).

A `ToolServer` serves local tools and knows nothing of what plugs in. An extension may add SDK request handlers
(resources, prompts, completion, ...), run the calls of the tools it owns its own way, hear of each request's
session and of the sessions that ended, offer a lane in front of the HTTP front, and report its health. The server
enters it as an async context for as long as it serves, after its toolsets (so it leaves first).

The plain path: the server answers a `tools/call` or `tools/list` through a pipeline, the SDK server's middleware
(its OpenTelemetry span, the request observation, the request-state boundary, tool search, the policy guard, the
cached pages) and the stages of the `tools/call` handler (list changes after a call, the extension, the users'
credentials). A lane (the hub's fast lane) answers some requests below all of it, and may only when nothing in the
pipeline has anything to do for the request. So every layer answers for itself: it is added through `CallPipeline`
as a `Guard` (or with one that speaks for it), whose `applies_to` says whether the request needs it, and
`CallPipeline.plain` is the one question, "may this request take the plain path?", true only when no guard applies.
A layer that forgets cannot be added (`applies_to` is required of a `Guard`), and one appended to the SDK server's
middleware behind the pipeline's back has no guard, so it is taken to apply to everything: the plain path closes
while it is there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, Self

from mcp import types
from mcp.server.context import ServerMiddleware, ServerRequestContext
from opentelemetry import trace

from gateway.server.catalog import CatalogEntry
from gateway.server.http.lane import LaneSeam, RawInvoke, RelayedTool
from gateway.server.identity import CallIdentity
from gateway.server.tool_call import Invoke, ResolvedCall
from gateway.tools import BaseTool, ReadonlyContext
from gateway.tools.tool_union import ToolUnion

if TYPE_CHECKING:
    from starlette.types import ASGIApp

__all__ = [
    "CALLS",
    "NEVER",
    "TRACED",
    "CallPipeline",
    "ContextOf",
    "Guard",
    "GuardLayer",
    "Pager",
    "PendingCall",
    "PlainRequest",
    "RawInvoke",
    "RelayedTool",
    "ServerExtension",
    "ServerHooks",
    "When",
]

ContextOf = Callable[[ServerRequestContext[Any, Any]], Awaitable[ReadonlyContext]]
"""The caller of a request as a `ReadonlyContext` (its scoped state loaded)."""
Pager = Callable[[list[Any], types.PaginatedRequestParams | None, str], tuple[list[Any], str | None]]
"""One page of a merged listing, by the request's cursor (`method` names the listing in errors)."""


@dataclass(frozen=True)
class ServerHooks:
    """What a server lends its extension's handlers."""

    context: ContextOf
    page: Pager


@dataclass(frozen=True)
class PendingCall(ResolvedCall):
    """A `tools/call` the server resolved (tool found, arguments checked) and is about to run."""

    run: Callable[[Invoke | None], Awaitable[types.CallToolResult]]
    """Run the call the server's way (a `ToolContext`, confirmation, state), the tool run by the `Invoke` given
    (None: `run_async`, its response made a `CallToolResult` by the adapters)."""

    @property
    def owner(self) -> str:
        """The calling session (`principal/session key`)."""
        return self.identity.session_owner


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

    async def call_tool(
        self, call: PendingCall
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any] | None:
        """Run `call` if it is the extension's to run (a dict: the `CreateTaskResult` of a task it hands out, wire
        form); None lets the server run it."""
        ...

    def applies_to(self, request: PlainRequest) -> bool:
        """Whether the extension has something to do for `request` beyond relaying it, so that it must take the
        general path (the extension is a stage of the server's pipeline, `CallPipeline`). Asked first
        without the tool (whose lookup may open an upstream session for the caller), then with it."""
        ...

    def relayed_call(
        self, entry: CatalogEntry, owner: str, declared: dict[str, Any] | None = None
    ) -> RelayedTool | None:
        """How to run a call of `entry` for session `owner` on the plain path, relayed as JSON-RPC (asked once the
        server's pipeline let it take that path); None when the extension does not relay the tool. `declared`: a
        modern (2026-07-28) caller's capabilities as its request declared them (None: a handshake-era session)."""
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


@dataclass(frozen=True)
class PlainRequest:
    """A request a lane would answer on the plain path, as the guards are asked about it."""

    method: Literal["tools/call", "tools/list"]
    identity: CallIdentity
    """The caller: principal and session key."""
    modern: bool = False
    """Whether the request speaks the modern (2026-07-28) era."""
    declared: dict[str, Any] | None = None
    """The capabilities a modern request declared in its `_meta` (wire form)."""
    entry: CatalogEntry | None = None
    """The tool a `tools/call` names, once found (None before the lookup, and for `tools/list`): a guard that
    decides by the tool answers again with it."""


class Guard(Protocol):
    """A layer of the server's pipeline, or what speaks for one, on the plain path."""

    def applies_to(self, request: PlainRequest) -> bool:
        """Whether this layer has something to do for `request` (then it takes the general path)."""
        ...


class GuardLayer(ServerMiddleware[Any], Guard, Protocol):
    """SDK server middleware that is its own guard."""


@dataclass(frozen=True)
class When:
    """A guard that applies when `test` says so."""

    test: Callable[[PlainRequest], bool]

    def applies_to(self, request: PlainRequest) -> bool:
        return self.test(request)


NEVER: Final = When(lambda _request: False)
"""For a layer whose work the plain path does itself (observing the request, answering from the cached pages)."""
CALLS: Final = When(lambda request: request.method == "tools/call")
"""For a stage every `tools/call` goes through (the users' credentials: a call may ask for its user's sign-in)."""
TRACED: Final = When(lambda _request: not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider))
"""For the SDK's own layers (its OpenTelemetry server span): they matter once a tracer provider is configured."""


class CallPipeline:
    """The server's pipeline as the plain path sees it: the SDK server's middleware, each layer with its guard, and
    the stages of the `tools/call` handler.

    Args:
        middleware: the SDK server's middleware list (`Server.middleware`), added to through this pipeline.
        present: the guard of the layers already in the list (the SDK's own).
    """

    def __init__(self, middleware: list[ServerMiddleware[Any]], present: Guard = TRACED) -> None:
        self._middleware = middleware
        # By identity, the layer kept beside its guard (so that its id is not reused by another while listed).
        self._guards: dict[int, tuple[object, Guard]] = {id(layer): (layer, present) for layer in middleware}
        self._stages: list[Guard] = []

    def add(self, layer: GuardLayer, *, before: object | None = None) -> None:
        """Add middleware that is its own guard: last (innermost), or just outside `before`."""
        self.add_answered(layer, layer, before=before)

    def add_answered(self, layer: ServerMiddleware[Any], guard: Guard, *, before: object | None = None) -> None:
        """Add middleware whose guard is `guard` (the SDK's middleware, a function): last, or just outside `before`."""
        if before is None:
            self._middleware.append(layer)
        else:
            self._middleware.insert(self._middleware.index(before), layer)  # pyright: ignore[reportArgumentType]
        self._guards[id(layer)] = (layer, guard)

    def remove(self, layer: ServerMiddleware[Any]) -> None:
        self._middleware.remove(layer)
        self._guards.pop(id(layer), None)

    def stage(self, *guards: Guard | None) -> None:
        """Stages of the handler (not middleware), each answered for by its guard (None: a stage not served here)."""
        self._stages.extend(guard for guard in guards if guard is not None)

    def plain(self, request: PlainRequest) -> bool:
        """Whether `request` may take the plain path: no layer of the pipeline applies to it."""
        guards = self._guards
        for layer in self._middleware:
            known = guards.get(id(layer))
            if known is None or known[0] is not layer or known[1].applies_to(request):
                return False
        return not any(stage.applies_to(request) for stage in self._stages)
