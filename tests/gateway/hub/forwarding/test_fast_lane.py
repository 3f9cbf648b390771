"""The fast lane: a handshake-era `tools/call` of an upstream tool relayed below the SDK's server, unseen by clients.

Every case runs the same client calls against two gateways for the same config, one with the fast lane and one
without (`fast_lane=False`: every request through the SDK), and compares what the client received field by field;
`ToolServer.relayed_calls` proves which lane answered.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import pytest
from hub_harness import (
    DEADLINE,
    FIXTURE_UPSTREAM,
    SLOW_START,
    FormFiller,
    child_env,
    connect,
    fixture_http,
    gateway_server,
    text_of,
    upstream_http,
    upstream_stdio,
    wait_for_file,
    write_config,
)
from mcp import Client, MCPError, types
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from gateway import hub
from gateway.config import load_config
from gateway.hub import gateway_tools
from gateway.hub.upstreams import UpstreamToolset
from gateway.server import ToolServer
from gateway.server.observe.observation import RequestRecord
from gateway.state import InMemoryStateStore
from gateway.tools import BaseTool, ReadonlyContext
from tests.support.client_callbacks import ClientCallbacks
from tests.support.loopback import bound_socket, free_port, serving_asgi, serving_tools
from tests.support.wire import wire_form

pytestmark = pytest.mark.anyio

FIXTURE_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
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
    ("json_schema_2020_12_tool", {"name": "Ada", "address": {"street": "1 Loop Road", "city": "Localhost"}}),
    ("test_sampling", {}),
)
"""The fixture upstream's tools (`--push`: sampling and elicitation pushed mid-call, as servers written before
2026-07-28 do): text, image, audio, embedded resource, mixed blocks, `isError`, log messages, progress,
`structuredContent`, an invalid call."""
FIXTURE_HTTP_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (*FIXTURE_CALLS, ("test_reconnection", {}))
"""Over streamable HTTP the fixture can also break a call's stream for the client to resume."""
HANDSHAKE_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@dataclass
class Lane:
    """One of the two gateways: its base URL and its server."""

    url: str
    server: ToolServer
    records: list[RequestRecord] = field(default_factory=list[RequestRecord])

    def request_done(self, record: RequestRecord) -> None:
        self.records.append(record)


@asynccontextmanager
async def lanes(config: Path, page_size: int | None = None) -> AsyncGenerator[tuple[Lane, Lane]]:
    """The gateway for `config` twice over HTTP: with the fast lane, and without it."""
    fast_server, general_server = (
        (gateway_server(config), gateway_server(config))
        if page_size is None
        else (paged(config, page_size), paged(config, page_size))
    )
    async with (
        serving_tools(fast_server) as fast_url,
        serving_tools(general_server, fast_lane=False) as general_url,
    ):
        fast, general = Lane(fast_url, fast_server), Lane(general_url, general_server)
        fast_server.observation.observers.append(fast)
        general_server.observation.observers.append(general)
        yield fast, general


def paged(config: Path, page_size: int) -> ToolServer:
    """The gateway for `config` listing `page_size` tools per page."""
    loaded = load_config(config)
    return hub.gateway_server(
        gateway_tools(loaded), name=loaded.name, state_store=InMemoryStateStore(), page_size=page_size
    )


@dataclass
class Heard:
    """What a client heard besides results: progress and log messages, in order."""

    progress: list[tuple[float, float | None, str | None]] = field(
        default_factory=list[tuple[float, float | None, str | None]]
    )
    logs: list[tuple[str, Any]] = field(default_factory=list[tuple[str, Any]])

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append((params.level, params.data))


async def _call_all(
    client: Client, calls: tuple[tuple[str, dict[str, Any]], ...], heard: Heard
) -> list[dict[str, Any]]:
    with anyio.fail_after(DEADLINE):
        # The session's first request other than `initialize` goes the general path; its calls then go fast.
        await client.list_tools()
    results: list[dict[str, Any]] = []
    for name, arguments in calls:
        with anyio.fail_after(DEADLINE):
            results.append(wire_form(await client.call_tool(name, arguments, progress_callback=heard.on_progress)))
    return results


