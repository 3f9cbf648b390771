"""`GET /metrics`: a server's requests, sessions and upstreams in the Prometheus text format (`metrics` extra).

Metrics (all prefixed `adk_mcp_gateway_`):

* `requests_total{method,tool,upstream,outcome}` and `request_duration_seconds{method,tool,upstream}` (histogram):
  every request the server answered (`gateway.server.observe.observation` says what the labels hold). `tool` is set for
  `tools/call` only, `upstream` for a forwarded call only (empty otherwise).
* `sessions_open`: streamable HTTP sessions and SSE connections open now.
* `tool_calls_in_flight`: `tools/call` requests running now. `held_calls`: upstream calls held open across a
  modern client's rounds.
* Per upstream (label `upstream`, its config key): `upstream_state{state}` (1 for the current one of `connected`,
  `idle`, `failing`), `upstream_sessions`, `upstream_reconnects_total`, `upstream_connect_failures_total`;
  for an isolated upstream also `upstream_warm_sessions{use}` (`lent`, `free`) and `upstream_session_limit`.

Each gateway has its own registry (never the process-wide default), so apps and tests in one process keep their
metrics apart. Label values are bounded: unknown methods and tools collapse into one value, and at most
`max_tool_labels` distinct tools get a label of their own (the rest count as `_other`). No label holds a tool
argument, a token or a session key.

Who may scrape: with a metrics token, only requests bearing it (`Authorization: Bearer ...`; MCP tokens do not
count). Without one, on the MCP listener only loopback clients (and the Host/Origin check of the MCP endpoints
applies); on a listener of its own (`MetricsListener`), whoever its bind address lets connect.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Iterable
from typing import Final, cast

from mcp.server.transport_security import TransportSecurityMiddleware
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.server.observe.observation import RequestRecord
from gateway.server.tool_server import ToolServer

__all__ = ["DEFAULT_MAX_TOOL_LABELS", "GatewayMetrics", "MetricsListener", "metrics_endpoint"]

DEFAULT_MAX_TOOL_LABELS: Final = 1000
OTHER_TOOL: Final = "_other"
_PREFIX: Final = "adk_mcp_gateway_"
_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
_STATES: Final = ("connected", "idle", "failing")
_LOOPBACK_CLIENTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})


class GatewayMetrics:
    """The metrics of one `ToolServer`, in a registry of their own.

    Args:
        tool_server: the server to observe (its requests, calls in flight, upstreams).
        open_sessions: how many sessions are open now (the HTTP front's count).
        max_tool_labels: distinct tool names that get a label value of their own.
    """

    def __init__(
        self,
        tool_server: ToolServer,
        *,
        open_sessions: Callable[[], int] | None = None,
        max_tool_labels: int = DEFAULT_MAX_TOOL_LABELS,
    ) -> None:
        self.registry = CollectorRegistry()
        self._max_tool_labels = max_tool_labels
        self._tools: set[str] = set()
        self._requests = Counter(
            f"{_PREFIX}requests",
            "MCP requests answered, by method, tool, upstream and outcome.",
            ["method", "tool", "upstream", "outcome"],
            registry=self.registry,
        )
        self._duration = Histogram(
            f"{_PREFIX}request_duration_seconds",
            "Seconds from a request's arrival to its answer.",
            ["method", "tool", "upstream"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_ServerState(tool_server, open_sessions))
        tool_server.observation.observers.append(self)

    def _tool_label(self, tool: str) -> str:
        if not tool or tool in self._tools:
            return tool
        if len(self._tools) >= self._max_tool_labels:
            return OTHER_TOOL
        self._tools.add(tool)
        return tool

    def request_done(self, record: RequestRecord) -> None:
        """Count a request and its duration (`RequestObserver`)."""
        tool = self._tool_label(record.tool)
        self._requests.labels(record.method, tool, record.upstream, record.outcome).inc()
        self._duration.labels(record.method, tool, record.upstream).observe(record.duration)

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return generate_latest(self.registry)


class _ServerState(Collector):
    """What is open and how the upstreams are, read at each scrape."""

    def __init__(self, tool_server: ToolServer, open_sessions: Callable[[], int] | None) -> None:
        self._server = tool_server
        self._open_sessions = open_sessions

    def collect(self) -> Iterable[Metric]:
        server = self._server
        if self._open_sessions is not None:
            yield GaugeMetricFamily(
                f"{_PREFIX}sessions_open",
                "Streamable HTTP sessions and SSE connections open now.",
                value=self._open_sessions(),
            )
        yield GaugeMetricFamily(
            f"{_PREFIX}tool_calls_in_flight", "tools/call requests running now.", value=server.active_calls
        )
        held = server.extension.held_call_count() if server.extension is not None else 0
        yield GaugeMetricFamily(
            f"{_PREFIX}held_calls", "Upstream calls held open across a modern client's rounds.", value=held
        )
        state = GaugeMetricFamily(
            f"{_PREFIX}upstream_state", "1 for the upstream's current state, else 0.", labels=["upstream", "state"]
        )
        sessions = GaugeMetricFamily(
            f"{_PREFIX}upstream_sessions", "Sessions open with the upstream now.", labels=["upstream"]
        )
        reconnects = CounterMetricFamily(
            f"{_PREFIX}upstream_reconnects",
            "Sessions opened to replace one the upstream lost.",
            labels=["upstream"],
        )
        failures = CounterMetricFamily(
            f"{_PREFIX}upstream_connect_failures", "Connection attempts that failed.", labels=["upstream"]
        )
        warm = GaugeMetricFamily(
            f"{_PREFIX}upstream_warm_sessions",
            "Upstream sessions kept for anonymous sessionless calls: lent to a call now, or free.",
            labels=["upstream", "use"],
        )
        session_limit = GaugeMetricFamily(
            f"{_PREFIX}upstream_session_limit", "maxSessions: upstream sessions open at once.", labels=["upstream"]
        )
        for name, report in server.upstream_status().items():
            for each in _STATES:
                state.add_metric([name, each], 1.0 if report.get("state") == each else 0.0)
            sessions.add_metric([name], float(report.get("sessions", 0)))
            reconnects.add_metric([name], float(report.get("reconnects", 0)))
            failures.add_metric([name], float(report.get("connect_failures", 0)))
            if isinstance(lent := report.get("warm"), dict):
                for use in ("lent", "free"):
                    warm.add_metric([name, use], float(cast("dict[str, int]", lent).get(use, 0)))
            if isinstance(limits := report.get("limits"), dict):
                total = cast("dict[str, int | None]", limits).get("maxSessions")
                if total is not None:
                    session_limit.add_metric([name], float(total))
        yield from (state, sessions, reconnects, failures, warm, session_limit)


def _local_port(scope: Scope) -> int | None:
    server = scope.get("server")
    return int(server[1]) if server else None


def metrics_endpoint(
    metrics: GatewayMetrics,
    *,
    token: str | None,
    host_check: TransportSecurityMiddleware | None,
    listener_port: int | None = None,
) -> Callable[[Request], Awaitable[Response]]:
    """The `/metrics` handler: the exposition, for the bearer of `token` (None: see below).

    With `listener_port`, `/metrics` is served on that port alone (its own listener, `MetricsListener`), where
    the bind address decides who may reach it (no Host check, no loopback rule; the token still counts). Without
    it, `/metrics` shares the MCP listener: its Host/Origin check applies and, without a token, only loopback
    clients are answered.
    """
    expected = f"Bearer {token}".encode() if token else None

    async def scrape(request: Request) -> Response:
        dedicated = listener_port is not None
        if dedicated and _local_port(request.scope) != listener_port:
            return PlainTextResponse("Not Found", status_code=404)
        if host_check is not None and not dedicated:
            rejection = await host_check.validate_request(request, is_post=False)
            if rejection is not None:
                return rejection
        if expected is not None:
            given = request.headers.get("authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return PlainTextResponse(
                    "/metrics needs the metrics token: Authorization: Bearer <token>.\n",
                    status_code=401,
                    headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
                )
        elif not dedicated and (request.client is None or request.client.host not in _LOOPBACK_CLIENTS):
            return PlainTextResponse(
                "/metrics answers loopback clients only; give the server a metrics token, or a metrics listener of "
                "its own, to scrape from elsewhere.\n",
                status_code=403,
            )
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    return scrape


class MetricsListener:
    """ASGI middleware: on the metrics listener's port only `/metrics` is served (never `/mcp` or anything else)."""

    def __init__(self, app: ASGIApp, port: int) -> None:
        self._app = app
        self._port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and _local_port(scope) == self._port and scope["path"] != "/metrics":
            await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
            return
        await self._app(scope, receive, send)
