"""A real google-adk agent run turn by turn the way an ADK client app runs it, for the tests of tools lent with
`to_adk`: the scripted runner, the user's turns, and the app's answers to ADK's credential requests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.from_thread
import httpx2
from google.adk.agents import LlmAgent
from google.adk.auth.auth_tool import AuthConfig as AdkAuthConfig
from google.adk.auth.auth_tool import AuthToolArguments
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types as genai_types

from gateway.tools import (
    APIKey,
    AuthConfig,
    AuthCredential,
    AuthCredentialTypes,
    OAuth2,
    OAuth2Auth,
    OAuthFlowAuthorizationCode,
    OAuthFlows,
    ToolContext,
)
from tests.support.deadlines import DEADLINE
from tests.support.oauth_provider import OAuthProvider

REQUEST_CREDENTIAL = "adk_request_credential"
REDIRECT_URI = "http://127.0.0.1:9/app/oauth-callback"
"""The client app's redirect URI: never served, the test 'browser' reads the redirect instead of following it."""

WEATHER = AuthConfig(auth_scheme=APIKey.model_validate({"in": "header", "name": "X-Api-Key"}), credential_key="weather")


def forecast(city: str, tool_context: ToolContext) -> dict[str, Any]:
    """The forecast for `city` from a weather API that needs the user's own key."""
    credential = tool_context.get_auth_response(WEATHER)
    if credential is None:
        tool_context.request_credential(WEATHER)
        return {"pending": "Waiting for your weather API key."}
    return {"city": city, "key_used": credential.api_key}


async def start(agent: LlmAgent, *, user: str = "user", **options: Any) -> tuple[Runner, str]:
    """A runner of `agent` for app "app" (`options` go to the `Runner`) and a new session of `user` in it."""
    sessions = InMemorySessionService()
    runner = Runner(app_name="app", agent=agent, session_service=sessions, **options)
    session = await sessions.create_session(app_name="app", user_id=user)
    return runner, session.id


async def run(runner: Runner, session_id: str, message: genai_types.Content, *, user: str = "user") -> list[Event]:
    """One turn of the user: the events the runner gives for `message`."""
    events: list[Event] = []
    with anyio.fail_after(DEADLINE):
        async for event in runner.run_async(user_id=user, session_id=session_id, new_message=message):
            events.append(event)
    return events


def text(words: str) -> genai_types.Content:
    return genai_types.Content(role="user", parts=[genai_types.Part(text=words)])


def answer(name: str, call_id: str | None, response: dict[str, Any]) -> genai_types.Content:
    """The user's turn that answers the function call `call_id` of `name`."""
    found = genai_types.FunctionResponse(name=name, id=call_id, response=response)
    return genai_types.Content(role="user", parts=[genai_types.Part(function_response=found)])


def function_calls(events: list[Event], name: str) -> list[genai_types.FunctionCall]:
    return [found for event in events for found in event.get_function_calls() if found.name == name]


def tool_answers(events: list[Event], name: str) -> list[dict[str, Any]]:
    return [
        dict(found.response or {}) for event in events for found in event.get_function_responses() if found.name == name
    ]


@contextmanager
def provider_on_its_own_loop(user: str) -> Iterator[OAuthProvider]:
    """The provider on its own thread and event loop, as a real one is elsewhere: google-adk fetches some tokens
    with a blocking HTTP client on the agent's event loop (its code exchanger, `AuthHandler.get_auth_response`)."""
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(OAuthProvider(user=user)) as provider,
    ):
        yield provider


def authorization_code(
    provider: OAuthProvider, grant_types: tuple[str, ...], scopes: dict[str, str] | None = None
) -> tuple[OAuth2, AuthCredential]:
    """The scheme and raw credential of a confidential client of `provider`, signing users in by code and PKCE."""
    client = provider.add_client(redirect_uris=[REDIRECT_URI], grant_types=grant_types)
    flow = OAuthFlowAuthorizationCode(
        authorizationUrl=provider.authorization_endpoint, tokenUrl=provider.token_endpoint, scopes=scopes or {}
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
    return OAuth2(flows=OAuthFlows(authorizationCode=flow)), credential


async def sign_in(request: genai_types.FunctionCall) -> genai_types.Content:
    """What an ADK client app does with `adk_request_credential` for OAuth2: send the user to `auth_uri`, put the
    redirect it lands on into the auth config's exchanged credential, and answer the function call with that
    config."""
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
    return answer(REQUEST_CREDENTIAL, request.id, config.model_dump(mode="json", exclude_none=True))