@pytest.mark.parametrize("transport", ["stdio", "http", "fixture-http"])
async def test_the_fixture_upstreams_results_arrive_on_the_fast_lane_field_for_field_as_on_the_general_path(
    transport: str, tmp_path: Path
) -> None:
    entry: dict[str, Any] = {
        "command": sys.executable,
        "args": ["-I", str(FIXTURE_UPSTREAM), "stdio", "--push"],
        "env": child_env(),
        "prefix": "",
        **SLOW_START,
    }
    async with upstream_http() as hub_url, fixture_http("--push") as fixture_url:
        if transport == "http":
            # Our own server mode stands in for an HTTP upstream here (its tools, with our server's features).
            entry = {"url": hub_url, "prefix": "", **SLOW_START}
        elif transport == "fixture-http":
            # The SDK's MCPServer over streamable HTTP, with an event store: `test_reconnection` closes the call's
            # stream mid-call and the client resumes it with Last-Event-ID.
            entry = {"url": fixture_url, "prefix": "", **SLOW_START}
        config = write_config(tmp_path, {"fixture": entry})
        calls = {"stdio": FIXTURE_CALLS, "http": HUB_CALLS, "fixture-http": FIXTURE_HTTP_CALLS}[transport]
        seen: dict[bool, tuple[list[dict[str, Any]], Heard]] = {}
        async with lanes(config) as (fast, general):
            for lane in (fast, general):
                heard = Heard()
                async with connect(
                    lane.url, "legacy", logging_callback=heard.on_log, **FormFiller().callbacks()
                ) as client:
                    seen[lane is fast] = (await _call_all(client, calls, heard), heard)
            assert fast.server.relayed_calls == len(calls)
            assert general.server.relayed_calls == 0
            # The request log and the metrics hear of each call alike.
            observed = [
                [(r.method, r.name, r.tool, r.upstream, r.outcome) for r in lane.records] for lane in (fast, general)
            ]
            assert observed[0] == observed[1]
    (fast_results, fast_heard), (general_results, general_heard) = seen[True], seen[False]
    differences = {
        f"{index}:{name}": {"fast": got, "general": want}
        for index, ((name, _), got, want) in enumerate(zip(calls, fast_results, general_results, strict=True))
        if got != want
    }
    assert differences == {}, json.dumps(differences, indent=1)[:6000]
    assert fast_heard == general_heard
    assert fast_heard.progress or transport == "http"


HUB_CALLS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("echo", {"text": "héllo, ünïcode"}),
    ("count_up", {"steps": 3}),
    ("quiet_progress", {}),
    ("ask_name", {}),
    ("summarize", {"text": "a long story"}),
    ("peek", {"marker": "nothing"}),
    ("echo", {"text": 3}),
)
"""Our server mode's tools (`hub_upstream_tools.py`): progress with and without messages, an elicitation and a
sampling request mid-call, an invalid argument."""


async def _post(http: httpx2.AsyncClient, url: str, body: dict[str, Any], session: str | None) -> httpx2.Response:
    headers = dict(HANDSHAKE_HEADERS)
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    return await http.post(f"{url}/mcp", headers=headers, content=json.dumps(body))


async def test_a_relayed_answer_is_the_sdks_message_byte_for_byte_in_a_json_body(tmp_path: Path) -> None:
    """The SDK sends an answer as the one event of an SSE stream; the fast lane, whose answer came first, sends the
    same JSON-RPC message as an `application/json` body (either is the client's to accept), with its length."""
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url, "prefix": "up"}})
        async with lanes(config) as (fast, _general), httpx2.AsyncClient(timeout=DEADLINE) as http:
            initialize = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            }
            opened = await _post(
                http, fast.url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize}, None
            )
            session = opened.headers["mcp-session-id"]
            await _post(http, fast.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            answers: list[httpx2.Response] = []
            for request_id in (1, 2):
                # The same id both times: the first call is the SDK's (the session's first), the second relayed.
                params = {"name": "up_echo", "arguments": {"text": "héllo"}}
                call = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": params}
                answers.append(await _post(http, fast.url, call, session))
                assert fast.server.relayed_calls == request_id - 1
    sdk, relayed = answers
    assert sdk.content.startswith(b"event: message\r\ndata: ")
    assert sdk.content.endswith(b"\r\n\r\n")
    assert relayed.content == sdk.content.removeprefix(b"event: message\r\ndata: ").removesuffix(b"\r\n\r\n")
    assert relayed.content.startswith(b'{"jsonrpc":"2.0","id":8,"result":{')
    assert relayed.headers["content-type"] == "application/json"
    assert relayed.headers["content-length"] == str(len(relayed.content))
    assert relayed.headers["mcp-session-id"] == sdk.headers["mcp-session-id"] == session


def _client_ports_to(port: int) -> set[int]:
    """The local ports of this machine's IPv4 TCP sockets connected to `port`, in any state (TIME_WAIT included:
    a connection the client closed stays listed for a minute)."""
    ports: set[int] = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, remote = line.split()[1:3]
        if int(remote.rsplit(":", 1)[1], 16) == port:
            ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="counts connections in Linux's /proc/net/tcp")
