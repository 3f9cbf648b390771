"""OpenTelemetry traces: one trace spans client → gateway → upstream, named and attributed per the MCP semantic
conventions; the W3C trace context travels in `params._meta`, with or without the gateway's own tracing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from hub_harness import DEADLINE, HERE, ROOT, SLOW_START, child_env, write_config

Span = dict[str, Any]


def traced_run(mode: str) -> dict[str, Any]:
    """`hub_traced_run.py` in its own process (its tracer provider is process-wide), its report."""
    done = subprocess.run(
        [sys.executable, str(HERE / "hub_traced_run.py"), mode],
        capture_output=True,
        text=True,
        timeout=DEADLINE * 3,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def only(spans: list[Span], name: str, kind: str, status: str = "UNSET") -> Span:
    """The one span with this name, kind and status (the failing call's spans are the `ERROR` ones)."""
    found = [span for span in spans if (span["name"], span["kind"], span["status"]) == (name, kind, status)]
    assert len(found) == 1, f"{len(found)} spans {name!r} ({kind}, {status}) in {[s['name'] for s in spans]}"
    return found[0]


def parent_of(spans: list[Span], span: Span) -> Span:
    by_id = {each["span_id"]: each for each in spans}
    return by_id[span["parent_id"]]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_one_trace_spans_client_gateway_and_upstream(mode: str) -> None:
    report = traced_run(mode)
    root = report["root"]
    spans = [span for span in report["spans"] if span["trace_id"] == root["trace_id"]]
    assert (report["echoed"], report["failed"]) == (False, True)

    # The gateway's server span: named `{method} {tool}`, a child of the client's span for the call.
    gateway = only(spans, "tools/call ours_echo", "SERVER")
    attributes = gateway["attributes"]
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "ours_echo"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["adk_mcp_gateway.upstream"] == "ours"
    assert attributes["network.transport"] == "tcp"
    # The session is named by a digest: its key lets whoever holds it into the session.
    assert len(attributes["mcp.session.id"]) == 32
    client_side = parent_of(spans, gateway)
    assert client_side["kind"] == "CLIENT"
    assert client_side["parent_id"] == root["span_id"]

    # The gateway's upstream call: a CLIENT span under the server span, named by the upstream's tool name.
    upstream_call = only(spans, "tools/call echo", "CLIENT")
    assert parent_of(spans, upstream_call)["span_id"] == gateway["span_id"]
    assert upstream_call["attributes"]["gen_ai.tool.name"] == "echo"
    assert upstream_call["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert upstream_call["attributes"]["adk_mcp_gateway.upstream"] == "ours"
    assert upstream_call["attributes"]["network.transport"] == "tcp"
    assert upstream_call["attributes"]["server.address"] == "127.0.0.1"
    assert isinstance(upstream_call["attributes"]["server.port"], int)

    # Our own server mode upstream, tracing in the same process: its server span descends from that call
    # (through the MCP SDK's span of the request that carried the trace context in `params._meta`).
    upstream_server = only(spans, "tools/call echo", "SERVER")
    sent = parent_of(spans, upstream_server)
    assert sent["kind"] == "CLIENT"
    assert parent_of(spans, sent)["span_id"] == upstream_call["span_id"]

    # A failing upstream tool marks the gateway's spans of that call.
    assert only(spans, "tools/call echo", "CLIENT", "ERROR")["attributes"]["error.type"] == "tool_error"
    assert only(spans, "tools/call ours_echo", "SERVER", "ERROR")["attributes"]["error.type"] == "tool_error"

    # The SDK upstream (a stdio child) received the trace context in `params._meta`, in the same trace.
    version, trace_id, parent_id, _flags = report["received"]["traceparent"].split("-")
    assert (version, trace_id) == ("00", root["trace_id"])
    stdio_call = only(spans, "tools/call trace_context", "CLIENT")
    sender = next(span for span in spans if span["span_id"] == parent_id)
    assert parent_of(spans, sender)["span_id"] == stdio_call["span_id"]
    assert stdio_call["attributes"]["network.transport"] == "pipe"
    assert stdio_call["attributes"]["adk_mcp_gateway.upstream"] == "sdk"


class JsonLines:
    """A raw JSON-RPC conversation with a stdio child (no MCP client library, so no tracing of its own)."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)

    async def send(self, message: dict[str, Any]) -> None:
        await self._stdin.send(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

    async def answer(self, request_id: int) -> dict[str, Any]:
        while True:
            line = await self._stdout.receive_until(b"\n", 1 << 20)
            message = json.loads(line)
            if message.get("id") == request_id:
                return message


def gateway_without_otel_sdk(config: Path, state: Path) -> list[str]:
    launcher = str(HERE / "hub_without_otel_sdk.py")
    return [sys.executable, launcher, "serve", str(config), "--state", str(state)]


@pytest.mark.anyio
async def test_without_the_otel_extra_the_trace_context_still_reaches_the_upstream(tmp_path: Path) -> None:
    upstream = {"command": sys.executable, "args": [str(HERE / "hub_trace_upstream.py")], **SLOW_START}
    config = write_config(tmp_path, {"sdk": upstream})
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    traceparent = f"00-{trace_id}-00f067aa0ba902b7-01"
    tracestate = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
    env = {**child_env(), "PYTHONPATH": str(ROOT)}
    with anyio.fail_after(DEADLINE * 2):
        async with await anyio.open_process(
            gateway_without_otel_sdk(config, tmp_path / "state.db"), cwd=ROOT, env=env
        ) as process:
            chat = JsonLines(process)
            await chat.send(
                {
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"},
                    },
                }
            )
            await chat.answer(1)
            await chat.send({"method": "notifications/initialized"})
            await chat.send(
                {
                    "id": 2,
                    "method": "tools/call",
                    "params": {
                        "name": "sdk_trace_context",
                        "arguments": {},
                        "_meta": {"traceparent": traceparent, "tracestate": tracestate},
                    },
                }
            )
            answer = await chat.answer(2)
            assert process.stdin is not None
            await process.stdin.aclose()
    received = answer["result"]["structuredContent"]
    assert received["traceparent"].split("-")[1] == trace_id
    assert received["tracestate"] == tracestate


def test_asking_for_traces_without_the_otel_extra_names_the_extra(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    done = subprocess.run(
        gateway_without_otel_sdk(config, tmp_path / "state.db"),
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        cwd=ROOT,
        env={**child_env(), "PYTHONPATH": str(ROOT), "OTEL_TRACES_EXPORTER": "console"},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 2
    assert 'pip install "adk-mcp-gateway[otel]"' in done.stderr
