"""The gateway forwards an upstream's action keys (`transfer_to_agent`, `escalate`, ...) as sent: none lost or added.

The upstream is our server mode over streamable HTTP; its tools' results carry `EventActions` as documented `_meta`
keys. Called directly and through the gateway (in both eras downstream), a result's keys under our prefix match.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import DEADLINE, Mode, connect, gateway_http, write_config
from mcp import Client, types

from adapters.meta_keys import (
    ESCALATE_META_KEY,
    SESSION_META_KEY,
    SKIP_SUMMARIZATION_META_KEY,
    TRANSFER_TO_AGENT_META_KEY,
)
from gateway import FunctionTool, ToolContext
from gateway.server import ToolServer
from gateway.state import InMemoryStateStore
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

OUR_PREFIX = "adk-mcp-gateway/"


def route(tool_context: ToolContext) -> dict[str, Any]:
    """Hand over to billing, escalate and show the answer as it is."""
    tool_context.actions.transfer_to_agent = "billing"
    tool_context.actions.escalate = True
    tool_context.actions.skip_summarization = True
    return {"routed": True}


def plain() -> dict[str, Any]:
    """Ask for nothing."""
    return {"plain": True}


def _our_keys(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    # The session key a server issues a sessionless caller is each server's own, not an action the tool took.
    return {
        key: value
        for key, value in (result.meta or {}).items()
        if key.startswith(OUR_PREFIX) and key != SESSION_META_KEY
    }


async def _call_both(direct: Client, through: Client, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    with anyio.fail_after(DEADLINE):
        return _our_keys(await direct.call_tool(name, {})), _our_keys(await through.call_tool(f"up_{name}", {}))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_upstreams_action_keys_cross_the_gateway_unchanged(mode: Mode, tmp_path: Path) -> None:
    upstream = ToolServer([FunctionTool(route), FunctionTool(plain)], state_store=InMemoryStateStore())
    async with AsyncExitStack() as stack:
        upstream_url = await stack.enter_async_context(serving_tools(upstream))
        config = write_config(tmp_path, {"up": {"url": f"{upstream_url}/mcp"}})
        gateway_url = await stack.enter_async_context(gateway_http(config))
        direct = await stack.enter_async_context(connect(upstream_url, mode))
        through = await stack.enter_async_context(connect(gateway_url, mode))
        routed = await _call_both(direct, through, "route")
        plain_keys = await _call_both(direct, through, "plain")
    assert routed[0] == {
        TRANSFER_TO_AGENT_META_KEY: "billing",
        ESCALATE_META_KEY: True,
        SKIP_SUMMARIZATION_META_KEY: True,
    }
    assert routed[1] == routed[0]
    assert plain_keys == ({}, {})
