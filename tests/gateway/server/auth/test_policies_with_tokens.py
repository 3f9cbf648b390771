"""`policies` with real OAuth tokens over HTTP: listings filtered, calls refused, rate limits saying when to retry."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from fixture_tools import TOOLS
from mcp import MCPError, types
from mcp.client.context import ClientRequestContext

from adapters.meta_keys import RETRY_AFTER_META_KEY
from gateway.config.access import PolicyConfig, policy_of
from gateway.server import ToolServer
from gateway.server.policy.rate_limit import RateLimiter
from gateway.server.policy.rules import Policy
from gateway.state import InMemoryStateStore
from gateway.tools import BaseTool, BaseToolset, FunctionTool, ReadonlyContext
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_gateway import DEADLINE, ProtectedGateway, protected_gateway, token_client

pytestmark = pytest.mark.anyio

POLICIES: list[dict[str, Any]] = [
    {"claims": {"groups": ["admins"]}, "allowTools": ["*"]},
    {"principals": ["*"], "allowTools": ["add", "greet"], "denyTools": ["secret_*"]},
    {"principals": ["*"], "allowTools": ["add"], "rateLimit": {"calls": 2, "perSeconds": 3600}},
]


@asynccontextmanager
async def gateway_with(policies: list[dict[str, Any]] | None) -> AsyncGenerator[tuple[OAuthProvider, ProtectedGateway]]:
    policy = policy_of([PolicyConfig.model_validate(p) for p in policies]) if policies else None
    server = ToolServer(TOOLS, state_store=InMemoryStateStore(), policy=policy)
    async with OAuthProvider() as provider, protected_gateway(provider, server) as gateway:
        yield provider, gateway


async def names(client: Any) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_each_principal_lists_and_calls_only_what_its_rules_allow(mode: str) -> None:
    async with gateway_with(POLICIES) as (provider, gateway):
        admin = provider.mint("alice", audience=gateway.resource, claims={"groups": ["admins", "staff"]})
        user = provider.mint("bob", audience=gateway.resource, claims={"groups": ["staff"]})
        with anyio.fail_after(DEADLINE):
            async with token_client(gateway.base_url, admin, mode=mode) as client:
                admin_names = await names(client)
                bumped = await client.call_tool("bump", {})
            async with token_client(gateway.base_url, user, mode=mode) as client:
                user_names = await names(client)
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("bump", {})
                greeted = await client.call_tool("greet", {"name": "Bob"})
    assert {"add", "greet", "bump", "remove_item", "count_up"} <= admin_names
    assert not bumped.is_error
    assert user_names == {"add", "greet"}
    assert refused.value.error.code == -32602
    assert "policies" in refused.value.error.message
    assert not greeted.is_error


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_rate_limited_call_gets_an_error_result_saying_when_to_retry(mode: str) -> None:
    async with gateway_with(POLICIES) as (provider, gateway):
        user = provider.mint("bob", audience=gateway.resource)
        other = provider.mint("carol", audience=gateway.resource)
        with anyio.fail_after(DEADLINE):
            async with token_client(gateway.base_url, user, mode=mode) as client:
                results = [await client.call_tool("add", {"a": 1, "b": i}) for i in range(3)]
                greet = await client.call_tool("greet", {"name": "Bob"})
            async with token_client(gateway.base_url, other, mode=mode) as client:
                carol = await client.call_tool("add", {"a": 1, "b": 1})
    assert [r.is_error for r in results] == [False, False, True]
    refused = results[2]
    assert refused.meta is not None
    retry_after = refused.meta[RETRY_AFTER_META_KEY]
    assert 1700 < retry_after <= 1800  # half of 3600 s refills one call
    assert f"Retry in {retry_after:g} seconds" in refused.content[0].text  # type: ignore[union-attr]
    assert not greet.is_error  # no limit on greet
    assert not carol.is_error  # carol has a bucket of her own


async def test_with_auth_on_and_no_policy_every_tool_is_listed_and_callable() -> None:
    async with gateway_with(None) as (provider, gateway):
        token = provider.mint("bob", audience=gateway.resource)
        with anyio.fail_after(DEADLINE):
            async with token_client(gateway.base_url, token) as client:
                listed = await names(client)
                result = await client.call_tool("bump", {})
    assert {"add", "greet", "bump", "remove_item", "count_up"} <= listed
    assert not result.is_error


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_call_of_an_unknown_tool_spends_no_rate_limit_token_and_keeps_no_bucket(mode: str) -> None:
    """Tool names are the caller's to choose: a bucket per name it made up would grow without bound."""
    built = policy_of([PolicyConfig.model_validate({"allowTools": ["*"], "rateLimit": {"calls": 1, "perSeconds": 60}})])
    assert built is not None
    limiter = RateLimiter()
    server = ToolServer(TOOLS, state_store=InMemoryStateStore(), policy=Policy(built.rules, limiter=limiter))
    refused: list[MCPError] = []
    async with OAuthProvider() as provider, protected_gateway(provider, server) as gateway:
        token = provider.mint("bob", audience=gateway.resource)
        with anyio.fail_after(DEADLINE):
            async with token_client(gateway.base_url, token, mode=mode) as client:
                for name in ("no_such_tool", "no_such_tool", "made_up_1", "made_up_2"):
                    with pytest.raises(MCPError) as unknown:
                        await client.call_tool(name, {})
                    refused.append(unknown.value)
                added = await client.call_tool("add", {"a": 1, "b": 2})
    assert [error.error.code for error in refused] == [-32602] * 4
    assert all("Unknown tool" in error.error.message for error in refused), [e.error.message for e in refused]
    assert not added.is_error
    assert limiter.kept == 1  # add's bucket alone


