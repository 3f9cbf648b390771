"""OpenTelemetry traces of the gateway, per the MCP semantic conventions (`mcp.*`, `gen_ai.*` attributes).

The MCP SDK already does the protocol's part, in every server and client: a `SERVER` span per inbound request,
named `{mcp.method.name} {target}` and parented on the W3C trace context in the request's `params._meta`
(`traceparent`/`tracestate`); and, for each outbound request, a `CLIENT` span (`MCP send ...`) whose context it
writes into that request's `params._meta`. So a trace crosses the gateway without any work here, even when the
gateway itself records nothing (the client's trace context still reaches the upstream).

This module adds what only the gateway knows:

* on each request's server span: `mcp.session.id` (a digest of the session key, which is a bearer secret),
  `network.transport`, `client.address`/`client.port`, and `adk_mcp_gateway.upstream` for a forwarded call;
* a `CLIENT` span per forwarded upstream tool call (`upstream_call_span`), named `tools/call {upstream tool}` with
  `gen_ai.tool.name`, `gen_ai.operation.name`, the upstream, `server.address`/`server.port`, and `error.type`
  (`tool_error`, a JSON-RPC code, or the failure's type); the SDK's `MCP send` span is its child;
* `configure_tracing()`: an SDK tracer provider exporting as the standard `OTEL_*` environment variables say.

Only the OpenTelemetry *API* is imported here (the MCP SDK depends on it); the SDK and the exporters come with the
`otel` extra and are imported inside `configure_tracing` alone. Without a configured provider every span is a
non-recording no-op, and the annotations below are skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
from collections.abc import Callable, Generator, Mapping
from typing import Any, Final

from mcp import MCPError, types
from mcp.server.context import ServerRequestContext
from opentelemetry import trace
from starlette.requests import Request

from gateway.errors import ConfigError, MissingExtraError
from gateway.server.identity import connection_id

__all__ = [
    "UPSTREAM_ATTRIBUTE",
    "Peer",
    "UpstreamCallSpan",
    "annotate_server_span",
    "configure_tracing",
    "session_digest",
    "tracing_requested",
    "upstream_call_span",
]

logger = logging.getLogger(__name__)

UPSTREAM_ATTRIBUTE: Final = "adk_mcp_gateway.upstream"
"""The span attribute naming the upstream (its config key) a call was forwarded to."""
_tracer = trace.get_tracer("adk-mcp-gateway")
_EXPORTERS_ENV: Final = "OTEL_TRACES_EXPORTER"
_ENDPOINT_ENVS: Final = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_EXTRA_HINT: Final = 'pip install "adk-mcp-gateway[otel]"'


def session_digest(session_owner: str) -> str:
    """What traces call a session: a digest of its key (the key itself lets whoever holds it into the session)."""
    return hashlib.sha256(session_owner.encode()).hexdigest()[:32]


def annotate_server_span(ctx: ServerRequestContext[Any, Any], upstream: str, session_owner: str | None) -> None:
    """Add the gateway's attributes to the current request's server span (the SDK's), if it is recorded."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    attributes: dict[str, str | int] = {}
    if session_owner is not None:
        attributes["mcp.session.id"] = session_digest(session_owner)
    request: Any = ctx.request
    if isinstance(request, Request):
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
        if request.client is not None:
            attributes["client.address"] = request.client.host
            attributes["client.port"] = request.client.port
    elif connection_id.get() is not None:
        attributes["network.transport"] = "pipe"
    if upstream:
        attributes[UPSTREAM_ATTRIBUTE] = upstream
    span.set_attributes(attributes)


class UpstreamCallSpan:
    """The span of one forwarded call, told how it ended."""

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def result(self, result: types.CallToolResult) -> None:
        """The upstream answered; an `isError` result marks the span failed (`error.type` `tool_error`)."""
        if result.is_error and self._span.is_recording():
            self._span.set_attribute("error.type", "tool_error")
            self._span.set_status(trace.StatusCode.ERROR)


Peer = Callable[[], tuple[str, tuple[str, int] | None]]
"""An upstream's `network.transport` (`pipe` for stdio, `tcp` for HTTP) and its host and port (HTTP)."""
_NOT_RECORDED: Final = UpstreamCallSpan(trace.INVALID_SPAN)


@contextlib.contextmanager
def upstream_call_span(upstream: str | None, tool: str, peer: Peer) -> Generator[UpstreamCallSpan]:
    """A `CLIENT` span around a `tools/call` forwarded to `upstream` (whose name for the tool is `tool`).

    None when the request's own span is not recorded (no tracer provider, or a trace not sampled): then the
    request's trace context still reaches the upstream through the SDK.

    Args:
        upstream: the upstream's config key (None: a toolset without one).
        tool: the tool's name on the upstream.
        peer: how the upstream is reached (asked only when the span is recorded).
    """
    if not trace.get_current_span().is_recording():
        yield _NOT_RECORDED
        return
    transport, address = peer()
    attributes: dict[str, str | int] = {
        "mcp.method.name": "tools/call",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "network.transport": transport,
    }
    if upstream:
        attributes[UPSTREAM_ATTRIBUTE] = upstream
    if address is not None:
        attributes["server.address"], attributes["server.port"] = address
    with _tracer.start_as_current_span(
        f"tools/call {tool}",
        kind=trace.SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield UpstreamCallSpan(span)
        except MCPError as exc:
            code = str(exc.error.code)
            span.set_attributes({"error.type": code, "rpc.response.status_code": code})
            span.set_status(trace.StatusCode.ERROR, exc.error.message)
            raise
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(trace.StatusCode.ERROR, str(exc))
            raise


def tracing_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the standard `OTEL_*` variables ask for traces to be exported.

    `OTEL_TRACES_EXPORTER` set to anything but `none`, or an OTLP endpoint given.
    """
    env = os.environ if environ is None else environ
    exporters = env.get(_EXPORTERS_ENV, "").strip()
    if exporters:
        return exporters != "none"
    return any(env.get(name) for name in _ENDPOINT_ENVS)


def configure_tracing(service_name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Install an SDK tracer provider exporting spans as the `OTEL_*` environment variables say; whether it did.

    Nothing happens when the variables ask for no export (`tracing_requested`), or when a provider is installed
    already (e.g. by `opentelemetry-instrument`). `OTEL_TRACES_EXPORTER` is a comma-separated list of `otlp`
    (the default when only an endpoint is set; OTLP over HTTP/protobuf, configured by the `OTEL_EXPORTER_OTLP_*`
    variables) and `console` (to stderr). The service is `OTEL_SERVICE_NAME`, else `service_name`;
    `OTEL_RESOURCE_ATTRIBUTES` adds to it.

    Raises:
        MissingExtraError: the OpenTelemetry SDK (or the OTLP exporter) is not installed.
        ConfigError: `OTEL_TRACES_EXPORTER` names an exporter this gateway does not know.
    """
    env = os.environ if environ is None else environ
    if not tracing_requested(env):
        return False
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        logger.info("A tracer provider is installed already; the gateway's spans go to it.")
        return False
    names = [name.strip() for name in env.get(_EXPORTERS_ENV, "otlp").split(",") if name.strip()]
    unknown = sorted(set(names) - {"otlp", "console"})
    if unknown:
        raise ConfigError(
            f"{_EXPORTERS_ENV}={env.get(_EXPORTERS_ENV)!r} names {', '.join(unknown)}, which this gateway does not "
            "export to; use otlp, console, or none."
        )
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError as exc:
        raise MissingExtraError(
            f"Tracing was asked for ({_EXPORTERS_ENV} or an OTLP endpoint is set) but the OpenTelemetry SDK is not "
            f"installed: {_EXTRA_HINT}."
        ) from exc
    exporters: list[SpanExporter] = []
    if "otlp" in names:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise MissingExtraError(f"The OTLP exporter is not installed: {_EXTRA_HINT}.") from exc
        exporters.append(OTLPSpanExporter())
    if "console" in names:
        # stderr: over stdio, stdout is the MCP stream.
        exporters.append(ConsoleSpanExporter(out=sys.stderr))
    resource = Resource.create({SERVICE_NAME: env.get("OTEL_SERVICE_NAME") or service_name})
    provider = TracerProvider(resource=resource)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    logger.info("Exporting traces (%s) as service %s", ", ".join(names), resource.attributes.get(SERVICE_NAME))
    return True
