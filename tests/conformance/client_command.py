"""Our MCP client (`McpToolset` over streamable HTTP) as the client under test of the conformance suite.

    python tests/conformance/client_command.py <server_url>

The suite appends the mock server's URL, names the scenario in `$MCP_CONFORMANCE_SCENARIO` and, for some, gives
credentials in `$MCP_CONFORMANCE_CONTEXT` (JSON). Exit status 0 means the client did what the scenario asks; the
suite judges how well from what the mock server saw.

An `auth/*` scenario signs in through the toolset's per-upstream credential: a user sign-in (authorization code,
with whatever client the authorization server accepts), whose user step follows the authorization redirect
headlessly, or the client-credentials extension's machine sign-in.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, cast
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
from mcp import types
from mcp.client.auth import AuthorizationCodeResult
from mcp.client.context import ClientRequestContext

from gateway.client import McpTool, McpToolset, StreamableHTTPConnectionParams
from gateway.client.credentials import (
    AssertionSignIn,
    AuthorizationCodeSignIn,
    Credential,
    MachineSignIn,
    id_jag_from,
)
from gateway.tools import ToolContext

SCENARIO_ENV = "MCP_CONFORMANCE_SCENARIO"
CONTEXT_ENV = "MCP_CONFORMANCE_CONTEXT"
REDIRECT_URI = "http://localhost:3000/callback"
"""Where the suite's authorization server sends the user back; nothing listens there, the redirect is read."""
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
"""The Client ID Metadata Document URL the suite's authorization servers know."""
DEADLINE = 25.0
"""Seconds one scenario may take (the suite kills the client after 30)."""

logger = logging.getLogger("client_command")


class ScenarioFailed(Exception):
    """The client could not do what the scenario asks."""


