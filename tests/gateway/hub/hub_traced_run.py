"""Run one traced call through a gateway and print every span as JSON (a child process of `test_tracing.py`).

The OpenTelemetry SDK's tracer provider is process-wide and can be installed once, so a traced run gets a process
of its own: here the SDK records into its in-memory exporter, a downstream client (in the era given as the first
argument) calls through a gateway served over HTTP in this process, under a root span of its own, to two upstreams
— our server mode over HTTP (in this process, so its spans are recorded too) and the SDK's `MCPServer` over stdio
(`hub_trace_upstream.py`, which reports the trace context it received).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from hub_harness import HERE, SLOW_START, connect, gateway_http, upstream_http, write_config
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)


def described(span: ReadableSpan) -> dict[str, Any]:
    context = span.get_span_context()
    assert context is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": f"{context.trace_id:032x}",
        "span_id": f"{context.span_id:016x}",
        "parent_id": f"{span.parent.span_id:016x}" if span.parent is not None else None,
        "attributes": dict(span.attributes or {}),
        "status": span.status.status_code.name,
    }


async def main(mode: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        async with upstream_http() as url:
            servers = {
                "ours": {"url": url},
                "sdk": {"command": sys.executable, "args": [str(HERE / "hub_trace_upstream.py")], **SLOW_START},
            }
            config = write_config(Path(directory), servers)
            async with gateway_http(config) as base_url, connect(base_url, mode) as client:  # type: ignore[arg-type]
                with trace.get_tracer("test-agent").start_as_current_span("agent") as root:
                    echoed = await client.call_tool("ours_echo", {"text": "hello"})
                    received = await client.call_tool("sdk_trace_context", {})
                    failed = await client.call_tool("ours_echo", {})
    context = root.get_span_context()
    report = {
        "root": {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"},
        "echoed": echoed.is_error,
        "failed": failed.is_error,
        "received": received.structured_content,
        "spans": [described(span) for span in exporter.get_finished_spans()],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
