"""google-adk agents whose tools need the user's credential (an API key, an OAuth2 sign-in), to be served with
`serve --agent`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi.openapi import models as openapi
from google.adk.agents import LlmAgent
from google.adk.auth.auth_credential import AuthCredential, AuthCredentialTypes, OAuth2Auth
from google.adk.auth.auth_tool import AuthConfig
from google.adk.tools import ToolContext
from scripted_model import ScriptedModel, call, say

WEATHER = AuthConfig(
    auth_scheme=openapi.APIKey.model_validate({"in": "header", "name": "X-Api-Key"}), credential_key="weather"
)
MARKER = "WEATHER_MARKER"
"""The environment variable naming the file the tool writes the key it was given to (the test reads it)."""


def forecast(city: str, tool_context: ToolContext) -> dict[str, Any]:
    """The forecast for `city` from a weather API that needs the user's own key."""
    credential = tool_context.get_auth_response(WEATHER)
    if credential is None or not credential.api_key:
        tool_context.request_credential(WEATHER)
        return {"pending": "Waiting for your weather API key."}
    Path(os.environ[MARKER]).write_text(credential.api_key)
    return {"city": city, "forecast": "rain"}


weather_model = ScriptedModel(script=[call("forecast", {"city": "Oslo"}), say("Rain in Oslo.")])
weather_agent = LlmAgent(name="weather", model=weather_model, tools=[forecast], description="Forecasts weather.")


CALENDAR_ENV = ("CALENDAR_AUTHORIZE_URL", "CALENDAR_TOKEN_URL", "CALENDAR_CLIENT_ID")
"""The environment variables naming the provider's endpoints and the (public) client the calendar agent signs in
with."""


def _calendar_config() -> AuthConfig:
    authorize, token, client_id = (os.environ.get(name, "") for name in CALENDAR_ENV)
    flow = openapi.OAuthFlowAuthorizationCode(authorizationUrl=authorize, tokenUrl=token, scopes={"cal": ""})
    return AuthConfig(
        auth_scheme=openapi.OAuth2(flows=openapi.OAuthFlows(authorizationCode=flow)),
        raw_auth_credential=AuthCredential(
            auth_type=AuthCredentialTypes.OAUTH2,
            oauth2=OAuth2Auth(client_id=client_id),
        ),
        credential_key="calendar",
    )


def whoami(tool_context: ToolContext) -> dict[str, Any]:
    """Who the user is at the calendar (writes the access token to the marker file)."""
    config = _calendar_config()
    credential = tool_context.get_auth_response(config)
    token = credential.oauth2.access_token if credential is not None and credential.oauth2 is not None else None
    if not token:
        tool_context.request_credential(config)
        return {"pending": "Waiting for you to sign in."}
    Path(os.environ[MARKER]).write_text(token)
    return {"signed_in": True}


calendar_model = ScriptedModel(script=[call("whoami"), say("You are signed in.")])
calendar_agent = LlmAgent(name="calendar", model=calendar_model, tools=[whoami], description="Knows who you are.")