async def answer_ada(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    del context, params
    return types.ElicitResult(action="accept", content={"name": "Ada"})


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_input_rounds_of_one_call_count_once_against_the_rate_limit(mode: str) -> None:
    rules = [{"allowTools": ["*"], "rateLimit": {"calls": 1, "perSeconds": 3600}}]
    async with gateway_with(rules) as (provider, gateway):
        token = provider.mint("bob", audience=gateway.resource)
        with anyio.fail_after(DEADLINE):
            async with token_client(gateway.base_url, token, mode=mode, elicitation_callback=answer_ada) as client:
                answered = await client.call_tool("ask_name", {})
                again = await client.call_tool("ask_name", {})
    assert answered.structured_content == {"action": "accept", "name": "Ada"}  # its second round was let through
    assert again.is_error  # the next call is a new one


class _ToolsOfTheUser(BaseToolset):
    """A toolset whose tools depend on who asks (the same tool objects for the same user every time)."""

    def __init__(self) -> None:
        super().__init__()

        def alice_only() -> str:
            """Only for alice."""
            return "alice"

        def bob_only() -> str:
            """Only for bob."""
            return "bob"

        self.by_user = {"alice": [FunctionTool(alice_only)], "bob": [FunctionTool(bob_only)]}

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        user = readonly_context.user_id if readonly_context is not None else ""
        return list(self.by_user.get(user, []))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_listing_one_principal_saw_is_never_shown_to_another(mode: str) -> None:
    server = ToolServer([_ToolsOfTheUser()], state_store=InMemoryStateStore(), page_size=1)
    async with OAuthProvider() as provider, protected_gateway(provider, server) as gateway:
        alice = provider.mint("alice", audience=gateway.resource)
        bob = provider.mint("bob", audience=gateway.resource)
        with anyio.fail_after(DEADLINE):
            async with token_client(gateway.base_url, alice, mode=mode) as client:
                alice_first, alice_again = await names(client), await names(client)
            async with token_client(gateway.base_url, bob, mode=mode) as client:
                bob_names = await names(client)
                with pytest.raises(MCPError):
                    await client.call_tool("alice_only", {})
            async with token_client(gateway.base_url, alice, mode=mode) as client:
                alice_later = await names(client)
    assert alice_first == alice_again == alice_later == {"alice_only"}
    assert bob_names == {"bob_only"}
