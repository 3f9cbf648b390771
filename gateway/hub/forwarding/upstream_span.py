"""`upstream_span`: the trace span around one `tools/call` the hub forwards, whichever path forwards it."""

from __future__ import annotations

from contextlib import AbstractContextManager
from urllib.parse import urlsplit

from gateway.client import McpToolset, StdioConnectionParams
from gateway.server.observe.tracing import UpstreamCallSpan, upstream_call_span

__all__ = ["upstream_span"]


def upstream_span(key: str | None, upstream: McpToolset | None, tool: str) -> AbstractContextManager[UpstreamCallSpan]:
    """The `CLIENT` span of a call of `tool` (the upstream's own name for it) on the upstream with config key `key`.

    `upstream` is the toolset as the hub holds it (None once a reload dropped it), asked how it is reached only when
    the span is recorded.
    """
    return upstream_call_span(key, tool, lambda: _peer(upstream))


def _peer(upstream: McpToolset | None) -> tuple[str, tuple[str, int] | None]:
    """How an upstream is reached, for its spans: `pipe` (stdio), or `tcp` and its host and port."""
    params = upstream.connection_params if upstream is not None else None
    if params is None or isinstance(params, StdioConnectionParams):
        return "pipe", None
    parts = urlsplit(params.url)
    return "tcp", (parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