async def test_an_sdk_client_keeps_its_connection_across_relayed_calls(tmp_path: Path) -> None:
    """The SDK's client closes an SSE answer as soon as it has the message, a moment before the stream's end, which
    costs it its connection: every call opened a new one. An answer sent as one JSON body is read to its end."""
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url, "prefix": "up"}})
        async with lanes(config) as (fast, _general), connect(fast.url, "legacy") as client:
            gateway_port = int(fast.url.rsplit(":", 1)[1])
            await client.list_tools()
            await client.call_tool("up_echo", {"text": "warm"})
            before = _client_ports_to(gateway_port)
            with anyio.fail_after(DEADLINE):
                for index in range(20):
                    result = await client.call_tool("up_echo", {"text": f"call {index}"})
                    assert text_of(result) == f"call {index}"
            opened = _client_ports_to(gateway_port) - before
            relayed = fast.server.relayed_calls
    assert relayed == 21
    assert opened == set()


async def _opened(http: httpx2.AsyncClient, url: str) -> str:
    """A handshake-era session opened with raw requests; its id."""
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    opened = await _post(http, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize}, None)
    session = opened.headers["mcp-session-id"]
    await _post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return session


def _message_bytes(answer: httpx2.Response) -> bytes:
    """The JSON-RPC message of an answer: a JSON body (the fast lane), or the data of its one SSE event (the SDK)."""
    if answer.headers["content-type"] == "application/json":
        return answer.content
    [event] = answer.content.removesuffix(b"\r\n\r\n").split(b"\r\n\r\n")
    return event.removeprefix(b"event: message\r\ndata: ")


async def test_warm_tool_listing_pages_come_from_the_cache_byte_for_byte_as_the_sdk_sends_them(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        async with lanes(config, page_size=4) as (fast, general), httpx2.AsyncClient(timeout=DEADLINE) as http:
            bodies: dict[str, list[bytes]] = {}
            for lane in (fast, general):
                session = await _opened(http, lane.url)
                for attempt in ("cold", "warm"):
                    cursor: str | None = None
                    while True:
                        params = {} if cursor is None else {"cursor": cursor}
                        request = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": params}
                        answer = await _post(http, lane.url, request, session)
                        message = _message_bytes(answer)
                        bodies.setdefault(f"{lane is fast}-{attempt}", []).append(message)
                        cursor = json.loads(message)["result"].get("nextCursor")
                        if cursor is None:
                            break
            assert (fast.server.relayed_listings, general.server.relayed_listings) == (3, 0)
            # The request log and the metrics hear of every page, cached or not.
            heard = [(r.method, r.outcome) for r in fast.records if r.method != "initialize"]
            assert heard == [("tools/list", "ok")] * 6
    assert len(bodies["True-cold"]) == 3
    assert bodies["True-warm"] == bodies["True-cold"] == bodies["False-warm"] == bodies["False-cold"]


async def test_an_upstream_dying_mid_call_gives_the_general_paths_error_naming_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"up": upstream_stdio(tmp_path / "up.db")})
    texts: list[str] = []
    async with lanes(config) as (fast, general):
        for lane in (fast, general):
            async with connect(lane.url, "legacy") as client:
                with anyio.fail_after(DEADLINE):
                    await client.list_tools()
                    died = await client.call_tool("up_crash", {})
                    after = await client.call_tool("up_echo", {"text": "back again"})
            assert died.is_error
            assert text_of(after) == "back again"
            texts.append(text_of(died))
        assert (fast.server.relayed_calls, general.server.relayed_calls) == (2, 0)
    assert texts[0] == texts[1]
    assert texts[0].startswith("Upstream 'up': ")


