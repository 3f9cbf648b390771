"""`to_adk(McpToolset(auth_scheme=<OAuth2 authorization code>, ...))` in a real google-adk agent: the user signs in
through ADK's native `adk_request_credential` round trip, completed the way an ADK client app completes it, and the
upstream (OAuth-protected, over real HTTP) then sees that user's token."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.from_thread
import httpx2
import pytest
from google.adk.agents import LlmAgent
from google.adk.auth.auth_tool import AuthConfig as AdkAuthConfig
from google.adk.auth.auth_tool import AuthToolArguments
from google.adk.auth.credential_service.in_memory_credential_service import InMemoryCredentialService
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types as genai_types
from scripted_model import ScriptedModel, call, say

from gateway.adk import to_adk
from gateway.client import McpToolset, StreamableHTTPConnectionParams
from gateway.tools import (
    AuthCredential,
    AuthCredentialTypes,
    OAuth2,
    OAuth2Auth,
    OAuthFlowAuthorizationCode,
    OAuthFlows,
)
from tests.support.deadlines import DEADLINE
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_upstream import ProtectedUpstream, protected_upstream

pytestmark = [
    pytest.mark.anyio,
    # google-adk's own toolset auth warns, on first use, that its CredentialManager and helpers are experimental.
    pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\] \w+:UserWarning"),
]

REDIRECT_URI = "http://127.0.0.1:9/app/oauth-callback"
"""The client app's redirect URI: never served, the test 'browser' reads the redirect instead of following it."""
REQUEST_CREDENTIAL = "adk_request_credential"


@asynccontextmanager
async def provider_and_upstream() -> AsyncGenerator[tuple[OAuthProvider, ProtectedUpstream]]:
    """The provider on its own thread and event loop, as a real one is elsewhere: google-adk fetches some tokens
    with a blocking HTTP client on the agent's event loop (`AuthHandler.get_auth_response`)."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(OAuthProvider(user="ada")) as provider,
    ):
        async with protected_upstream(provider) as upstream:
            yield provider, upstream


def signed_in_toolset(provider: OAuthProvider, upstream: ProtectedUpstream) -> McpToolset:
    """Our toolset for the protected upstream, each user signing in with the provider (a confidential client)."""
    provider.audience = upstream.url
    client = provider.add_client(redirect_uris=[REDIRECT_URI], grant_types=("authorization_code", "refresh_token"))
    flow = OAuthFlowAuthorizationCode(
        authorizationUrl=provider.authorization_endpoint, tokenUrl=provider.token_endpoint
    )
    credential = AuthCredential(
        auth_type=AuthCredentialTypes.OAUTH2,
        oauth2=OAuth2Auth(
            client_id=client.client_id,
            client_secret=client.client_secret,
            redirect_uri=REDIRECT_URI,
            code_challenge_method="S256",
        ),
    )
    return McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=upstream.url, connect_timeout=DEADLINE),
        mode="legacy",
        auth_scheme=OAuth2(flows=OAuthFlows(authorizationCode=flow)),
        auth_credential=credential,
        credential_key="docs",
    )


async def run(runner: Runner, user: str, session_id: str, message: genai_types.Content) -> list[Event]:
    events: list[Event] = []
    with anyio.fail_after(DEADLINE):
        async for event in runner.run_async(user_id=user, session_id=session_id, new_message=message):
            events.append(event)
    return events


def text(words: str) -> genai_types.Content:
    return genai_types.Content(role="user", parts=[genai_types.Part(text=words)])


def credential_requests(events: list[Event]) -> list[genai_types.FunctionCall]:
    return [found for event in events for found in event.get_function_calls() if found.name == REQUEST_CREDENTIAL]


async def sign_in(request: genai_types.FunctionCall) -> genai_types.Content:
    """What an ADK client app does with `adk_request_credential`: send the user to `auth_uri`, put the redirect
    it lands on into the auth config's exchanged credential, and answer the function call with that config."""
    config: AdkAuthConfig = AuthToolArguments.model_validate(request.args).auth_config
    exchanged = config.exchanged_auth_credential
    assert exchanged is not None
    assert exchanged.oauth2 is not None
    assert exchanged.oauth2.auth_uri
    async with httpx2.AsyncClient(timeout=DEADLINE) as browser:
        landing = await browser.get(exchanged.oauth2.auth_uri)
    assert landing.status_code == 302, landing.text
    exchanged.oauth2.auth_response_uri = landing.headers["location"]
    exchanged.oauth2.redirect_uri = REDIRECT_URI
    answer = genai_types.FunctionResponse(
        name=REQUEST_CREDENTIAL, id=request.id, response=config.model_dump(mode="json", exclude_none=True)
    )
    return genai_types.Content(role="user", parts=[genai_types.Part(function_response=answer)])


def tool_answers(events: list[Event], name: str) -> list[dict[str, Any]]:
    return [
        dict(found.response or {}) for event in events for found in event.get_function_responses() if found.name == name
    ]


def subjects(provider: OAuthProvider, upstream: ProtectedUpstream) -> set[str]:
    return {claims["sub"] for claims in map(provider.decode, upstream.seen) if claims}


async def test_an_adk_agent_gets_adk_request_credential_for_the_toolset_and_then_calls_with_the_users_token() -> None:
    async with provider_and_upstream() as (provider, upstream):
        toolset = signed_in_toolset(provider, upstream)
        model = ScriptedModel(script=[call("whoami"), say("You are ada.")])
        sessions = InMemorySessionService()
        agent = LlmAgent(name="assistant", model=model, tools=[to_adk(toolset)])
        runner = Runner(app_name="app", agent=agent, session_service=sessions)
        try:
            session = await sessions.create_session(app_name="app", user_id="ada")
            events = await run(runner, "ada", session.id, text("Who am I upstream?"))

            # ADK asks the user to sign in before the toolset lists anything, as for its own McpToolset.
            (request,) = credential_requests(events)
            assert model.requests == []
            assert upstream.seen == []

            events = await run(runner, "ada", session.id, await sign_in(request))
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
        sessions = InMemorySessionService()
        agent = LlmAgent(name="assistant", model=model, tools=[to_adk(toolset)])
        runner = Runner(
            app_name="app", agent=agent, session_service=sessions, credential_service=InMemoryCredentialService()
        )
        try:
            session = await sessions.create_session(app_name="app", user_id="ada")
            (request,) = credential_requests(await run(runner, "ada", session.id, text("Who am I?")))
            events = await run(runner, "ada", session.id, await sign_in(request))
            assert tool_answers(events, "whoami")[0]["sub"] == "ada"
            (first_token,) = set(upstream.seen)

            # The upstream revokes the token: the next call asks the user again, for that call, the ADK way.
            upstream.reject(first_token)
            events = await run(runner, "ada", session.id, text("And now?"))
            (request,) = credential_requests(events)
            assert AuthToolArguments.model_validate(request.args).function_call_id in {
                found.id for event in events for found in event.get_function_calls() if found.name == "whoami"
            }
            events = await run(runner, "ada", session.id, await sign_in(request))
            (answer,) = tool_answers(events, "whoami")
            assert answer["sub"] == "ada", answer
            assert len(set(upstream.seen)) == 2
        finally:
            await toolset.close()
