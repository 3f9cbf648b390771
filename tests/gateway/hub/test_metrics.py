"""`GET /metrics`: the gateway's requests, sessions and upstreams in the Prometheus text format, scraped over HTTP."""

from __future__ import annotations

import functools
import secrets
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hub_harness import (
    DEADLINE,
    LOCAL_TOOLS,
    connect,
    gateway_server,
    upstream_stdio,
    write_config,
)
from mcp import MCPError, types
from mcp.client.context import ClientRequestContext
from prometheus_client.parser import text_string_to_metric_families

from gateway.cli import main
from gateway.server import serve_async
from tests.support.client_callbacks import ClientCallbacks
from tests.support.loopback import bound_socket, serving_tools

pytestmark = pytest.mark.anyio

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(exposition: str) -> Samples:
    """Every sample of a scrape, by name and labels."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def series(samples: Samples, name: str) -> list[dict[str, str]]:
    return [dict(labels) for (sample_name, labels) in samples if sample_name == name]


@asynccontextmanager
async def metered_gateway(tmp_path: Path, **options: Any) -> AsyncGenerator[str]:
    """A gateway with a stdio upstream `up` and the local tools, serving `/metrics`; yields its base URL."""
    upstream = upstream_stdio(tmp_path / "upstream.db", sessionPolicy="shared")
    config = write_config(tmp_path, {"up": upstream}, tools=[LOCAL_TOOLS])
    async with serving_tools(gateway_server(config), metrics=True, **options) as base_url:
        yield base_url


async def scrape(base_url: str, **headers: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=DEADLINE) as http:
        return await http.get(f"{base_url}/metrics", headers=headers)


async def test_metrics_count_requests_by_method_tool_upstream_and_outcome(tmp_path: Path) -> None:
    secret_argument = secrets.token_hex(8)
    invented = f"no_such_tool_{secrets.token_hex(4)}"
    async with metered_gateway(tmp_path) as base_url:
        with anyio.fail_after(DEADLINE):
            async with connect(base_url, "legacy") as client:
                assert not (await client.call_tool("shout", {"text": secret_argument})).is_error
                for _ in range(2):
                    assert not (await client.call_tool("up_echo", {"text": secret_argument})).is_error
                assert (await client.call_tool("up_echo", {})).is_error
                with pytest.raises(MCPError):
                    await client.call_tool(invented, {"text": secret_argument})
                response = await scrape(base_url)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = parse(response.text)
    requests = "adk_mcp_gateway_requests_total"
    call = {"method": "tools/call"}
    assert value(samples, requests, **call, tool="shout", upstream="", outcome="ok") == 1
    assert value(samples, requests, **call, tool="up_echo", upstream="up", outcome="ok") == 2
    assert value(samples, requests, **call, tool="up_echo", upstream="up", outcome="tool_error") == 1
    assert value(samples, requests, **call, tool="_unknown", upstream="", outcome="unknown_tool") == 1
    assert value(samples, requests, method="initialize", tool="", upstream="", outcome="ok") == 1
    durations = "adk_mcp_gateway_request_duration_seconds_count"
    assert value(samples, durations, **call, tool="up_echo", upstream="up") == 3
    assert value(samples, "adk_mcp_gateway_sessions_open") == 1
    assert value(samples, "adk_mcp_gateway_tool_calls_in_flight") == 0
    assert value(samples, "adk_mcp_gateway_held_calls") == 0
    assert value(samples, "adk_mcp_gateway_upstream_state", upstream="up", state="connected") == 1
    assert value(samples, "adk_mcp_gateway_upstream_state", upstream="up", state="failing") == 0
    assert value(samples, "adk_mcp_gateway_upstream_sessions", upstream="up") == 1
    assert value(samples, "adk_mcp_gateway_upstream_reconnects_total", upstream="up") == 0
    # Nothing a client sent shows: neither arguments nor the names it made up.
    assert secret_argument not in response.text
    assert invented not in response.text


async def test_tool_names_a_client_invents_collapse_into_one_series(tmp_path: Path) -> None:
    async with metered_gateway(tmp_path) as base_url:
        with anyio.fail_after(DEADLINE):
            async with connect(base_url, "legacy") as client:
                for index in range(50):
                    with pytest.raises(MCPError):
                        await client.call_tool(f"invented_{index}", {})
                # A method the protocol does not define is one series too, whatever its name.
                for index in range(5):
                    with pytest.raises(MCPError):
                        await client.session.send_request(
                            types.Request[dict[str, Any], str](method=f"made/up/{index}", params={}), types.EmptyResult
                        )
                response = await scrape(base_url)
    samples = parse(response.text)
    calls = [labels for labels in series(samples, "adk_mcp_gateway_requests_total") if labels["method"] == "tools/call"]
    assert calls == [{"method": "tools/call", "tool": "_unknown", "upstream": "", "outcome": "unknown_tool"}]
    assert value(samples, "adk_mcp_gateway_requests_total", **calls[0]) == 50
    assert "invented_" not in response.text
    assert "made/up" not in response.text
    assert (
        value(
            samples, "adk_mcp_gateway_requests_total", method="_other", tool="", upstream="", outcome="method_not_found"
        )
        == 5
    )


async def test_an_upstream_that_lost_its_session_counts_a_reconnect(tmp_path: Path) -> None:
    async with metered_gateway(tmp_path) as base_url:
        with anyio.fail_after(DEADLINE):
            async with connect(base_url, "legacy") as client:
                first = await client.call_tool("up_process_id", {})
                crashed = await client.call_tool("up_crash", {})
                second = await client.call_tool("up_process_id", {})
                response = await scrape(base_url)
    assert crashed.is_error
    assert first.structured_content != second.structured_content
    samples = parse(response.text)
    assert value(samples, "adk_mcp_gateway_upstream_reconnects_total", upstream="up") == 1
    assert value(samples, "adk_mcp_gateway_upstream_state", upstream="up", state="connected") == 1


async def test_held_calls_show_while_a_modern_client_is_asked(tmp_path: Path) -> None:
    downstream = ClientCallbacks()
    during: list[httpx2.Response] = []
    async with metered_gateway(tmp_path) as base_url:

        async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
            during.append(await scrape(base_url))
            return await downstream.elicit(context, params)

        with anyio.fail_after(DEADLINE):
            async with connect(base_url, "auto", elicitation_callback=elicit) as client:
                result = await client.call_tool("up_ask_name", {})
                after = parse((await scrape(base_url)).text)
    assert not result.is_error
    held = parse(during[0].text)
    assert value(held, "adk_mcp_gateway_held_calls") == 1
    assert value(after, "adk_mcp_gateway_held_calls") == 0
    call = {"method": "tools/call", "tool": "up_ask_name", "upstream": "up"}
    assert value(after, "adk_mcp_gateway_requests_total", **call, outcome="input_required") == 1
    assert value(after, "adk_mcp_gateway_requests_total", **call, outcome="ok") == 1


async def test_metrics_need_their_own_token_when_one_is_set(tmp_path: Path) -> None:
    metrics_token = secrets.token_urlsafe(24)
    mcp_token = secrets.token_urlsafe(24)
    async with metered_gateway(tmp_path, metrics_token=metrics_token, auth_tokens={mcp_token: "alice"}) as base_url:
        anonymous = await scrape(base_url)
        with_mcp_token = await scrape(base_url, authorization=f"Bearer {mcp_token}")
        with_metrics_token = await scrape(base_url, authorization=f"Bearer {metrics_token}")
        async with httpx2.AsyncClient(timeout=DEADLINE) as http:
            # The metrics token opens nothing else.
            mcp = await http.post(
                f"{base_url}/mcp",
                headers={"authorization": f"Bearer {metrics_token}", "accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
    assert anonymous.status_code == 401
    assert with_mcp_token.status_code == 401
    assert with_metrics_token.status_code == 200
    assert "adk_mcp_gateway_requests_total" in with_metrics_token.text
    assert mcp.status_code == 401


async def test_metrics_are_served_only_when_asked_for(tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    async with serving_tools(gateway_server(config)) as base_url:
        response = await scrape(base_url)
    assert response.status_code == 404


async def test_a_foreign_host_header_is_refused(tmp_path: Path) -> None:
    async with metered_gateway(tmp_path) as base_url:
        response = await scrape(base_url, host="attacker.example")
    assert response.status_code in (403, 421)


async def test_a_metrics_listener_of_its_own_serves_metrics_and_nothing_else(tmp_path: Path) -> None:
    with bound_socket() as metrics_sock:
        metrics_url = f"http://127.0.0.1:{metrics_sock.getsockname()[1]}"
        async with metered_gateway(tmp_path, metrics_sock=metrics_sock) as base_url:
            own = await scrape(metrics_url)
            on_the_mcp_port = await scrape(base_url)
            async with httpx2.AsyncClient(timeout=DEADLINE) as http:
                mcp_there = await http.post(
                    f"{metrics_url}/mcp",
                    headers={"accept": "application/json, text/event-stream"},
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                )
                healthz_there = await http.get(f"{metrics_url}/healthz")
    assert own.status_code == 200
    assert "adk_mcp_gateway_requests_total" in own.text
    assert on_the_mcp_port.status_code == 404
    assert mcp_there.status_code == 404
    assert healthz_there.status_code == 404


def outward_address() -> str | None:
    """This machine's address on its default route (a UDP `connect` sends nothing), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("203.0.113.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") else address