async def test_cancelling_a_relayed_call_cancels_the_upstream_tool(tmp_path: Path) -> None:
    downstream = ClientCallbacks()
    marker = tmp_path / "cancelled.txt"
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        async with lanes(config) as (fast, _general), connect(fast.url, "legacy") as client:
            with anyio.fail_after(DEADLINE):
                await client.list_tools()
                async with anyio.create_task_group() as tg:

                    async def call() -> None:
                        arguments = {"marker": str(marker)}
                        await client.call_tool("up_wait_forever", arguments, progress_callback=downstream.on_progress)

                    tg.start_soon(call)
                    await downstream.started.wait()
                    tg.cancel_scope.cancel()
                assert await wait_for_file(marker) == "cancelled"
                after = await client.call_tool("up_echo", {"text": "still here"})
            assert fast.server.relayed_calls == 2
            assert [r.outcome for r in fast.records if r.method == "tools/call"] == ["cancelled", "ok"]
    assert text_of(after) == "still here"


async def test_calls_the_gateway_must_treat_take_the_general_path(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"capped": {"url": url, "maxResultBytes": 10_000}, "open": {"url": url}})
        async with lanes(config) as (fast, _general), connect(fast.url, "legacy") as client:
            with anyio.fail_after(DEADLINE):
                await client.list_tools()
                capped = await client.call_tool("capped_echo", {"text": "capped"})
                assert fast.server.relayed_calls == 0
                keyed = await client.call_tool(
                    "open_echo", {"text": "keyed"}, meta={"adk-mcp-gateway/session": "k" * 40}
                )
                assert fast.server.relayed_calls == 0
                with pytest.raises(Exception, match="Unknown tool"):
                    await client.call_tool("open_nothing", {})
                assert fast.server.relayed_calls == 0
                relayed = await client.call_tool("open_echo", {"text": "relayed"})
                assert fast.server.relayed_calls == 1
    assert [text_of(result) for result in (capped, keyed, relayed)] == ["capped", "keyed", "relayed"]


async def test_a_relayed_call_past_the_upstreams_call_timeout_fails_as_on_the_general_path_and_is_cancelled(
    tmp_path: Path,
) -> None:
    texts: list[str] = []
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url, "callTimeout": 1.0}})
        async with lanes(config) as (fast, general):
            for lane in (fast, general):
                marker = tmp_path / f"{lane is fast}.txt"
                async with connect(lane.url, "legacy") as client:
                    with anyio.fail_after(DEADLINE):
                        await client.list_tools()
                        texts.append(await _outcome(client, "up_wait_forever", {"marker": str(marker)}))
                        after = await client.call_tool("up_echo", {"text": "still here"})
                    # The upstream was told: its tool ran until the courtesy cancellation reached it.
                    assert await wait_for_file(marker) == "cancelled"
                assert text_of(after) == "still here"
            assert (fast.server.relayed_calls, general.server.relayed_calls) == (2, 0)
    assert texts[0] == texts[1]
    assert "timed out" in texts[0]


async def _outcome(client: Client, name: str, arguments: dict[str, Any]) -> str:
    """What a call gave the client: its result's text, or the JSON-RPC error it was answered with."""
    try:
        result = await client.call_tool(name, arguments)
    except MCPError as exc:
        return f"JSON-RPC error {exc.code}: {exc.message}"
    return f"isError={result.is_error}: {text_of(result)}"