async def accept_with_defaults(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult | types.ErrorData:
    """Answer a form by accepting every field's default, as a user who just presses OK would."""
    del context
    if not isinstance(params, types.ElicitRequestFormParams):
        return types.ElicitResult(action="decline")
    properties: dict[str, Any] = params.requested_schema.get("properties", {})
    content = {name: schema["default"] for name, schema in properties.items() if "default" in schema}
    return types.ElicitResult(action="accept", content=content)


async def call(toolset: McpToolset, name: str, args: dict[str, Any]) -> dict[str, Any]:
    tools = {tool.name: tool for tool in await toolset.get_tools()}
    tool = tools.get(name)
    if not isinstance(tool, McpTool):
        raise ScenarioFailed(f"The server does not list the tool {name!r} (it lists {sorted(tools)}).")
    response = await tool.run_async(args=args, tool_context=ToolContext())
    if "error" in response:
        raise ScenarioFailed(f"Calling {name!r} failed: {response['error']}")
    logger.info("%s -> %s", name, response)
    return response


async def initialize(toolset: McpToolset) -> None:
    await toolset.get_tools()


async def tools_call(toolset: McpToolset) -> None:
    response = await call(toolset, "add_numbers", {"a": 5, "b": 3})
    if "8" not in str(response):
        raise ScenarioFailed(f"add_numbers(5, 3) answered {response}")


async def elicitation_defaults(toolset: McpToolset) -> None:
    await call(toolset, "test_client_elicitation_defaults", {})


async def sse_retry(toolset: McpToolset) -> None:
    await call(toolset, "test_reconnection", {})


async def listed(toolset: McpToolset) -> dict[str, McpTool]:
    return {tool.name: tool for tool in await toolset.get_tools() if isinstance(tool, McpTool)}


async def json_schema_preservation(toolset: McpToolset) -> None:
    """Hand the rich tool's input schema, as the toolset holds it, back to the server's echo tool."""
    tools = await listed(toolset)
    focal = tools.get("json_schema_2020_12_tool")
    if focal is None:
        raise ScenarioFailed(f"The server does not list json_schema_2020_12_tool (it lists {sorted(tools)}).")
    await call(toolset, "json_schema_echo", {"schema": focal.raw_mcp_tool.input_schema})


async def every_tool(toolset: McpToolset) -> None:
    """Call each tool the toolset offers, without arguments (the server judges which calls it got)."""
    for tool in (await listed(toolset)).values():
        response = await tool.run_async(args={}, tool_context=ToolContext())
        logger.info("%s -> %s", tool.name, response)


async def tool_calls_of_the_context(toolset: McpToolset) -> None:
    """Make the calls the scenario's context names, with their arguments."""
    for planned in _context().get("toolCalls", []):
        await call(toolset, planned["name"], planned.get("arguments", {}))


async def headless_authorize(url: str) -> AuthorizationCodeResult:
    """The user's step without a user: ask for the authorization URL and read the code off the redirect."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as http:
        response = await http.get(url)
    location = response.headers.get("location")
    if not response.is_redirect or location is None:
        raise ScenarioFailed(f"The authorization endpoint answered {response.status_code}, not a redirect.")
    query = {name: values[0] for name, values in parse_qs(urlparse(location).query).items()}
    if "code" not in query:
        raise ScenarioFailed(f"The authorization server refused: {query.get('error', 'no code')}.")
    return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


def _context() -> dict[str, Any]:
    raw = os.environ.get(CONTEXT_ENV)
    return cast("dict[str, Any]", json.loads(raw)) if raw else {}


def credential_for(scenario: str, url: str) -> Credential | None:
    """The upstream credential a scenario signs in with (None: it needs none)."""
    if not scenario.startswith("auth/"):
        return None
    context = _context()
    if scenario in ("auth/client-credentials-jwt", "auth/client-credentials-basic"):
        return MachineSignIn(
            url,
            context["client_id"],
            client_secret=context.get("client_secret"),
            private_key_pem=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm", "ES256"),
            issuer=context.get("issuer"),
        )
    if scenario in ("auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow"):
        idp = id_jag_from(context["idp_token_endpoint"], context["idp_id_token"], client_id=context["idp_client_id"])
        return AssertionSignIn(url, idp, client_id=context["client_id"], client_secret=context["client_secret"])
    if scenario == "auth/wif-jwt-bearer":
        workload_jwt: str = context["valid_jwt"]

        async def issued_by_the_platform(audience: str, resource: str) -> str:
            del audience, resource
            return workload_jwt

        return AssertionSignIn(url, issued_by_the_platform, client_id=context["client_id"])
    return AuthorizationCodeSignIn(
        url,
        headless_authorize,
        redirect_uri=REDIRECT_URI,
        client_id=context.get("client_id"),
        client_secret=context.get("client_secret"),
        client_metadata_url=None if "client_id" in context else CLIENT_METADATA_URL,
        dpop=scenario in ("auth/dpop", "auth/dpop-nonce"),
    )


async def signed_in(toolset: McpToolset) -> None:
    """List the tools and call the first (the auth scenarios' servers judge the requests, not the answer)."""
    tools = await toolset.get_tools()
    if not tools:
        return
    tool = tools[0]
    response = await tool.run_async(args={}, tool_context=ToolContext())
    logger.info("%s -> %s", tool.name, response)


SCENARIOS: dict[str, Callable[[McpToolset], Awaitable[None]]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
    "json-schema-2020-12-preservation": json_schema_preservation,
    "json-schema-ref-no-deref": initialize,
    "request-metadata": initialize,
    "sep-2322-client-request-state": every_tool,
    "http-standard-headers": every_tool,
    "http-invalid-tool-headers": every_tool,
    "http-custom-headers": tool_calls_of_the_context,
}


async def run(scenario: str, url: str) -> None:
    play = SCENARIOS.get(scenario) or (signed_in if scenario.startswith("auth/") else None)
    if play is None:
        raise ScenarioFailed(f"Unknown scenario {scenario!r}; this client plays {', '.join(SCENARIOS)}.")
    toolset = McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=url, connect_timeout=10),
        elicitation_callback=accept_with_defaults,
        credential=credential_for(scenario, url),
    )
    with anyio.fail_after(DEADLINE):
        async with toolset:
            await play(toolset)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if len(argv) != 2:
        print(f"usage: {SCENARIO_ENV}=<scenario> {argv[0]} <server_url>", file=sys.stderr)
        return 2
    scenario = os.environ.get(SCENARIO_ENV, "")
    try:
        anyio.run(run, scenario, argv[1])
    except ScenarioFailed as exc:
        print(f"{scenario}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
