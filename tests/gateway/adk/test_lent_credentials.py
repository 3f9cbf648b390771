"""Our tool asking for a credential, lent to a real google-adk agent with `to_adk`: the user's answer to ADK's
`adk_request_credential` reaches the tool's `get_auth_response`, and the tool runs with it."""

from __future__ import annotations

from typing import Any

import pytest
from adk_app import (
    REQUEST_CREDENTIAL,
    answer,
    authorization_code,
    forecast,
    function_calls,
    provider_on_its_own_loop,
    run,
    sign_in,
    start,
    text,
    tool_answers,
)
from google.adk.agents import LlmAgent
from google.adk.auth.auth_credential import AuthCredential as AdkAuthCredential
from google.adk.auth.auth_credential import AuthCredentialTypes as AdkAuthCredentialTypes
from google.adk.auth.auth_tool import AuthToolArguments
from google.genai import types as genai_types
from scripted_model import ScriptedModel, call, say

from gateway.adk import to_adk
from gateway.tools import AuthConfig, FunctionTool, ToolContext
from tests.support.oauth_provider import OAuthProvider

pytestmark = [
    pytest.mark.anyio,
    # google-adk warns, on first use, that its OAuth2 code exchanger is experimental.
    pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\] \w+:UserWarning"),
]


def answer_with_key(request: genai_types.FunctionCall, key: str) -> genai_types.Content:
    """What an ADK client app does: fill the exchanged credential of the requested config and send it back."""
    config = AuthToolArguments.model_validate(request.args).auth_config
    config.exchanged_auth_credential = AdkAuthCredential(auth_type=AdkAuthCredentialTypes.API_KEY, api_key=key)
    return answer(REQUEST_CREDENTIAL, request.id, config.model_dump(mode="json", exclude_none=True))


async def test_our_tool_lent_to_adk_runs_with_the_credential_the_user_gave_adk() -> None:
    model = ScriptedModel(script=[call("forecast", {"city": "Oslo"}), say("Rain.")])
    runner, session_id = await start(LlmAgent(name="weather", model=model, tools=[to_adk(FunctionTool(forecast))]))

    first = await run(runner, session_id, text("Oslo?"))
    requests = function_calls(first, REQUEST_CREDENTIAL)
    assert len(requests) == 1
    second = await run(runner, session_id, answer_with_key(requests[0], "k-123"))
    await runner.close()

    answers = tool_answers(second, "forecast")
    assert answers == [{"city": "Oslo", "key_used": "k-123"}]


def calendar_config(provider: OAuthProvider) -> AuthConfig:
    scheme, raw = authorization_code(provider, ("authorization_code",), scopes={"cal": ""})
    return AuthConfig(auth_scheme=scheme, raw_auth_credential=raw)


async def test_our_oauth2_tool_lent_to_adk_gets_the_token_adk_exchanged_for_the_users_code() -> None:
    # The provider on its own thread and loop: google-adk exchanges the code with a blocking HTTP client.
    with provider_on_its_own_loop("ada") as provider:
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
        runner, session_id = await start(LlmAgent(name="calendar", model=model, tools=[to_adk(FunctionTool(whoami))]))
        first = await run(runner, session_id, text("Me?"))
        (request,) = function_calls(first, REQUEST_CREDENTIAL)
        second = await run(runner, session_id, await sign_in(request))
        await runner.close()
    answers = tool_answers(second, "whoami")
    assert answers == [{"sub": "ada"}]
