"""Our tool asking for a credential, lent to a real google-adk agent with `to_adk`: the user's answer to ADK's
`adk_request_credential` reaches the tool's `get_auth_response`, and the tool runs with it."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.from_thread
import httpx2
import pytest
from google.adk.agents import LlmAgent
from google.adk.auth.auth_credential import AuthCredential as AdkAuthCredential
from google.adk.auth.auth_credential import AuthCredentialTypes as AdkAuthCredentialTypes
from google.adk.auth.auth_tool import AuthToolArguments
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types as genai_types
from scripted_model import ScriptedModel, call, say

from gateway.adk import to_adk
from gateway.tools import (
    APIKey,
    AuthConfig,
    AuthCredential,
    AuthCredentialTypes,
    FunctionTool,
    OAuth2,
    OAuth2Auth,
    OAuthFlowAuthorizationCode,
    OAuthFlows,
    ToolContext,
)
from tests.support.deadlines import DEADLINE
from tests.support.oauth_provider import OAuthProvider

pytestmark = [
    pytest.mark.anyio,
    # google-adk warns, on first use, that its OAuth2 code exchanger is experimental.
    pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\] \w+:UserWarning"),
]

REQUEST_CREDENTIAL = "adk_request_credential"

WEATHER = AuthConfig(auth_scheme=APIKey.model_validate({"in": "header", "name": "X-Api-Key"}), credential_key="weather")


def forecast(city: str, tool_context: ToolContext) -> dict[str, Any]:
    """The forecast for `city` from a weather API that needs the user's key."""
    credential = tool_context.get_auth_response(WEATHER)
    if credential is None:
        tool_context.request_credential(WEATHER)
        return {"pending": "Waiting for your weather API key."}
    return {"city": city, "key_used": credential.api_key}


async def run(runner: Runner, session_id: str, message: genai_types.Content) -> list[Event]:
    events: list[Event] = []
    with anyio.fail_after(DEADLINE):
        async for event in runner.run_async(user_id="user", session_id=session_id, new_message=message):
            events.append(event)
    return events


def answer_with_key(request: genai_types.FunctionCall, key: str) -> genai_types.Content:
    """What an ADK client app does: fill the exchanged credential of the requested config and send it back."""
    config = AuthToolArguments.model_validate(request.args).auth_config
    config.exchanged_auth_credential = AdkAuthCredential(auth_type=AdkAuthCredentialTypes.API_KEY, api_key=key)
    answer = genai_types.FunctionResponse(
        name=REQUEST_CREDENTIAL, id=request.id, response=config.model_dump(mode="json", exclude_none=True)
    )
    return genai_types.Content(role="user", parts=[genai_types.Part(function_response=answer)])


async def test_our_tool_lent_to_adk_runs_with_the_credential_the_user_gave_adk() -> None:
    model = ScriptedModel(script=[call("forecast", {"city": "Oslo"}), say("Rain.")])
    agent = LlmAgent(name="weather", model=model, tools=[to_adk(FunctionTool(forecast))])
    sessions = InMemorySessionService()
    runner = Runner(app_name="app", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="app", user_id="user")

    first = await run(runner, session.id, genai_types.Content(role="user", parts=[genai_types.Part(text="Oslo?")]))
    requests = [found for event in first for found in event.get_function_calls() if found.name == REQUEST_CREDENTIAL]
    assert len(requests) == 1
    second = await run(runner, session.id, answer_with_key(requests[0], "k-123"))
    await runner.close()

    answers = [
        dict(found.response or {})
        for event in second
        for found in event.get_function_responses()
        if found.name == "forecast"
    ]
    assert answers == [{"city": "Oslo", "key_used": "k-123"}]


REDIRECT_URI = "http://127.0.0.1:9/app/oauth-callback"
"""The client app's redirect URI: never served, the test 'browser' reads the redirect instead of following it."""


def calendar_config(provider: OAuthProvider) -> AuthConfig:
    client = provider.add_client(redirect_uris=[REDIRECT_URI], grant_types=("authorization_code",))
    flow = OAuthFlowAuthorizationCode(
        authorizationUrl=provider.authorization_endpoint, tokenUrl=provider.token_endpoint, scopes={"cal": ""}
    )
    raw = AuthCredential(
        auth_type=AuthCredentialTypes.OAUTH2,
        oauth2=OAuth2Auth(
            client_id=client.client_id,
            client_secret=client.client_secret,
            redirect_uri=REDIRECT_URI,
            code_challenge_method="S256",
        ),
    )
    return AuthConfig(auth_scheme=OAuth2(flows=OAuthFlows(authorizationCode=flow)), raw_auth_credential=raw)


async def answer_with_sign_in(request: genai_types.FunctionCall) -> genai_types.Content:
    """What an ADK client app does for OAuth2: send the user to `auth_uri`, hand back the redirect it lands on."""
    config = AuthToolArguments.model_validate(request.args).auth_config
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


async def test_our_oauth2_tool_lent_to_adk_gets_the_token_adk_exchanged_for_the_users_code() -> None:
    # The provider on its own thread and loop: google-adk exchanges the code with a blocking HTTP client.
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(OAuthProvider(user="ada")) as provider,
    ):
        config = calendar_config(provider)

        def whoami(tool_context: ToolContext) -> dict[str, Any]:
            """Who the user is at the calendar."""
            credential = tool_context.get_auth_response(config)
            token = credential.oauth2.access_token if credential is not None and credential.oauth2 else None
            if token is None:
                tool_context.request_credential(config)
                return {"pending": "Waiting for you to sign in."}
            claims = provider.decode(token) or {}
            return {"sub": claims.get("sub")}

        model = ScriptedModel(script=[call("whoami"), say("You are ada.")])
        agent = LlmAgent(name="calendar", model=model, tools=[to_adk(FunctionTool(whoami))])
        sessions = InMemorySessionService()
        runner = Runner(app_name="app", agent=agent, session_service=sessions)
        session = await sessions.create_session(app_name="app", user_id="user")
        first = await run(runner, session.id, genai_types.Content(role="user", parts=[genai_types.Part(text="Me?")]))
        (request,) = [
            found for event in first for found in event.get_function_calls() if found.name == REQUEST_CREDENTIAL
        ]
        second = await run(runner, session.id, await answer_with_sign_in(request))
        await runner.close()
    answers = [
        dict(found.response or {})
        for event in second
        for found in event.get_function_responses()
        if found.name == "whoami"
    ]
    assert answers == [{"sub": "ada"}]
