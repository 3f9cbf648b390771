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
from urllib.parse import urlsplit

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext

from gateway.client import McpTool, McpToolset, StdioConnectionParams
from gateway.errors import UpstreamUnavailableError
from gateway.hub.era import DownstreamEras
from gateway.hub.held_calls import HeldCalls
from gateway.hub.passthrough import Passthrough
from gateway.hub.relay import DownstreamRelay
from gateway.hub.upstream_handlers import UpstreamHandlers
from gateway.hub.upstreams import UpstreamToolset
from gateway.server.extension import PendingCall, ServerHooks
from gateway.server.health import redact_reason
from gateway.server.tool_call import error_result
from gateway.server.tool_server import ToolServer
from gateway.server.tracing import upstream_call_span
from gateway.tools import BaseTool, ToolContext
from gateway.tools.tool_union import ToolUnion

__all__ = ["Hub", "gateway_server"]

logger = logging.getLogger(__name__)


class Hub:
    """Forwarding to the upstream toolsets of one server (a `gateway.server.extension.ServerExtension`)."""

    def __init__(self, upstreams: Sequence[McpToolset]) -> None:
        self.passthrough = Passthrough(upstreams)
        self.relay = DownstreamRelay(self.passthrough)
        self.held_calls = HeldCalls()
        self.eras = DownstreamEras()
        self._exit_stack: contextlib.AsyncExitStack | None = None

    @property
    def upstreams(self) -> list[McpToolset]:
        """The upstream toolsets, in config order."""
        return self.passthrough.upstreams

    def owns(self, source: ToolUnion) -> bool:
        """Whether `source` is one of the upstream toolsets."""
        return any(source is upstream for upstream in self.passthrough.upstreams)

    def describe(self, tool: BaseTool) -> types.Tool | None:
        """An upstream tool as its upstream listed it, only its name prefixed (its schemas pass unchanged)."""
        if not isinstance(tool, McpTool):
            return None
        return tool.raw_mcp_tool.model_copy(update={"name": tool.name})

    def handlers(self, hooks: ServerHooks) -> dict[str, Any]:
        """Resources, prompts, completion and roots, offered only when there is an upstream to serve them."""
        if not self.passthrough:
            return {}
        return UpstreamHandlers(self.passthrough, self.relay, hooks.context, hooks.page).as_server_handlers()

    def track(self, ctx: ServerRequestContext[Any, Any], owner: str) -> None:
        """Remember the session's era and its channel (so that upstream notifications can reach it)."""
        self.eras.seen(owner, ctx.protocol_version)
        if self.passthrough:
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

    async def call_tool(self, call: PendingCall) -> types.CallToolResult | types.InputRequiredResult | None:
        """Forward a call of an upstream tool (held open for a modern client), or resume a held call.

        Local tools run as the server runs them (None).
        """
        features = call.features
        if features.held_call is not None:
            return await self.held_calls.resume(call.ctx, features, call.owner)
        tool = call.entry.tool
        if not isinstance(tool, McpTool):
            return None
        forward = functools.partial(self._forward, tool, call.arguments)
        if not features.modern:
            return await call.run(forward)

        # An upstream call must not run again to get an answer: it is held open across the client's rounds.
        def on_error(exc: BaseException) -> types.CallToolResult:
            logger.error("Held call of %s failed: %s", tool.name, exc)
            return error_result(f"{type(exc).__name__}: {exc}")

        return await self.held_calls.start(call.owner, features, lambda: call.run(forward), on_error)

    async def _forward(self, tool: McpTool, arguments: dict[str, Any], context: ToolContext) -> types.CallToolResult:
        """`tools/call` on the tool's upstream; its result as sent, only resource URIs made the gateway's."""
        upstream = next((u for u in self.passthrough.upstreams if u is tool.toolset), None)
        try:
            key = tool.toolset.key if isinstance(tool.toolset, UpstreamToolset) else None
            with upstream_call_span(key, tool.raw_mcp_tool.name, lambda: _peer(upstream)) as span:
                result = await tool.call_mcp(arguments, context)
                span.result(result)
        except UpstreamUnavailableError as exc:
            return error_result(str(exc))
        return self.passthrough.tool_result(upstream, result)

    async def __aenter__(self) -> Self:
        """Start holding calls and relaying what the upstreams say outside a call to this server's clients."""
        async with contextlib.AsyncExitStack() as stack:
            # Held calls run in the hub's own task group, cancelled (first) when the server closes.
            held_tasks = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self.held_calls.bind, None)
            stack.callback(held_tasks.cancel_scope.cancel)
            self.held_calls.bind(held_tasks)
            self._exit_stack = stack.pop_all()
        for upstream in self.passthrough.upstreams:
            if upstream.forward_client_requests:
                upstream.downstream = self.relay
            if isinstance(upstream, UpstreamToolset):
                upstream.eras = self.eras
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for upstream in self.passthrough.upstreams:
            if upstream.downstream is self.relay:
                upstream.downstream = None
            if isinstance(upstream, UpstreamToolset) and upstream.eras is self.eras:
                upstream.eras = None
        stack, self._exit_stack = self._exit_stack, None
        if stack is not None:
            await stack.aclose()


def _peer(upstream: McpToolset | None) -> tuple[str, tuple[str, int] | None]:
    """How an upstream is reached, for its spans: `pipe` (stdio), or `tcp` and its host and port."""
    params = upstream.connection_params if upstream is not None else None
    if params is None or isinstance(params, StdioConnectionParams):
        return "pipe", None
    parts = urlsplit(params.url)
    return "tcp", (parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))


def gateway_server(tools: Sequence[ToolUnion], **options: Any) -> ToolServer:
    """A `ToolServer` for `tools` whose upstream toolsets (`McpToolset`s) are forwarded by a `Hub`.

    `options` are `ToolServer`'s keyword arguments.
    """
    hub = Hub([item for item in tools if isinstance(item, McpToolset)])
    return ToolServer(tools, extension=hub, **options)