async def test_without_a_token_metrics_answer_loopback_clients_only(tmp_path: Path) -> None:
    address = outward_address()
    if address is None:
        pytest.skip("this machine has no address besides loopback")
    metrics_token = secrets.token_urlsafe(24)
    config = write_config(tmp_path, {})
    for token, expected in ((None, 403), (metrics_token, 200)):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((address, 0))
            sock.listen(16)
            url = f"http://{address}:{sock.getsockname()[1]}"
            options: dict[str, Any] = {"metrics": True, "allowed_hosts": [address], "sock": sock}
            if token is not None:
                options["metrics_token"] = token
            async with anyio.create_task_group() as tg:
                serving = functools.partial(serve_async, gateway_server(config), transport="http", auth_tokens={})
                tg.start_soon(functools.partial(serving, **options))
                headers = {"authorization": f"Bearer {token}"} if token else {}
                # The client connects from this machine's outward address, not from loopback.
                response = await scrape(url, **headers)
                tg.cancel_scope.cancel()
        assert response.status_code == expected, response.text


def test_metrics_are_refused_with_several_workers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, {}, tools=[LOCAL_TOOLS])
    argv = ["serve", str(config), "--transport", "http", "--workers", "2", "--state", str(tmp_path / "state.db")]
    for flags in (["--metrics"], ["--metrics-port", "0"]):
        assert main([*argv, *flags]) == 2
        assert "--metrics cannot be combined with --workers" in capsys.readouterr().err


async def test_warm_upstream_sessions_and_the_session_limit_show(tmp_path: Path) -> None:
    upstream = upstream_stdio(tmp_path / "upstream.db", maxSessions=5)
    config = write_config(tmp_path, {"up": upstream})
    async with serving_tools(gateway_server(config), metrics=True) as base_url:
        with anyio.fail_after(DEADLINE):
            async with connect(base_url, "auto") as client:
                assert not (await client.call_tool("up_echo", {"text": "hi"})).is_error
                samples = parse((await scrape(base_url)).text)
    assert value(samples, "adk_mcp_gateway_upstream_warm_sessions", upstream="up", use="free") == 1
    assert value(samples, "adk_mcp_gateway_upstream_warm_sessions", upstream="up", use="lent") == 0
    assert value(samples, "adk_mcp_gateway_upstream_session_limit", upstream="up") == 5
