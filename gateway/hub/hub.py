"""`Hub`: the gateway's forwarding, plugged into a `ToolServer` through its extension seam.

The server serves the catalog (local tools and the upstreams' tools alike); the hub adds what only upstreams
need: resources, prompts, completion and roots routed to the upstream that owns them (`Passthrough`,
`UpstreamHandlers`), what upstreams say outside a call relayed to the right downstream sessions
(`DownstreamRelay`), upstream calls held open across a modern client's rounds (`HeldCalls`), and the upstreams'
health.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Sequence
from typing import Any, Self

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from starlette.types import ASGIApp

from gateway.client import McpTool, McpToolset
from gateway.client.relayed_round import RelayedRound
from gateway.errors import UpstreamUnavailableError
from gateway.hub.apps import AppCalls, namespaced_meta
from gateway.hub.era import DownstreamEras
from gateway.hub.forwarded_tasks import ForwardedTasks
from gateway.hub.forwarding.fast_lane import FastLane
from gateway.hub.forwarding.modern_lane import ModernLane
from gateway.hub.forwarding.upstream_span import upstream_span
from gateway.hub.handshakes import UpstreamHandshakes
from gateway.hub.held_calls import HeldCalls
from gateway.hub.kept_results import KeptResults, cap_result
from gateway.hub.listen_streams import MAX_LISTEN_STREAMS_PER_CLIENT, ListenStreams
from gateway.hub.passthrough import Passthrough
from gateway.hub.relay import DownstreamRelay
from gateway.hub.upstream_handlers import UpstreamHandlers
from gateway.hub.upstreams import UpstreamToolset
from gateway.server.catalog import CatalogEntry
from gateway.server.client_features import client_declares
from gateway.server.extension import NEVER, PendingCall, PlainRequest, RelayedTool, ServerHooks
from gateway.server.http.health import redact_reason
from gateway.server.http.lane import LaneSeam
from gateway.server.identity import ANONYMOUS_SESSION, CALL_SESSION_PREFIX, CallIdentity
from gateway.server.tool_call import RoundEnded, error_result
from gateway.server.tool_server import ToolServer
from gateway.tasks.wire import CreateTaskResult
from gateway.tools import BaseTool, ReadonlyContext, ToolContext
from gateway.tools.context import InputRequired
from gateway.tools.tool_union import ToolUnion

__all__ = ["Hub", "gateway_server"]

logger = logging.getLogger(__name__)


class Hub:
    """Forwarding to the upstream toolsets of one server (a `gateway.server.extension.ServerExtension`)."""

    def __init__(
        self,
        upstreams: Sequence[McpToolset],
        *,
        reloader: contextlib.AbstractAsyncContextManager[Any] | None = None,
        max_listen_streams_per_client: int = MAX_LISTEN_STREAMS_PER_CLIENT,
    ) -> None:
        self.passthrough = Passthrough(upstreams)
        self.listen_streams = ListenStreams(max_per_client=max_listen_streams_per_client)
        self.kept_results = KeptResults()
        self.relay = DownstreamRelay(self.passthrough, self.listen_streams)
        self.held_calls = HeldCalls()
        self.forwarded_tasks = ForwardedTasks(lambda: self.passthrough.upstreams)
        """The upstreams' tasks handed to this server's clients (the server's `tasks/*` for them reach it)."""
        self.eras = DownstreamEras()
        self.reloader = reloader
        """What re-reads the config while the hub serves (its upstreams may then come and go)."""
        self._serving = False
        self._exit_stack: contextlib.AsyncExitStack | None = None

    @property
    def upstreams(self) -> list[McpToolset]:
        """The upstream toolsets, in config order."""
        return self.passthrough.upstreams

    def owns(self, source: ToolUnion) -> bool:
        """Whether `source` is one of the upstream toolsets."""
        return any(source is upstream for upstream in self.passthrough.upstreams)

    def describe(self, tool: BaseTool) -> types.Tool | None:
        """An upstream tool as its upstream listed it, only its name prefixed (its schemas pass unchanged) and the
        app it names namespaced alike (`gateway.hub.apps`)."""
        if not isinstance(tool, McpTool):
            return None
        raw = tool.raw_mcp_tool
        prefix = tool.toolset.tool_name_prefix if isinstance(tool.toolset, McpToolset) else None
        return raw.model_copy(update={"name": tool.name, "meta": namespaced_meta(prefix, raw.meta)})

    def handlers(self, hooks: ServerHooks) -> dict[str, Any]:
        """Resources, prompts, completion, roots and `subscriptions/listen`, offered when there are upstreams (or a
        reload may add one)."""
        if not self.passthrough and self.reloader is None:
            return {}
        handlers = UpstreamHandlers(
            self.passthrough, self.relay, hooks.context, hooks.page, self.kept_results
        ).as_server_handlers()
        return {**handlers, "on_subscriptions_listen": self.listen_streams}

    def track(self, ctx: ServerRequestContext[Any, Any], owner: str) -> None:
        """Remember the session's era and its channel (so that upstream notifications can reach it)."""
        self.eras.seen(owner, ctx.protocol_version, ctx.session.client_capabilities)
        if self.passthrough or self.reloader is not None:
            self.relay.track(ctx, owner)

    def session_ended(self, owner: str) -> None:
        """Forget a downstream session's era, channel and subscriptions."""
        self.relay.forget(owner)
        self.eras.forget(owner)

    def status(self) -> dict[str, dict[str, Any]]:
        """Each upstream toolset's health (`connected`, `idle` or `failing` with the reason), by config key.

        A reason never shows the upstream's arguments, environment, headers, token or URL path (`redact_reason`).
        """
        reports: dict[str, dict[str, Any]] = {}
        for index, item in enumerate(self.passthrough.upstreams):
            name = getattr(item, "key", None) or f"upstream-{index}"
            report = item.status()
            if isinstance(report.get("error"), str):
                report["error"] = redact_reason(report["error"], item.connection_params)
            reports[str(name)] = report
        return reports

    def held_call_count(self) -> int:
        """How many upstream calls are held open across a modern client's rounds now."""
        return len(self.held_calls)

    async def call_tool(
        self, call: PendingCall
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any] | None:
        """Forward a call of an upstream tool (held open for a modern client), or resume a held call; an upstream's
        task handed out as a `CreateTaskResult` (wire form).

        Local tools run as the server runs them (None).
        """
        features = call.features
        if features.held_call is not None:
            return await self.held_calls.resume(call.ctx, features, call.owner)
        tool = call.entry.tool
        if not isinstance(tool, McpTool):
            return None
        if isinstance(tool.toolset, UpstreamToolset):
            # Before anything else (a confirmation question included): a withheld tool is not offered at all.
            refusal = await tool.toolset.pin_refusal(tool.raw_mcp_tool)
            if refusal is not None:
                return error_result(refusal)
        forward = functools.partial(self._forward, tool, call.arguments)
        if not features.modern:
            return await call.run(forward)
        if features.relayed or await self._speaks_modern(tool, call.identity):
            return await self._relay(call, tool)

        # An upstream call must not run again to get an answer: it is held open across the client's rounds.
        def on_error(exc: BaseException) -> types.CallToolResult:
            logger.error("Held call of %s failed: %s", tool.name, exc)
            return error_result(f"{type(exc).__name__}: {exc}")

        return await self.held_calls.start(call.owner, features, lambda: call.run(forward), on_error)

    @staticmethod
    async def _speaks_modern(tool: McpTool, identity: CallIdentity) -> bool:
        """Whether the upstream session that would serve this caller speaks 2026-07-28 (it is opened if need be)."""
        toolset = tool.toolset
        if not isinstance(toolset, McpToolset):
            return False
        try:
            session = await toolset.session(
                ReadonlyContext(user_id=identity.principal, session_id=identity.session_key)
            )
        except UpstreamUnavailableError:
            return False  # the call itself reports why
        return session.modern

    def lane(self, seam: LaneSeam) -> ASGIApp:
        """The lanes in front of the server's streamable HTTP app: `ModernLane` for modern (2026-07-28) calls, in
        front of `FastLane` for handshake-era sessions."""
        return ModernLane(seam, self.eras, FastLane(seam))

    def applies_to(self, request: PlainRequest) -> bool:
        """Whether forwarding has more to do for `request` than the hop: a handshake-era session this hub has not
        seen through the general path yet (its channel, for roots requests, and its era, which chooses its upstream
        sessions' era, are unknown), a modern client that declared what an upstream may ask it mid-call (a question
        holds the call across its rounds) or an extension (an upstream's task or app answer is the general path's),
        or an upstream tool with a confirmation policy, pins, a result cap or a credential."""
        if request.modern:
            declared = request.declared or {}
            if any(declared.get(name) is not None for name in ("elicitation", "sampling", "extensions")):
                return True
        elif self.relay.session_of(request.identity.session_owner) is None:
            return True
        tool = request.entry.tool if request.entry is not None else None
        if not isinstance(tool, McpTool):
            return False
        toolset = tool.toolset
        return not (tool.never_confirmed and isinstance(toolset, UpstreamToolset) and toolset.relays_raw)

    def relayed_call(
        self, entry: CatalogEntry, owner: str, declared: dict[str, Any] | None = None
    ) -> RelayedTool | None:
        """The plain path's way to forward a call of an upstream tool (`applies_to` said nothing else applies).

        A modern caller's call (`declared`) is one relayed round on a modern upstream session, as on the general
        path: the upstream sees the caller's capabilities, and its `InputRequiredResult` comes back as sent.
        """
        tool = entry.tool
        toolset = tool.toolset if isinstance(tool, McpTool) else None
        session = self.relay.session_of(owner)
        if not isinstance(tool, McpTool) or not isinstance(toolset, UpstreamToolset):
            return None
        if session is None and declared is None:
            return None
        upstream = next((u for u in self.passthrough.upstreams if u is toolset), None)
        name = tool.raw_mcp_tool.name

        async def invoke(arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
            try:
                with upstream_span(toolset.key, upstream, name) as span:
                    raw = await toolset.call_tool_raw(name, arguments, context, declared=declared)
                    if raw.get("resultType") != "input_required":
                        # Checked as the general path checks it (an invalid result is the same error), sent as is.
                        span.result(types.CallToolResult.model_validate(raw, by_name=False))
            except UpstreamUnavailableError as exc:
                return error_result(str(exc)).model_dump(by_alias=True, mode="json", exclude_none=True)
            return self.passthrough.raw_tool_result(upstream, raw)

        if session is None:
            # A modern caller that declared nothing an upstream may ask it mid-call (`applies_to`): a push question
            # is refused, as the general path refuses it.
            return RelayedTool(invoke, lambda _needed: False)
        return RelayedTool(invoke, functools.partial(client_declares, session))

    async def _relay(
        self, call: PendingCall, tool: McpTool
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        """One round of a modern client's call, relayed to a modern upstream session as it is.

        The upstream's `InputRequiredResult` reaches the client with the upstream's own keys and requests (only
        its `requestState` is wrapped in the gateway's sealed one); the client's answers and capabilities reach
        the upstream as sent. A task the upstream answers a client that declared the Tasks extension with reaches
        it as sent, under an id of the gateway's (`ForwardedTasks`).
        """
        features = call.features
        # Answers to the gateway's own questions (a confirmation) are the gateway's; the rest go to the upstream.
        responses = {k: v for k, v in (features.input_responses or {}).items() if k not in features.answers}
        answer = RelayedRound(
            input_responses=responses or None,
            request_state=features.upstream_state,
            capabilities=features.capabilities,
        )
        upstream = next((u for u in self.passthrough.upstreams if u is tool.toolset), None)

        async def invoke(context: ToolContext) -> types.CallToolResult:
            try:
                key = tool.toolset.key if isinstance(tool.toolset, UpstreamToolset) else None
                with upstream_span(key, upstream, tool.raw_mcp_tool.name) as span:
                    outcome = await tool.call_mcp_round(call.arguments, context, answer)
                    if isinstance(outcome, types.CallToolResult):
                        span.result(outcome)
            except UpstreamUnavailableError as exc:
                return error_result(str(exc))
            if isinstance(outcome, types.InputRequiredResult):
                raise RoundEnded(outcome)
            if isinstance(outcome, CreateTaskResult):
                assert upstream is not None, "a relayed tool's toolset is one of the upstreams"
                raise RoundEnded(self.forwarded_tasks.hand_out(upstream, outcome, call.identity))
            return self._capped(upstream, tool, self.passthrough.tool_result(upstream, outcome), context)

        try:
            return await call.run(invoke)
        except RoundEnded as ended:
            asked = ended.result
            if isinstance(asked, dict):
                return asked  # a task handed out
            return asked.model_copy(update={"request_state": features.relayed_state(asked.request_state)})
        except InputRequired as needed:  # the gateway's own question (a confirmation) comes first
            return types.InputRequiredResult(
                input_requests={needed.key: needed.request}, request_state=features.request_state()
            )

    async def _forward(self, tool: McpTool, arguments: dict[str, Any], context: ToolContext) -> types.CallToolResult:
        """`tools/call` on the tool's upstream; its result as sent, only resource URIs made the gateway's."""
        upstream = next((u for u in self.passthrough.upstreams if u is tool.toolset), None)
        try:
            key = tool.toolset.key if isinstance(tool.toolset, UpstreamToolset) else None
            with upstream_span(key, upstream, tool.raw_mcp_tool.name) as span:
                result = await tool.call_mcp(arguments, context)
                span.result(result)
        except UpstreamUnavailableError as exc:
            return error_result(str(exc))
        return self._capped(upstream, tool, self.passthrough.tool_result(upstream, result), context)

    def _capped(
        self, upstream: McpToolset | None, tool: McpTool, result: types.CallToolResult, context: ToolContext
    ) -> types.CallToolResult:
        """The result as the client gets it: whole, or over the upstream's `maxResultBytes` truncated and kept."""
        limit = upstream.max_result_bytes if isinstance(upstream, UpstreamToolset) else None
        if limit is None:
            return result
        # An anonymous call's own session ends with it; its client reads in the anonymous session.
        session = ANONYMOUS_SESSION if context.session_id.startswith(CALL_SESSION_PREFIX) else context.session_id
        return cap_result(result, limit, self.kept_results, f"{context.user_id}/{session}", tool.name)

    def serving(self, server: ToolServer, *, handshakes: bool = True) -> ToolServer:
        """`server` (which this hub extends) with what the upstreams' handshakes say added to its own: their
        instructions and extensions (`UpstreamHandshakes`, unless `handshakes` is false: reading them starts every
        upstream); and an app's calls by its upstream's tool names (`AppCalls`, outermost, so that every other
        layer sees the published name)."""
        if handshakes:
            server.pipeline.add_answered(UpstreamHandshakes(lambda: self.passthrough.upstreams), NEVER)
        server.tasks.foreign = self.forwarded_tasks
        middleware = server.server.middleware
        server.pipeline.add_answered(AppCalls(server, self.eras), NEVER, before=middleware[0] if middleware else None)
        return server

    async def __aenter__(self) -> Self:
        """Start holding calls and relaying what the upstreams say outside a call to this server's clients."""
        async with contextlib.AsyncExitStack() as stack:
            # Held calls run in the hub's own task group, cancelled (first) when the server closes.
            held_tasks = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self.held_calls.bind, None)
            stack.callback(self.listen_streams.close)
            stack.callback(held_tasks.cancel_scope.cancel)
            self.held_calls.bind(held_tasks)
            if self.reloader is not None:
                # Leaves first: no reload runs while the server closes.
                await stack.enter_async_context(self.reloader)
            self._exit_stack = stack.pop_all()
        self._serving = True
        for upstream in self.passthrough.upstreams:
            self._wire(upstream)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._serving = False
        for upstream in self.passthrough.upstreams:
            self.unwire(upstream)
        stack, self._exit_stack = self._exit_stack, None
        if stack is not None:
            await stack.aclose()

    def _wire(self, upstream: McpToolset) -> None:
        if upstream.forward_client_requests:
            upstream.downstream = self.relay
        if isinstance(upstream, UpstreamToolset):
            upstream.eras = self.eras

    def unwire(self, upstream: McpToolset) -> None:
        """Stop relaying what `upstream` says to this hub's clients (it left the gateway)."""
        if upstream.downstream is self.relay:
            upstream.downstream = None
        if isinstance(upstream, UpstreamToolset) and upstream.eras is self.eras:
            upstream.eras = None

    def replace_upstreams(self, upstreams: Sequence[McpToolset]) -> None:
        """Forward to `upstreams` from now on (a config reload); the ones that stay keep their sessions.

        Dropped upstreams stay wired until `unwire` (their calls in flight still reach their clients).
        """
        self.passthrough.replace(upstreams)
        if self._serving:
            for upstream in upstreams:
                self._wire(upstream)

    async def announce(self, *, tools: bool, resources: bool, prompts: bool) -> int:
        """Tell every client that can hear it outside a request that these lists changed.

        Returns how many handshake-era sessions were told; a modern-era client hears of it on its open
        `subscriptions/listen` streams (or sees the change on its next listing).
        """
        notifications: list[types.ServerNotification] = []
        if tools:
            notifications.append(types.ToolListChangedNotification())
        if resources:
            notifications.append(types.ResourceListChangedNotification())
        if prompts:
            notifications.append(types.PromptListChangedNotification())
        return await self.relay.broadcast(notifications)


def gateway_server(tools: Sequence[ToolUnion], *, handshakes: bool = True, **options: Any) -> ToolServer:
    """A `ToolServer` for `tools` whose upstream toolsets (`McpToolset`s) are forwarded by a `Hub`.

    `handshakes` false leaves the upstreams' instructions out of the server's own handshake (`Hub.serving`).
    `options` are `ToolServer`'s keyword arguments.
    """
    hub = Hub([item for item in tools if isinstance(item, McpToolset)])
    return hub.serving(ToolServer(tools, extension=hub, **options), handshakes=handshakes)
