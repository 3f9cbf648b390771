"""MCP in, MCP out: an upstream tool's `CallToolResult` crosses the gateway as the upstream sent it.

Every tool of two real upstreams — the TypeScript SDK's `server-everything` and the conformance fixture built on
the Python SDK's `MCPServer` — is called directly and through the gateway (`"prefix": ""`), with the upstream
over stdio and over streamable HTTP and the gateway served over stdio and over HTTP, and the two results are
compared field by field: the content blocks in order with their annotations and `_meta`, `structuredContent`
only if the upstream sent one, `isError`, the result's own `_meta`.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

import anyio
import anyio.abc
import pytest
from hub_harness import (
    DEADLINE,
    ROOT,
    SLOW_START,
    FormFiller,
    Target,
    child_env,
    connect,
    gateway,
    gateway_http,
    write_config,
)
from mcp import Client, StdioServerParameters, types

from tests.conformance.toolchain import ensure_toolchain
from tests.support.loopback import bound_socket, wait_for_port
from tests.support.wire import wire_form

pytestmark = pytest.mark.anyio

FIXTURE_UPSTREAM = ROOT / "tests/conformance/fixture_upstream.py"
GZIP_SOURCE = "data:text/plain;base64,aGVsbG8gZ2F0ZXdheQ=="
"""`gzip-file-as-resource` reads a URL; a data URI keeps the test off the network."""

Call = tuple[str, dict[str, Any]]
EVERYTHING_CALLS: tuple[Call, ...] = (
    ("echo", {"message": "hello through the hop"}),
    ("get-annotated-message", {"messageType": "error"}),
    ("get-annotated-message", {"messageType": "success", "includeImage": True}),
    ("get-annotated-message", {"messageType": "debug", "includeImage": True}),
    ("get-env", {}),
    ("get-resource-links", {"count": 3}),
    ("get-resource-reference", {"resourceType": "Text", "resourceId": 2}),
    ("get-resource-reference", {"resourceType": "Blob", "resourceId": 3}),
    ("get-structured-content", {"location": "Chicago"}),
    ("get-sum", {"a": 2, "b": 40}),
    ("get-tiny-image", {}),
    ("gzip-file-as-resource", {"name": "hop.gz", "data": GZIP_SOURCE, "outputType": "resource"}),
    ("gzip-file-as-resource", {"name": "hop-link.gz", "data": GZIP_SOURCE, "outputType": "resourceLink"}),
    # Each toggle is called twice (on, then off again), so no session is left sending updates.
    ("toggle-simulated-logging", {}),
    ("toggle-simulated-logging", {}),
    ("toggle-subscriber-updates", {}),
    ("toggle-subscriber-updates", {}),
    ("trigger-long-running-operation", {"duration": 0.2, "steps": 2}),
    ("simulate-research-query", {"topic": "gateways", "ambiguous": False}),
    ("trigger-elicitation-request", {}),
    ("trigger-sampling-request", {"prompt": "Name a colour", "maxTokens": 20}),
    ("trigger-url-elicitation", {"url": "https://example.com/consent", "elicitationId": "hop-1"}),
    # Arguments the upstream refuses: its own error result arrives, not one of the gateway's.
    ("trigger-url-elicitation", {}),
    ("get-sum", {"a": "two"}),
)
FIXTURE_CALLS: tuple[Call, ...] = (
    ("test_simple_text", {}),
    ("test_image_content", {}),
    ("test_audio_content", {}),
    ("test_embedded_resource", {}),
    ("test_multiple_content_types", {}),
    ("test_error_handling", {}),
    ("test_tool_with_logging", {}),
    ("test_tool_with_progress", {}),
    ("test_sampling", {"prompt": "Name a colour"}),
    ("test_elicitation", {"message": "Who are you?"}),
    ("test_elicitation_sep1034_defaults", {}),
    ("test_elicitation_sep1330_enums", {}),
    ("test_reconnection", {}),
    ("json_schema_2020_12_tool", {"name": "Ada", "address": {"street": "1 Loop Road", "city": "Localhost"}}),
    ("test_sampling", {}),
)
UNCALLED: frozenset[str] = frozenset(
    {
        "test_input_required_result_elicitation",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_request_state",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_multi_round",
        "test_input_required_result_tampered_state",
        "test_input_required_result_capabilities",
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_logging_tool",
        "test_trigger_tool_change",
        "test_trigger_prompt_change",
        "test_custom_header",
    }
)
"""Listed tools the tables leave out on purpose: the fixture's tools for the 2026-07-28 scenarios (`fixture_modern.py`),
whose rounds only a 2026-07-28 upstream session has (the shared session here speaks the handshake era) and two of
which change the very lists compared here; `test_relayed_rounds.py` and the conformance run cover them."""

SHARED: dict[str, Any] = {"prefix": "", "sessionPolicy": "shared", **SLOW_START}
"""One upstream session for the whole gateway: a 2026-07-28 client's anonymous calls would otherwise each get an
upstream session of their own, and server-everything's toggles keep their state per session, as its direct
client's one session does. The listing deadline is generous: a Python upstream may start slowly on a busy machine."""

