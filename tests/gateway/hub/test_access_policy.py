"""`policies` on a gateway's upstream resources and prompts, with real OAuth tokens (tools: server suite)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import HERE, write_config
from mcp import MCPError

from gateway import hub
from gateway.access_config import PolicyConfig, policy_of
from gateway.config import load_config
from gateway.hub import gateway_tools
from gateway.state import InMemoryStateStore
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_gateway import DEADLINE, protected_gateway, token_client

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]

LISTING = [sys.executable, str(HERE / "hub_listing_server.py")]


async def test_resources_and_prompts_are_listed_and_used_only_as_the_callers_rules_allow(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {"n": {"command": LISTING[0], "args": LISTING[1:], "prefix": ""}}))
    rules: list[dict[str, Any]] = [
        {"claims": {"groups": ["admins"]}, "allowTools": ["*"], "allowResources": ["*"], "allowPrompts": ["*"]},
        {"principals": ["*"], "allowResources": ["memo://today"]},
    ]
    policy = policy_of([PolicyConfig.model_validate(rule) for rule in rules])
    server = hub.gateway_server(gateway_tools(config), state_store=InMemoryStateStore(), policy=policy)
    async with OAuthProvider() as provider, protected_gateway(provider, server) as gateway:
        admin = provider.mint("alice", audience=gateway.resource, claims={"groups": ["admins"]})
        user = provider.mint("bob", audience=gateway.resource)
        seen: dict[str, Any] = {}
        with anyio.fail_after(DEADLINE):
            for who, token in (("admin", admin), ("user", user)):
                async with token_client(gateway.base_url, token) as client:
                    seen[who] = (
                        [str(r.uri) for r in (await client.list_resources()).resources],
                        [t.uri_template for t in (await client.list_resource_templates()).resource_templates],
                        [p.name for p in (await client.list_prompts()).prompts],
                    )
                    seen[f"{who}-read"] = (await client.read_resource("memo://today")).contents[0]
                    if who == "user":
                        with pytest.raises(MCPError) as refused_read:
                            await client.read_resource("memo://monday")
                        with pytest.raises(MCPError) as refused_prompt:
                            await client.get_prompt("plan", {"day": "monday"})
                    else:
                        seen["admin-prompt"] = await client.get_prompt("plan", {"day": "monday"})
    assert seen["admin"] == (["memo://today"], ["memo://{day}"], ["plan"])
    assert seen["user"] == (["memo://today"], [], [])
    assert refused_read.value.error.code == -32602
    assert refused_prompt.value.error.code == -32602
    assert "policies" in refused_prompt.value.error.message