async def test_an_upstream_that_forgot_the_session_gives_the_general_paths_error_and_the_next_call_works(
    tmp_path: Path,
) -> None:
    from hub_upstream_tools import TOOLS

    texts: list[str] = []
    port = free_port()
    config = write_config(tmp_path, {"up": {"url": f"http://127.0.0.1:{port}/mcp"}})

    async def serve_upstream(
        stop: anyio.Event, stopped: anyio.Event, *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        try:
            async with serving_tools(ToolServer(TOOLS, state_store=InMemoryStateStore()), bound_socket(port)):
                task_status.started()
                await stop.wait()
        finally:
            stopped.set()

    async with anyio.create_task_group() as upstreams:
        first, first_stopped = anyio.Event(), anyio.Event()
        await upstreams.start(serve_upstream, first, first_stopped)
        async with lanes(config) as (fast, general):
            async with connect(fast.url, "legacy") as on_fast, connect(general.url, "legacy") as on_general:
                with anyio.fail_after(DEADLINE):
                    for client in (on_fast, on_general):
                        await client.list_tools()
                        assert text_of(await client.call_tool("up_echo", {"text": "first"})) == "first"
                    # The upstream restarts on the same port: it no longer knows the gateway's sessions (HTTP 404).
                    first.set()
                    await first_stopped.wait()
                    await upstreams.start(serve_upstream, anyio.Event(), anyio.Event())
                    for client in (on_fast, on_general):
                        texts.append(await _outcome(client, "up_echo", {"text": "forgotten"}))
                        assert text_of(await client.call_tool("up_echo", {"text": "again"})) == "again"
            assert (fast.server.relayed_calls, general.server.relayed_calls) == (3, 0)
        upstreams.cancel_scope.cancel()
    assert texts[0] == texts[1]
    assert "no longer knows this session" in texts[0]


def _broken_upstream(answer: str = "{not json, id {id}") -> Starlette:
    """A streamable HTTP upstream whose `tools/call` answer is `answer` (`{id}` the request's id), by default not JSON
    (it speaks just enough MCP to be listed)."""
    tool = {"name": "garbled", "inputSchema": {"type": "object"}}

    async def mcp(request: Request) -> Response:
        message = json.loads(await request.body())
        method, request_id = message.get("method"), message.get("id")
        headers = {"mcp-session-id": "broken-session"}
        if request_id is None:
            return Response(status_code=202, headers=headers)
        result: dict[str, Any]
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "broken", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [tool]}
        elif method == "tools/call":
            body = f"event: message\r\ndata: {answer.replace('{id}', json.dumps(request_id))}\r\n\r\n"
            return Response(body, media_type="text/event-stream", headers=headers)
        else:
            error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
            return JSONResponse(error, status_code=404, headers=headers)
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result}, headers=headers)

    return Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])


@pytest.mark.parametrize(
    "answer",
    [
        "{not json, id {id}",
        '{"jsonrpc":"2.0","id":{id},"result":{"content":[{"type":"text","text":"lone \\ud800"}]}}',
    ],
    ids=["not JSON", "a lone surrogate"],
)
async def test_an_upstream_answering_garbage_gives_a_parse_error_on_both_lanes_and_the_session_serves_on(
    answer: str, tmp_path: Path
) -> None:
    outcomes: list[str] = []
    async with serving_asgi(_broken_upstream(answer)) as url:
        config = write_config(tmp_path, {"up": {"url": f"{url}/mcp", "protocolVersion": "2025-11-25"}})
        async with lanes(config) as (fast, general):
            for lane in (fast, general):
                async with connect(lane.url, "legacy") as client:
                    with anyio.fail_after(DEADLINE):
                        await client.list_tools()
                        outcomes.append(await _outcome(client, "up_garbled", {}))
                        assert [tool.name for tool in (await client.list_tools()).tools] == ["up_garbled"]
            assert (fast.server.relayed_calls, general.server.relayed_calls) == (1, 0)
    # The SDK words the parser's complaint in its own way; what the client is told is the same kind of failure.
    assert [outcome.split(": ", 2)[:2] for outcome in outcomes] == [outcomes[1].split(": ", 2)[:2]] * 2
    assert "Failed to parse SSE message" in outcomes[0]


