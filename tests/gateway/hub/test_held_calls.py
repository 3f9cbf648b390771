"""An upstream that asks mid-call, and a modern (2026-07-28) client that can only answer between rounds.

The upstream's push `elicitation/create` / `sampling/createMessage` (or a modern upstream's own
`InputRequiredResult`) reaches the modern client as an `InputRequiredResult`; the client's next round carries the
answer back to the upstream, whose call was held open meanwhile and is never sent twice.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import (
    DEADLINE,
    HERE,
    Mode,
    connect,
    gateway_server,
    text_of,
    upstream_http,
    write_config,
)
from mcp import MCPError, types
from mcp.client.context import ClientRequestContext

from gateway import hub
from gateway.client.sessions.limits import SESSION_LIMIT
from gateway.config import load_config
from gateway.hub import Hub, gateway_tools
from gateway.hub.held_calls import HeldCalls
from gateway.server import ToolServer
from gateway.state import InMemoryStateStore
from tests.support.client_callbacks import ClientCallbacks
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

NOTIFYING = {"command": sys.executable, "args": ["-I", str(HERE / "hub_notifying_server.py")]}
NAME_ANSWER = types.ElicitResult(action="accept", content={"name": "Ada"})


def held_calls_of(tool_server: ToolServer) -> HeldCalls:
    hub = tool_server.extension
    assert isinstance(hub, Hub)
    return hub.held_calls


async def test_a_push_elicitation_reaches_a_modern_client_in_rounds_and_the_upstream_call_runs_once(
    tmp_path: Path,
) -> None:
    downstream = ClientCallbacks(name="Ada")
    config = write_config(tmp_path, {"n": NOTIFYING})
    with anyio.fail_after(DEADLINE):
        async with (
            serving_tools(gateway_server(config)) as base_url,
            connect(base_url, "auto", **downstream.callbacks()) as client,
        ):
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("n_ask_name", {})
    # One upstream call saw both answers: the gateway held it open across the client's rounds.
    assert text_of(result) == "accept:Ada accept:Ada"
    assert downstream.asked == ["What is your name?", "And your friend's?"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_push_url_elicitation_reaches_the_client_in_either_era(mode: Mode, tmp_path: Path) -> None:
    asked: list[types.ElicitRequestURLParams] = []

    async def visit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        assert isinstance(params, types.ElicitRequestURLParams)
        asked.append(params)
        return types.ElicitResult(action="accept")

    config = write_config(tmp_path, {"n": NOTIFYING})
    with anyio.fail_after(DEADLINE):
        async with (
            serving_tools(gateway_server(config)) as base_url,
            connect(base_url, mode, elicitation_callback=visit) as client,
        ):
            result = await client.call_tool("n_ask_url", {})
    assert text_of(result) == "accept"
    [params] = asked
    assert (params.message, params.url) == ("Sign in first.", "https://example.com/sign-in")


async def test_a_push_sampling_request_reaches_a_modern_client(tmp_path: Path) -> None:
    downstream = ClientCallbacks(summary="hi there")
    config = write_config(tmp_path, {"n": NOTIFYING})
    with anyio.fail_after(DEADLINE):
        async with (
            serving_tools(gateway_server(config)) as base_url,
            connect(base_url, "auto", **downstream.callbacks()) as client,
        ):
            result = await client.call_tool("n_ask_model", {})
    assert (result.is_error, text_of(result)) == (False, "hi there")
    [asked] = downstream.samplings
    assert asked.max_tokens == 20


async def test_a_modern_upstreams_question_reaches_a_modern_client(tmp_path: Path) -> None:
    downstream = ClientCallbacks(name="Grace")
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        with anyio.fail_after(DEADLINE):
            async with (
                serving_tools(gateway_server(config)) as base_url,
                connect(base_url, "auto", **downstream.callbacks()) as client,
            ):
                named = await client.call_tool("up_ask_name", {})
    assert named.structured_content == {"action": "accept", "name": "Grace"}
    assert downstream.asked == ["What is your name?"]


async def first_round(client: Any) -> types.InputRequiredResult:
    """Call `n_ask_name` and stop at its first `InputRequiredResult` (without answering; the client must declare
    elicitation, or the gateway refuses to ask it)."""
    outcome = await client.session.call_tool("n_ask_name", {}, allow_input_required=True)
    assert isinstance(outcome, types.InputRequiredResult)
    return outcome


async def test_another_session_cannot_resume_a_held_call(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"n": NOTIFYING})
    tool_server = gateway_server(config)
    with anyio.fail_after(DEADLINE):
        async with (
            serving_tools(tool_server) as base_url,
            connect(base_url, "auto", **ClientCallbacks().callbacks()) as owner,
            connect(base_url, "auto", **ClientCallbacks().callbacks()) as other,
        ):
            asked = await first_round(owner)
            [key] = asked.input_requests or {}
            meta: Any = {"adk-mcp-gateway/session": "someone-else"}
            with pytest.raises(MCPError, match="belongs to a call of another session"):
                await other.session.call_tool(
                    "n_ask_name",
                    {},
                    input_responses={key: NAME_ANSWER},
                    request_state=asked.request_state,
                    meta=meta,
                    allow_input_required=True,
                )
            assert len(held_calls_of(tool_server)) == 1


async def test_a_held_call_whose_client_never_returns_is_abandoned(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"n": NOTIFYING})
    tool_server = gateway_server(config)
    held_calls_of(tool_server).ttl = 0.2
    with anyio.fail_after(DEADLINE):
        async with (
            serving_tools(tool_server) as base_url,
            connect(base_url, "auto", **ClientCallbacks().callbacks()) as client,
        ):
            asked = await first_round(client)
            while len(held_calls_of(tool_server)):  # noqa: ASYNC110 - the expiry has no event to wait on
                await anyio.sleep(0.05)
            [key] = asked.input_requests or {}
            with pytest.raises(MCPError, match="held call this round answers is gone"):
                await client.session.call_tool(
                    "n_ask_name",
                    {},
                    input_responses={key: NAME_ANSWER},
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
            # The upstream session that carried the abandoned call still works.
            assert text_of(await client.call_tool("n_roots_changes", {})) == "0"


async def test_a_held_calls_round_that_reaches_another_replica_fails_at_once_and_can_be_sent_again(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"n": NOTIFYING})
    loaded = load_config(config)
    keys = ["replicas-share-this-sealing-key-0123456789"]

    def replica() -> ToolServer:
        return hub.gateway_server(
            gateway_tools(loaded), name=loaded.name, state_store=InMemoryStateStore(), request_state_keys=keys
        )

    with anyio.fail_after(DEADLINE):
        async with (
            serving_tools(replica()) as holding_url,
            serving_tools(replica()) as other_url,
            # The callbacks advertise elicitation; the rounds below are sent by hand.
            connect(holding_url, "auto", **ClientCallbacks(name="Ada").callbacks()) as on_holding,
            connect(other_url, "auto", **ClientCallbacks(name="Ada").callbacks()) as on_other,
        ):
            first = await on_holding.session.call_tool("n_ask_name", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            assert first.input_requests is not None
            (key,) = first.input_requests
            round_two: dict[str, Any] = {
                "input_responses": {key: NAME_ANSWER},
                "request_state": first.request_state,
                "allow_input_required": True,
            }
            with pytest.raises(MCPError) as refused:
                await on_other.session.call_tool("n_ask_name", {}, **round_two)
            assert "another gateway replica" in refused.value.message
            assert isinstance(refused.value.error.data, dict)
            assert refused.value.error.data["retryable"] is True
            # The same round, sent again to the replica holding the call, continues it.
            second = await on_holding.session.call_tool("n_ask_name", {}, **round_two)
            assert isinstance(second, types.InputRequiredResult)
            assert second.input_requests is not None
            (next_key,) = second.input_requests
            done = await on_holding.session.call_tool(
                "n_ask_name",
                {},
                input_responses={next_key: NAME_ANSWER},
                request_state=second.request_state,
                allow_input_required=True,
            )
    assert isinstance(done, types.CallToolResult)
    assert text_of(done) == "accept:Ada accept:Ada"


async def test_past_a_clients_cap_of_held_calls_the_newest_call_gets_an_error_naming_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"n": NOTIFYING})
    tool_server = gateway_server(config)
    held_calls_of(tool_server).max_per_client = 2
    with anyio.fail_after(DEADLINE):
        async with (
            serving_tools(tool_server) as base_url,
            connect(base_url, "auto", **ClientCallbacks().callbacks()) as client,
        ):
            await first_round(client)
            await first_round(client)
            with pytest.raises(MCPError) as refused:
                await first_round(client)
            assert len(held_calls_of(tool_server)) == 2
    assert refused.value.error.code == SESSION_LIMIT
    assert "maxHeldCallsPerClient (2)" in refused.value.error.message


def test_the_held_call_caps_are_config_keys(tmp_path: Path) -> None:
    path = tmp_path / "gateway.json"
    path.write_text('{"mcpServers": {}, "maxHeldCalls": 10, "maxHeldCallsPerClient": 3}', encoding="utf-8")
    loaded = load_config(path)
    assert (loaded.max_held_calls, loaded.max_held_calls_per_client) == (10, 3)
