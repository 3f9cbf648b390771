"""A google-adk agent whose tool needs the user's API key, to be served with `serve --agent`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi.openapi import models as openapi
from google.adk.agents import LlmAgent
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
