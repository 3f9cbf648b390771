"""An isolated upstream session declares exactly what its downstream client declared (`gateway.hub.era`).

Each test asks the same question twice, with the same SDK client (same era, same callbacks): once of the upstream
directly, once through the gateway; the answers must match. The upstreams: `hub_capabilities_server.py` (the SDK's
`MCPServer`, reporting the capabilities it was told) and `@modelcontextprotocol/server-everything`, whose
sampling, elicitation and roots tools are listed only to clients that declare those capabilities.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest
from hub_harness import (
    DEADLINE,
    HERE,
    ROOT,
    SLOW_START,
    FormFiller,
    Mode,
    child_env,
    connect,
    gateway_http,
    structured,
    write_config,
)
from mcp import Client, MCPError, StdioServerParameters, types
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

from gateway.client.sessions._declared_client import DeclaringClient
from gateway.server import SESSION_META_KEY
from tests.conformance.toolchain import ensure_toolchain

pytestmark = pytest.mark.anyio

CAPABILITIES_SERVER = HERE / "hub_capabilities_server.py"
ERAS: tuple[Mode, ...] = ("legacy", "auto")


async def no_roots(context: ClientRequestContext) -> types.ListRootsResult:
    del context
    return types.ListRootsResult(roots=[])


def client_options(declares: str) -> dict[str, Any]:
    """The `mcp.Client` options of a client declaring `declares`: nothing, elicitation and sampling, or roots."""
    if declares == "elicitation and sampling":
        return FormFiller().callbacks()
    if declares == "roots":
        return {"list_roots_callback": no_roots}
    return {}


DECLARES = ("nothing", "elicitation and sampling", "roots")


@asynccontextmanager
async def direct(upstream: StdioServerParameters, mode: Mode, **options: Any) -> AsyncGenerator[Client]:
    async with Client(upstream, mode=mode, **options) as client:
        yield client


async def through_the_gateway_and_directly(
    tmp_path: Path, upstream: StdioServerParameters, mode: Mode, ask: Callable[[Client], Any], **options: Any
) -> tuple[Any, Any]:
    """`ask(client)` of a client connected through a gateway with `upstream` as its one upstream, then directly."""
    entry = {"command": upstream.command, "args": upstream.args, "env": upstream.env, "prefix": "", **SLOW_START}
    config = write_config(tmp_path, {"up": entry})
    with anyio.fail_after(DEADLINE):
        async with gateway_http(config) as base_url, connect(base_url, mode, **options) as client:
            gateway_answer = await ask(client)
        async with direct(upstream, mode, **options) as client:
            direct_answer = await ask(client)
    return gateway_answer, direct_answer


def server_everything() -> StdioServerParameters:
    toolchain = ensure_toolchain()
    return StdioServerParameters(
        command=str(toolchain.node), args=[str(toolchain.server_everything), "stdio"], env=toolchain.env({})
    )


def capabilities_server() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-I", str(CAPABILITIES_SERVER)])


async def declared(client: Client, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool("declared", {}, meta=cast("types.RequestParamsMeta | None", meta))
    return structured(result)


@pytest.mark.parametrize("declares", DECLARES)
@pytest.mark.parametrize("mode", ERAS)
async def test_an_sdk_upstream_is_told_the_capabilities_the_client_declared(
    mode: Mode, declares: str, tmp_path: Path
) -> None:
    through, directly = await through_the_gateway_and_directly(
        tmp_path, capabilities_server(), mode, declared, **client_options(declares)
    )
    assert through == directly


@pytest.mark.parametrize("declares", DECLARES)
@pytest.mark.parametrize("mode", ERAS)
async def test_server_everything_lists_the_same_tools_through_the_gateway_as_directly(
    mode: Mode, declares: str, tmp_path: Path
) -> None:
    upstream = server_everything()

    async def tool_names(client: Client) -> set[str]:
        return {tool.name for tool in (await client.list_tools()).tools}

    through, directly = await through_the_gateway_and_directly(
        tmp_path, upstream, mode, tool_names, **client_options(declares)
    )
    assert through == directly
    assert ("trigger-elicitation-request" in through) == (declares == "elicitation and sampling")
    assert ("get-roots-list" in through) == (declares == "roots")


async def test_modern_clients_sharing_a_session_key_but_not_capabilities_get_separate_upstream_sessions(
    tmp_path: Path,
) -> None:
    # A handshake-era upstream session: what it declared in `initialize` holds for every call made on it.
    entry = {"command": sys.executable, "args": ["-I", str(CAPABILITIES_SERVER)], "prefix": "", **SLOW_START}
    config = write_config(tmp_path, {"up": entry | {"protocolVersion": "2025-11-25"}})
    meta = {SESSION_META_KEY: "one-key-for-both"}
    with anyio.fail_after(DEADLINE):
        async with (
            gateway_http(config) as base_url,
            connect(base_url, "auto") as plain,
            connect(base_url, "auto", **client_options("elicitation and sampling")) as asking,
        ):
            first = await declared(plain, meta)
            second = await declared(asking, meta)
            third = await declared(plain, meta)
    assert first == third == {}
    assert set(second) == {"elicitation", "sampling"}


async def test_the_call_command_finds_a_tool_offered_only_to_clients_that_can_sample(tmp_path: Path) -> None:
    # `adk-mcp-gateway call` looks the tool up before its client connects: no client declared anything yet.
    upstream = server_everything()
    entry = {"command": upstream.command, "args": upstream.args, "env": upstream.env, "prefix": "", **SLOW_START}
    config = write_config(tmp_path, {"up": entry})
    arguments = ["call", str(config), "trigger-sampling-request", "prompt=Name a colour", "maxTokens=20"]
    with anyio.fail_after(DEADLINE):
        done = await anyio.run_process(
            [sys.executable, "-m", "gateway.cli", *arguments],
            cwd=ROOT,
            env={**os.environ, **child_env()},
            check=False,
        )
    output = (done.stdout + done.stderr).decode()
    # Found and called: the terminal refuses to sample without --sample-with.
    assert "No tool" not in output
    assert "--sample-with" in output


@pytest.mark.parametrize("mode", ERAS)
async def test_a_form_only_client_is_never_relayed_an_upstreams_url_elicitation(mode: Mode, tmp_path: Path) -> None:
    # A shared upstream session declares both elicitation modes, so server-everything offers its URL tool to all.
    upstream = server_everything()
    entry = {"command": upstream.command, "args": upstream.args, "env": upstream.env, "prefix": "", **SLOW_START}
    config = write_config(tmp_path, {"up": entry | {"sessionPolicy": "shared"}})
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        asked.append(params)
        return types.ElicitResult(action="decline")

    with anyio.fail_after(DEADLINE):
        async with (
            gateway_http(config) as base_url,
            httpx2.AsyncClient(timeout=httpx2.Timeout(DEADLINE, read=300)) as http,
        ):
            transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
            client = DeclaringClient(transport, mode=mode, elicitation_callback=elicit)
            client.declared = types.ClientCapabilities(elicitation=types.ElicitationCapability())
            async with client:
                arguments = {"url": "https://example.com/consent", "elicitationId": "form-only-1"}
                try:
                    result = await client.call_tool("trigger-url-elicitation", arguments)
                except MCPError as exc:
                    outcome = exc.message
                else:
                    outcome = str(result.content)
    assert asked == []
    assert "elicitation.url" in outcome, outcome
