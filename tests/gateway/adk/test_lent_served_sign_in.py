"""A served tool that needs the user's key, consumed by a real google-adk agent through `to_adk(McpToolset(...))`: the
server's sign-in link reaches the ADK app (an `adk_request_confirmation` with the link), stays valid while the app
shows it, and the confirmed call runs with the key the user entered on the server's page. Both protocol eras."""

from __future__ import annotations

import base64
import secrets
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types as genai_types
from scripted_model import ScriptedModel, call, say

from gateway.adk import to_adk
from gateway.client import McpToolset, StreamableHTTPConnectionParams
from gateway.server import ToolServer
from gateway.tools import APIKey, AuthConfig, FunctionTool, ToolContext
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

CONFIRMATION = "adk_request_confirmation"
WEATHER = AuthConfig(auth_scheme=APIKey.model_validate({"in": "header", "name": "X-Api-Key"}), credential_key="w")


def forecast(city: str, tool_context: ToolContext) -> dict[str, Any]:
    """The forecast for `city` from a weather API that needs the user's own key."""
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


async def type_key_at(link: str, key: str) -> None:
    """What the user does with the link: open it in a browser and type the key on the server's page."""
    state = parse_qs(urlparse(link).query)["state"][0]
    async with httpx2.AsyncClient(timeout=DEADLINE, follow_redirects=True) as browser:
        shown = await browser.get(link)
        assert shown.status_code == 200, shown.text
        sent = await browser.post(str(shown.url).partition("?")[0], data={"state": state, "secret": key})
        assert sent.status_code == 200, sent.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_adk_agent_gets_the_servers_sign_in_link_and_the_confirmed_call_runs_with_the_key(mode: str) -> None:
    server = ToolServer(
        [FunctionTool(forecast)], credential_keys=[base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()]
    )
    async with serving_tools(server, auth_tokens={}) as base_url:
        toolset = McpToolset(connection_params=StreamableHTTPConnectionParams(url=f"{base_url}/mcp"), mode=mode)
        model = ScriptedModel(script=[call("forecast", {"city": "Oslo"}), say("Rain.")])
        runner = Runner(
            app_name="app",
            agent=LlmAgent(name="weather", model=model, tools=[to_adk(toolset)]),
            session_service=(sessions := InMemorySessionService()),
        )
        session = await sessions.create_session(app_name="app", user_id="user")
        first = await run(runner, session.id, genai_types.Content(role="user", parts=[genai_types.Part(text="Oslo?")]))
        (asked,) = [found for event in first for found in event.get_function_calls() if found.name == CONFIRMATION]
        hint = str((asked.args or {})["toolConfirmation"]["hint"])
        link = hint.rsplit(maxsplit=1)[-1]
        assert link.startswith(f"{base_url}/oauth/sign-in?state=")
        await type_key_at(link, "k-123")
        answer = genai_types.FunctionResponse(name=CONFIRMATION, id=asked.id, response={"confirmed": True})
        second = await run(
            runner, session.id, genai_types.Content(role="user", parts=[genai_types.Part(function_response=answer)])
        )
        await runner.close()
    answers = [
        dict(found.response or {})
        for event in second
        for found in event.get_function_responses()
        if found.name == "forecast"
    ]
    assert answers == [{"city": "Oslo", "key_used": "k-123"}]
