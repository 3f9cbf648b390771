"""Our MCP client (`McpToolset` over streamable HTTP) as the client under test of the conformance suite.

    python tests/conformance/client_command.py <server_url>

The suite appends the mock server's URL and names the scenario in `$MCP_CONFORMANCE_SCENARIO`. Exit status 0 means
the client did what the scenario asks; the suite judges how well from what the mock server saw.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import types
from mcp.client.context import ClientRequestContext

from gateway.client import McpTool, McpToolset, StreamableHTTPConnectionParams
from gateway.tools import ToolContext

SCENARIO_ENV = "MCP_CONFORMANCE_SCENARIO"
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


SCENARIOS: dict[str, Callable[[McpToolset], Awaitable[None]]] = {
    "initialize": initialize,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "sse-retry": sse_retry,
}


async def run(scenario: str, url: str) -> None:
    play = SCENARIOS.get(scenario)
    if play is None:
        raise ScenarioFailed(f"Unknown scenario {scenario!r}; this client plays {', '.join(SCENARIOS)}.")
    toolset = McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=url, connect_timeout=10),
        elicitation_callback=accept_with_defaults,
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
