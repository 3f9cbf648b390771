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
from gateway.config import load_config
from gateway.config.access import PolicyConfig, policy_of
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


FILES = [sys.executable, str(HERE / "hub_files_server.py")]
OUTSIDE_PUBLIC = [
    "files+file:///public/../secret/key.txt",
    "files+file:///public/%2e%2e/secret/key.txt",
    "files+file:///public/%2E%2E%2Fsecret%2Fkey.txt",
    "files+file:///public/..%5Csecret%5Ckey.txt",
]
FILE_SPELLINGS_OF_SECRET = [
    "files+file:/secret/key.txt",
    "files+file://localhost/secret/key.txt",
    "files+file://LOCALHOST/secret/key.txt",
    "files+file://elsewhere/secret/key.txt",
]


async def test_a_resource_uri_is_refused_when_an_upstream_could_resolve_it_outside_what_the_policy_allows(
    tmp_path: Path,
) -> None:
    config = load_config(write_config(tmp_path, {"files": {"command": FILES[0], "args": FILES[1:]}}))
    rules: list[dict[str, Any]] = [
        {"principals": ["*"], "allowResources": ["files+file:///public/*"]},
        {"principals": ["carol"], "allowResources": ["*"], "denyResources": ["files+file:///secret/*"]},
    ]
    policy = policy_of([PolicyConfig.model_validate(rule) for rule in rules])
    server = hub.gateway_server(gateway_tools(config), state_store=InMemoryStateStore(), policy=policy)
    refused: list[str] = []
    refused_spellings: list[str] = []
    async with OAuthProvider() as provider, protected_gateway(provider, server) as gateway:
        bob = provider.mint("bob", audience=gateway.resource)
        carol = provider.mint("carol", audience=gateway.resource)
        with anyio.fail_after(DEADLINE):
            async with token_client(gateway.base_url, bob) as client:
                public = (await client.read_resource("files+file:///public/readme.txt")).contents[0]
                for uri in OUTSIDE_PUBLIC:
                    for use in (client.read_resource, client.subscribe_resource):
                        with pytest.raises(MCPError) as error:
                            await use(uri)
                        assert error.value.error.code == -32602
                        refused.append(error.value.error.message)
            async with token_client(gateway.base_url, carol) as client:
                # Another spelling of a denied URI is the denied URI.
                with pytest.raises(MCPError) as denied:
                    await client.read_resource("files+file:///%73ecret/key.txt")
                # So are the file URI's other spellings of a local path (RFC 8089), which the upstream reads alike.
                for uri in FILE_SPELLINGS_OF_SECRET:
                    with pytest.raises(MCPError) as spelled:
                        await client.read_resource(uri)
                    refused_spellings.append(spelled.value.error.message)
    assert getattr(public, "text", None) == "public notes"
    assert len(refused) == 2 * len(OUTSIDE_PUBLIC)
    assert all("cannot tell which resource" in message for message in refused), refused
    assert denied.value.error.code == -32602
    assert "policies" in denied.value.error.message
    assert len(refused_spellings) == len(FILE_SPELLINGS_OF_SECRET)
    assert all("secret key" not in message for message in refused_spellings), refused_spellings


async def test_a_listen_stream_is_refused_for_a_resource_uri_the_policy_does_not_allow(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {"files": {"command": FILES[0], "args": FILES[1:]}}))
    rules: list[dict[str, Any]] = [{"principals": ["*"], "allowResources": ["files+file:///public/*"]}]
    policy = policy_of([PolicyConfig.model_validate(rule) for rule in rules])
    server = hub.gateway_server(gateway_tools(config), state_store=InMemoryStateStore(), policy=policy)
    refused: dict[str, str] = {}
    async with OAuthProvider() as provider, protected_gateway(provider, server) as gateway:
        bob = provider.mint("bob", audience=gateway.resource)
        with anyio.fail_after(DEADLINE):
            async with token_client(gateway.base_url, bob, mode="auto") as client:
                async with client.listen(resource_subscriptions=["files+file:///public/readme.txt"]) as allowed:
                    honored = allowed.honored.resource_subscriptions
                for uri in ("files+file:///secret/key.txt", OUTSIDE_PUBLIC[0]):
                    with pytest.raises(MCPError) as error:
                        async with client.listen(resource_subscriptions=[uri]):
                            pass
                    assert error.value.error.code == -32602
                    refused[uri] = error.value.error.message
    assert honored == ["files+file:///public/readme.txt"]
    assert "policies" in refused["files+file:///secret/key.txt"]
    assert "cannot tell which resource" in refused[OUTSIDE_PUBLIC[0]]