@pytest.mark.parametrize("options", [{}, {"denyTools": ["touch"]}], ids=["all tools", "denyTools"])
async def test_a_warm_listing_asks_no_upstream_toolset_and_a_list_change_is_seen_by_its_own_session_only(
    options: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A view of the catalog is reused while every upstream's cached listing is the one it was made from: a warm
    page asks none of the toolsets (a thousand-tool listing spent half its time there), and an upstream's
    `list_changed` (here in one client's isolated upstream session) is a new view for that session alone."""
    asked: list[str] = []
    listing = UpstreamToolset.get_tools

    async def counted(self: UpstreamToolset, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        asked.append(self.key)
        return await listing(self, readonly_context)

    monkeypatch.setattr(UpstreamToolset, "get_tools", counted)
    notifying = [sys.executable, "-I", str(Path(__file__).parent.parent / "hub_notifying_server.py")]
    config = write_config(tmp_path, {"n": {"command": notifying[0], "args": notifying[1:], **options}})
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with (
        serving_tools(gateway_server(config)) as url,
        connect(url, "legacy", message_handler=on_message) as a,
        connect(url, "legacy") as b,
    ):
        with anyio.fail_after(DEADLINE * 2):
            first = [tool.name for tool in (await a.list_tools()).tools]
            others_first = [tool.name for tool in (await b.list_tools()).tools]
            # Listed again from the upstreams' cached listings; from then on, each session's view is known.
            await a.list_tools()
            await b.list_tools()
            asked.clear()
            assert [tool.name for tool in (await a.list_tools()).tools] == first
            assert [tool.name for tool in (await b.list_tools()).tools] == others_first
            warm_asks = list(asked)
            await a.call_tool("n_grow", {})
            await changed.wait()
            grown = [tool.name for tool in (await a.list_tools()).tools]
            others_after = [tool.name for tool in (await b.list_tools()).tools]
    assert warm_asks == []
    assert ("n_touch" in first) is not options
    [added] = set(grown) - set(first)  # `grow` names the tool after the upstream's count of tools
    assert added.startswith("n_extra_")
    assert sorted(grown) == sorted([*first, added])
    assert others_after == others_first == first


def _tools_call(request_id: int, name: str, arguments_json: str) -> bytes:
    """A `tools/call` body whose arguments are the JSON text `arguments_json`, as sent (not re-encoded)."""
    params = f'{{"name":{json.dumps(name)},"arguments":{arguments_json}}}'
    return f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}}}'.encode()