Upstream = Literal["everything", "fixture"]
Transport = Literal["stdio", "http"]


def _command(upstream: Upstream, transport: Transport, port: int | None = None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that start `upstream` serving over `transport`."""
    if upstream == "everything":
        toolchain = ensure_toolchain()
        env = child_env() | {"PATH": toolchain.env()["PATH"]}
        if transport == "stdio":
            return [str(toolchain.node), str(toolchain.server_everything), "stdio"], env
        return [str(toolchain.node), str(toolchain.server_everything), "streamableHttp"], env | {"PORT": str(port)}
    arguments = ["stdio"] if transport == "stdio" else ["http", str(port)]
    return [sys.executable, "-I", str(FIXTURE_UPSTREAM), *arguments], child_env()


@dataclass(frozen=True)
class Upstreams:
    """Where each upstream serves: a config entry for the gateway and a target for a direct client."""

    entries: dict[tuple[Upstream, Transport], dict[str, Any]]

    def direct(self, upstream: Upstream, transport: Transport) -> Target:
        entry = self.entries[upstream, transport]
        if "url" in entry:
            return str(entry["url"]).removesuffix("/mcp")
        return StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Module scope: one HTTP process per upstream serves every case."""
    return "asyncio"


@pytest.fixture(scope="module")
async def upstreams() -> AsyncGenerator[Upstreams]:
    """Both upstreams over HTTP (one process each, shared by every case) and their stdio config entries."""
    entries: dict[tuple[Upstream, Transport], dict[str, Any]] = {}
    processes: list[anyio.abc.Process] = []
    try:
        for upstream in ("everything", "fixture"):
            command, env = _command(upstream, "stdio")
            entries[upstream, "stdio"] = {"command": command[0], "args": command[1:], "env": env} | SHARED
            with bound_socket() as sock:
                port = sock.getsockname()[1]
            command, env = _command(upstream, "http", port)
            processes.append(
                await anyio.open_process(
                    command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
                )
            )
            await wait_for_port(port, DEADLINE)
            entries[upstream, "http"] = {"url": f"http://127.0.0.1:{port}/mcp"} | SHARED
        yield Upstreams(entries)
    finally:
        for process in processes:
            process.terminate()
            with anyio.move_on_after(5, shield=True):
                await process.wait()


ENVELOPE = "io.modelcontextprotocol/"
"""`_meta` keys of the protocol's envelope (the answering server's `serverInfo`): each hop writes its own."""


VOLATILE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b\d{1,2}:\d{2}:\d{2}( [AP]M)?")
"""What differs between two calls of one tool anyway: session ids, and clock times (server-everything's texts)."""


def _steady(value: Any, key: str = "") -> Any:
    """`value` with its session ids and clock times masked (a `blob` is decoded first)."""
    if isinstance(value, dict):
        return {k: _steady(v, k) for k, v in cast("dict[str, Any]", value).items()}
    if isinstance(value, list):
        return [_steady(item) for item in cast("list[Any]", value)]
    if isinstance(value, str) and key == "blob":
        return _steady(base64.b64decode(value).decode("utf-8", "replace"))
    return VOLATILE.sub("<volatile>", value) if isinstance(value, str) else value


def _as_sent(result: types.CallToolResult) -> dict[str, Any]:
    """A result as it travels (its JSON, nothing added, nothing left out), without the protocol's envelope.

    The envelope: `_meta` keys under `io.modelcontextprotocol/`, the modern era's `resultType: "complete"`; and
    `isError: false`, which means the same as no `isError` (the gateway's SDK always writes it).
    """
    wire = wire_form(result)
    meta = {key: value for key, value in wire.pop("_meta", {}).items() if not key.startswith(ENVELOPE)}
    if wire.get("resultType") == "complete":
        del wire["resultType"]
    if wire.get("isError") is False:
        del wire["isError"]
    return _steady(wire | ({"_meta": meta} if meta else {}))


async def _listed(client: Client) -> dict[str, dict[str, Any]]:
    """Every listed tool (all pages) in its wire form, by name."""
    tools: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            wire = wire_form(tool)
            # `execution` (task support) is a handshake-era field; a 2026-07-28 client is never sent it.
            wire.pop("execution", None)
            tools[tool.name] = wire
        cursor = page.next_cursor
        if not cursor:
            return tools


async def _results(client: Client, calls: Sequence[Call]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Every listed tool, and the wire form of each call's result."""
    with anyio.fail_after(DEADLINE):
        names = await _listed(client)
    results: list[dict[str, Any]] = []
    for name, arguments in calls:
        with anyio.fail_after(DEADLINE):
            results.append(_as_sent(await client.call_tool(name, arguments)))
    return names, results


def _calls(upstream: Upstream) -> tuple[Call, ...]:
    return EVERYTHING_CALLS if upstream == "everything" else FIXTURE_CALLS


@pytest.mark.parametrize("front", ["stdio", "http"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("upstream", ["everything", "fixture"])
async def test_every_tool_result_crosses_the_gateway_as_the_upstream_sent_it(
    upstream: Upstream, transport: Transport, front: Transport, upstreams: Upstreams, tmp_path: Path
) -> None:
    calls = _calls(upstream)
    async with connect(upstreams.direct(upstream, transport), "auto", **FormFiller().callbacks()) as direct:
        listed, expected = await _results(direct, calls)
    # The table calls every tool the upstream lists (to a client that can elicit and sample).
    assert set(listed) - UNCALLED == {name for name, _ in calls}

    config = write_config(tmp_path, {upstream: upstreams.entries[upstream, transport]})
    async with (
        gateway(front, config, tmp_path / "state.db") as target,
        connect(target, "auto", **FormFiller().callbacks()) as through,
    ):
        offered, seen = await _results(through, calls)
    # The tools are listed as the upstream listed them (their schemas pass unchanged). The gateway may see more:
    # server-everything adds `get-roots-list` for a client with roots, as the gateway is.
    changed = {name: [tool, offered.get(name)] for name, tool in listed.items() if offered.get(name) != tool}
    assert changed == {}, json.dumps(changed)[:3000]

    differences = {
        f"{index}:{name}": {"direct": want, "gateway": got}
        for index, ((name, _), want, got) in enumerate(zip(calls, expected, seen, strict=True))
        if want != got
    }
    assert differences == {}, json.dumps(differences, indent=1)[:6000]


async def test_only_resource_uris_are_rewritten_under_a_prefix_and_they_read_back(
    upstreams: Upstreams, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"ev": upstreams.entries["everything", "http"] | {"prefix": "ev"}})
    with anyio.fail_after(DEADLINE):
        async with gateway_http(config) as base_url, connect(base_url, "auto") as client:
            embedded = await client.call_tool("ev_get-resource-reference", {"resourceType": "Text", "resourceId": 4})
            linked = await client.call_tool("ev_get-resource-links", {"count": 2})
            [link, *_] = [block for block in linked.content if isinstance(block, types.ResourceLink)]
            read = await client.read_resource(link.uri)
    [resource] = [block.resource for block in embedded.content if isinstance(block, types.EmbeddedResource)]
    assert resource.uri == "ev+demo://resource/dynamic/text/4"
    assert link.uri.startswith("ev+demo://")
    # The text around them is the upstream's, unchanged.
    assert [block.text for block in embedded.content if isinstance(block, types.TextContent)] == [
        "Returning resource reference for Resource 4:",
        "You can access this resource using the URI: demo://resource/dynamic/text/4",
    ]
    assert [contents.uri for contents in read.contents] == [link.uri]
