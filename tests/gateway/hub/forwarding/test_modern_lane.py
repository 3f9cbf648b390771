"""A default (2026-07-28, sessionless) `mcp.Client` call of an upstream tool takes the plain path too.

`ToolServer.relayed_calls` counts the calls a lane answered below the SDK's server; the tests count those (and the
upstream processes started), never time. What the lane cannot finish itself continues on the general path: a
modern upstream's `InputRequiredResult` reaches the client with a sealed `requestState` whose next round the
general path serves, and a client that declared something an upstream may ask mid-call is served there from the
start (its questions need a held call). Each case that compares answers runs the same calls against a second
gateway whose plain path is closed (a middleware appended to its SDK server, which no guard speaks for).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import DEADLINE, HERE, ROOT, connect, gateway_server, text_of, write_config
from mcp import Client, MCPError, types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from gateway.server import ToolServer
from tests.support.client_callbacks import ClientCallbacks
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

MODERN_UPSTREAM: dict[str, Any] = {
    "command": sys.executable,
    "args": ["-I", str(ROOT / "tests/conformance/fixture_upstream.py"), "stdio"],
    "prefix": "",
    "protocolVersion": "2026-07-28",
    "listTimeout": DEADLINE,
}
NOTIFYING: dict[str, Any] = {"command": sys.executable, "args": ["-I", str(HERE / "hub_notifying_server.py")]}


async def _general_path(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware no guard speaks for: while it is in the SDK server's list, every call takes the general path."""
    return await call_next(ctx)


@asynccontextmanager
async def gateways(config: Path) -> AsyncGenerator[tuple[tuple[ToolServer, str], tuple[ToolServer, str]]]:
    """Two gateways for `config`, served over HTTP: one with its plain path open, one with it closed."""
    laned, general = gateway_server(config), gateway_server(config)
    general.server.middleware.append(_general_path)
    async with serving_tools(laned) as laned_url, serving_tools(general) as general_url:
        yield (laned, laned_url), (general, general_url)


def started_in(started: Path) -> int:
    """How many upstream processes the tiny server has started so far."""
    return len(started.read_text().split()) if started.exists() else 0


async def call_round(
    client: Client, name: str, responses: dict[str, Any] | None = None, state: str | None = None
) -> types.CallToolResult | types.InputRequiredResult:
    """One round of `tools/call`, its `InputRequiredResult` returned rather than answered."""
    return await client.session.call_tool(
        name, {}, input_responses=responses, request_state=state, allow_input_required=True
    )


async def test_a_default_clients_calls_of_a_stdio_upstream_tool_take_the_plain_path(tmp_path: Path) -> None:
    started = tmp_path / "started"
    tiny = {"command": sys.executable, "args": ["-I", "-S", str(HERE / "hub_tiny_server.py"), str(started)]}
    tool_server = gateway_server(write_config(tmp_path, {"tiny": tiny}))
    with anyio.fail_after(DEADLINE * 2):
        async with serving_tools(tool_server) as base_url, connect(base_url, "auto") as client:
            assert client.protocol_version == "2026-07-28"
            await client.call_tool("tiny_pong", {})
            relayed, processes = tool_server.relayed_calls, started_in(started)
            texts = [text_of(await client.call_tool("tiny_pong", {})) for _ in range(10)]
            relayed, processes = tool_server.relayed_calls - relayed, started_in(started) - processes
            warm = tool_server.upstream_status()["tiny"]["warm"]
    assert texts == ["pong"] * 10
    assert relayed == 10  # every call on the plain path ...
    assert processes == 0  # ... on a warm upstream session, given back after each call
    assert warm == {"lent": 0, "free": 1, "kept": 2}


async def test_a_plain_path_answer_is_the_general_paths(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": MODERN_UPSTREAM})
    names = ["test_simple_text", "test_image_content", "test_multiple_content_types", "test_error_handling"]
    with anyio.fail_after(DEADLINE * 2):
        async with gateways(config) as ((laned, laned_url), (general, general_url)):
            answers: list[list[dict[str, Any]]] = []
            for url in (laned_url, general_url):
                async with connect(url, "auto") as client:
                    results = [await client.call_tool(name, {}) for name in names]
                answers.append([result.model_dump(by_alias=True, exclude_none=True) for result in results])
    assert answers[0] == answers[1]
    assert (laned.relayed_calls, general.relayed_calls) == (len(names), 0)


async def test_a_modern_upstreams_input_required_result_round_trips_from_the_plain_path(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": MODERN_UPSTREAM})
    name = "test_input_required_result_elicitation"
    with anyio.fail_after(DEADLINE * 2):
        async with gateways(config) as ((laned, laned_url), _), connect(laned_url, "auto") as client:
            asked = await call_round(client, name)
            relayed_first = laned.relayed_calls
            assert isinstance(asked, types.InputRequiredResult)
            assert asked.request_state is not None  # the gateway's own, sealed, however the upstream's looked
            answered = await call_round(
                client,
                name,
                {"user_name": types.ElicitResult(action="accept", content={"name": "Alice"})},
                asked.request_state,
            )
            with pytest.raises(MCPError) as tampered:
                await call_round(client, name, {"user_name": {"action": "decline"}}, f"{asked.request_state}x")
    # The first round on the plain path, its state sealed as the general path seals it; the rounds after it there.
    assert relayed_first == 1
    assert laned.relayed_calls == 1
    request = asked.input_requests["user_name"]
    assert isinstance(request, types.ElicitRequest)
    assert request.params.message == "What is your name?"
    assert isinstance(answered, types.CallToolResult)
    assert text_of(answered) == "Hello, Alice!"
    assert tampered.value.code == types.INVALID_PARAMS


async def test_the_upstream_sees_what_the_client_declared_not_the_gateway(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fx": MODERN_UPSTREAM})
    with anyio.fail_after(DEADLINE * 2):
        async with gateways(config) as ((laned, laned_url), (_, general_url)):
            errors: list[types.ErrorData] = []
            for url in (laned_url, general_url):
                async with connect(url, "auto") as client:
                    with pytest.raises(MCPError) as refused:
                        await call_round(client, "test_missing_capability")
                errors.append(refused.value.error)
    assert errors[0].code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert errors[0] == errors[1]
    assert laned.relayed_calls == 1


async def test_a_handshake_upstream_asking_mid_call_is_answered_in_rounds_or_refused_as_on_the_general_path(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"n": NOTIFYING})
    downstream = ClientCallbacks(name="Ada")
    with anyio.fail_after(DEADLINE * 2):
        async with gateways(config) as ((laned, laned_url), (_, general_url)):
            async with connect(laned_url, "auto", **downstream.callbacks()) as asking:
                answered = await asking.call_tool("n_ask_name", {})
            relayed_asking = laned.relayed_calls
            refusals: list[str] = []
            for url in (laned_url, general_url):
                async with connect(url, "auto") as plain:
                    refusals.append(text_of(await plain.call_tool("n_ask_name", {})))
    # A client that can be asked is served on the general path, its upstream call held across its rounds ...
    assert text_of(answered) == "accept:Ada accept:Ada"
    assert downstream.asked == ["What is your name?", "And your friend's?"]
    assert relayed_asking == 0
    # ... one that declared nothing takes the plain path, and its upstream hears the general path's refusal.
    assert laned.relayed_calls == 1
    assert refusals[0] == refusals[1]
    assert refusals[0].startswith("error:")
    assert "elicitation" in refusals[0]