async def _post_bytes(http: httpx2.AsyncClient, url: str, body: bytes, session: str, **headers: str) -> httpx2.Response:
    sent = HANDSHAKE_HEADERS | {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"} | headers
    return await http.post(f"{url}/mcp", headers=sent, content=body)


async def _called(http: httpx2.AsyncClient, url: str, session: str, name: str, arguments: dict[str, Any]) -> Any:
    """The structured result of a call sent with raw requests."""
    answer = await _post_bytes(http, url, _tools_call(50, name, json.dumps(arguments)), session)
    return json.loads(_message_bytes(answer))["result"]["structuredContent"]["result"]


async def test_a_lone_surrogate_in_arguments_is_a_parse_error_on_both_lanes_and_the_shared_upstream_serves_on(
    tmp_path: Path,
) -> None:
    """Python's `json` reads `"\\ud800"` as a string no UTF-8 writer can send: a stdio upstream's writer failed on
    it and ended the upstream session every client shares (one restart per such request)."""
    config = write_config(tmp_path, {"up": upstream_stdio(tmp_path / "up.db", sessionPolicy="shared")})
    refused: dict[bool, list[tuple[int, Any]]] = {}
    async with lanes(config) as (fast, general), httpx2.AsyncClient(timeout=DEADLINE) as http:
        for lane in (fast, general):
            session = await _opened(http, lane.url)
            with anyio.fail_after(DEADLINE):
                await _post(http, lane.url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
                before = await _called(http, lane.url, session, "up_process_id", {})
                answers = [
                    await _post_bytes(http, lane.url, _tools_call(index, "up_echo", '{"text":"\\ud800"}'), session)
                    for index in range(3)
                ]
                after = await _called(http, lane.url, session, "up_process_id", {})
                echoed = await _called(http, lane.url, session, "up_echo", {"text": "still one session"})
            refused[lane is fast] = [(answer.status_code, answer.json()) for answer in answers]
            assert after == before
            assert echoed == "still one session"
        assert (fast.server.relayed_calls, general.server.relayed_calls) == (3, 0)
    assert refused[True] == refused[False]
    [(status, error)] = set((status, json.dumps(body)) for status, body in refused[True])
    assert status == 400
    assert json.loads(error)["error"]["code"] == types.PARSE_ERROR
    assert json.loads(error)["id"] is None


@pytest.mark.parametrize(
    "body",
    [
        _tools_call(9, "up_echo", '{"text":"utf-16"}').decode().encode("utf-16"),
        _tools_call(9, "up_echo", '{"text":"utf-32"}').decode().encode("utf-32"),
        b"\xef\xbb\xbf" + _tools_call(9, "up_echo", '{"text":"byte order mark"}'),
        _tools_call(9, "up_echo", '{"text":NaN}'),
        _tools_call(9, "up_echo", '{"text":-Infinity}'),
        _tools_call(9, "up_echo", '{"text":1e400}'),
        _tools_call(9, "up_echo", '{"text":1' + "0" * 250 + "e99}"),
        _tools_call(9, "up_echo", '{"text":1' + "0" * 300 + ".5E+9}"),
    ],
    ids=[
        "utf-16",
        "utf-32",
        "utf-8 with a byte order mark",
        "NaN",
        "-Infinity",
        "a number past a double",
        "a number past a double by a long mantissa and a two-digit exponent",
        "a number past a double by a long mantissa and a one-digit exponent",
    ],
)
async def test_a_body_that_is_not_strict_utf_8_json_is_a_parse_error_on_both_lanes(body: bytes, tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        async with lanes(config) as (fast, general), httpx2.AsyncClient(timeout=DEADLINE) as http:
            answers: list[httpx2.Response] = []
            for lane in (fast, general):
                session = await _opened(http, lane.url)
                with anyio.fail_after(DEADLINE):
                    await _post(http, lane.url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
                    answers.append(await _post_bytes(http, lane.url, body, session))
                    echoed = await _called(http, lane.url, session, "up_echo", {"text": "served on"})
                assert echoed == "served on"
            assert (fast.server.relayed_calls, general.server.relayed_calls) == (1, 0)
    assert [answer.status_code for answer in answers] == [400, 400]
    assert [answer.json()["error"]["code"] for answer in answers] == [types.PARSE_ERROR] * 2
    assert answers[0].json() == answers[1].json()


async def _next_message(lines: Any) -> dict[str, Any]:
    """The next JSON-RPC message of an SSE stream's lines."""
    async for line in lines:
        if line.startswith("data: "):
            return json.loads(line.removeprefix("data: "))
    raise AssertionError("the stream ended without another message")


@pytest.mark.parametrize("what", ["answer", "cancellation"])
async def test_a_clients_answer_or_cancellation_from_a_foreign_host_is_refused_on_the_fast_lane(
    what: str, tmp_path: Path
) -> None:
    """An answer to what the upstream asked mid-call, or a cancellation of a relayed call, is routed by the fast lane
    and so gets the Host/Origin check the SDK applies to every POST (421 for a foreign Host, as the SDK answers)."""
    marker = tmp_path / "cancelled.txt"
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        async with lanes(config) as (fast, _general), httpx2.AsyncClient(timeout=DEADLINE) as http:
            initialize = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "raw", "version": "1"},
            }
            opened = await _post(
                http, fast.url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize}, None
            )
            session = opened.headers["mcp-session-id"]
            await _post(http, fast.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
            await _post(http, fast.url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session)
            if what == "answer":
                call = _tools_call(7, "up_ask_name", "{}")
            else:
                arguments = json.dumps({"marker": str(marker)})
                call = _tools_call(7, "up_wait_forever", arguments).replace(
                    b'"arguments"', b'"_meta":{"progressToken":"p"},"arguments"'
                )
            headers = HANDSHAKE_HEADERS | {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
            with anyio.fail_after(DEADLINE):
                async with http.stream("POST", f"{fast.url}/mcp", headers=headers, content=call) as stream:
                    lines = stream.aiter_lines()
                    asked = await _next_message(lines)
                    if what == "answer":
                        reply = {"action": "accept", "content": {"name": "Ada"}}
                        message = {"jsonrpc": "2.0", "id": asked["id"], "result": reply}
                    else:
                        message = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
                    body = json.dumps(message).encode()
                    foreign = await _post_bytes(http, fast.url, body, session, host="evil.example")
                    own = await _post_bytes(http, fast.url, body, session)
                    answered = await _next_message(lines)
            assert fast.server.relayed_calls == 1
    assert (foreign.status_code, own.status_code) == (421, 202)
    if what == "answer":
        assert answered["result"]["structuredContent"] == {"action": "accept", "name": "Ada"}
    else:
        assert answered["error"]["code"] == -32800
