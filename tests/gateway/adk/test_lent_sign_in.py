"""`to_adk(McpToolset(auth_scheme=<OAuth2 authorization code>, ...))` in a real google-adk agent: the user signs in
through ADK's native `adk_request_credential` round trip, completed the way an ADK client app completes it, and the
upstream (OAuth-protected, over real HTTP) then sees that user's token."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import pytest
from adk_app import (
    REQUEST_CREDENTIAL,
    authorization_code,
    function_calls,
    provider_on_its_own_loop,
    run,
    sign_in,
    start,
    text,
    tool_answers,
)
from google.adk.agents import LlmAgent
from google.adk.auth.auth_tool import AuthToolArguments
from google.adk.auth.credential_service.in_memory_credential_service import InMemoryCredentialService
from scripted_model import ScriptedModel, call, say

from gateway.adk import to_adk
from gateway.client import McpToolset, StreamableHTTPConnectionParams
from tests.support.deadlines import DEADLINE
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_upstream import ProtectedUpstream, protected_upstream

pytestmark = [
    pytest.mark.anyio,
    # google-adk's own toolset auth warns, on first use, that its CredentialManager and helpers are experimental.
    pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\] \w+:UserWarning"),
]


@asynccontextmanager
async def provider_and_upstream() -> AsyncGenerator[tuple[OAuthProvider, ProtectedUpstream]]:
    """The provider on its own loop (`provider_on_its_own_loop`), and the upstream it protects."""
    with provider_on_its_own_loop("ada") as provider:
        async with protected_upstream(provider) as upstream:
            yield provider, upstream


def signed_in_toolset(provider: OAuthProvider, upstream: ProtectedUpstream) -> McpToolset:
    """Our toolset for the protected upstream, each user signing in with the provider (a confidential client)."""
    provider.audience = upstream.url
    scheme, credential = authorization_code(provider, ("authorization_code", "refresh_token"))
    return McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=upstream.url, connect_timeout=DEADLINE),
        mode="legacy",
        auth_scheme=scheme,
        auth_credential=credential,
        credential_key="docs",
    )


def subjects(provider: OAuthProvider, upstream: ProtectedUpstream) -> set[str]:
    return {claims["sub"] for claims in map(provider.decode, upstream.seen) if claims}


async def test_an_adk_agent_gets_adk_request_credential_for_the_toolset_and_then_calls_with_the_users_token() -> None:
    async with provider_and_upstream() as (provider, upstream):
        toolset = signed_in_toolset(provider, upstream)
        model = ScriptedModel(script=[call("whoami"), say("You are ada.")])
        agent = LlmAgent(name="assistant", model=model, tools=[to_adk(toolset)])
        runner, session_id = await start(agent, user="ada")
        try:
            events = await run(runner, session_id, text("Who am I upstream?"), user="ada")

            # ADK asks the user to sign in before the toolset lists anything, as for its own McpToolset.
            (request,) = function_calls(events, REQUEST_CREDENTIAL)
            assert model.requests == []
            assert upstream.seen == []

            events = await run(runner, session_id, await sign_in(request), user="ada")
            (answer,) = tool_answers(events, "whoami")
            assert answer["sub"] == "ada", answer
            assert subjects(provider, upstream) == {"ada"}
            assert [event.content.parts[0].text for event in events if event.content and event.content.parts][-1] == (
                "You are ada."
            )
        finally:
            await toolset.close()


async def test_a_rejected_token_asks_the_user_again_through_adk_request_credential_for_the_call() -> None:
    async with provider_and_upstream() as (provider, upstream):
        toolset = signed_in_toolset(provider, upstream)
        model = ScriptedModel(script=[call("whoami"), say("first"), call("whoami"), say("second")])
        agent = LlmAgent(name="assistant", model=model, tools=[to_adk(toolset)])
        runner, session_id = await start(agent, user="ada", credential_service=InMemoryCredentialService())
        try:
            (request,) = function_calls(
                await run(runner, session_id, text("Who am I?"), user="ada"), REQUEST_CREDENTIAL
            )
            events = await run(runner, session_id, await sign_in(request), user="ada")
            assert tool_answers(events, "whoami")[0]["sub"] == "ada"
            (first_token,) = set(upstream.seen)

            # The upstream revokes the token: the next call asks the user again, for that call, the ADK way.
            upstream.reject(first_token)
            events = await run(runner, session_id, text("And now?"), user="ada")
            (request,) = function_calls(events, REQUEST_CREDENTIAL)
            assert AuthToolArguments.model_validate(request.args).function_call_id in {
                found.id for event in events for found in event.get_function_calls() if found.name == "whoami"
            }
            events = await run(runner, session_id, await sign_in(request), user="ada")
            (answer,) = tool_answers(events, "whoami")
            assert answer["sub"] == "ada", answer
            assert len(set(upstream.seen)) == 2
        finally:
            await toolset.close()
