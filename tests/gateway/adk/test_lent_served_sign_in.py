"""A served tool that needs the user's key, consumed by a real google-adk agent through `to_adk(McpToolset(...))`: the
server's sign-in link reaches the ADK app (an `adk_request_confirmation` with the link), stays valid while the app
shows it, and the confirmed call runs with the key the user entered on the server's page. Both protocol eras."""

from __future__ import annotations

import base64
import secrets
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest
from adk_app import answer, forecast, function_calls, run, start, text, tool_answers
from google.adk.agents import LlmAgent
from scripted_model import ScriptedModel, call, say

from gateway.adk import to_adk
from gateway.client import McpToolset, StreamableHTTPConnectionParams
from gateway.server import ToolServer
from gateway.tools import FunctionTool
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

CONFIRMATION = "adk_request_confirmation"


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
        runner, session_id = await start(LlmAgent(name="weather", model=model, tools=[to_adk(toolset)]))
        first = await run(runner, session_id, text("Oslo?"))
        (asked,) = function_calls(first, CONFIRMATION)
        hint = str((asked.args or {})["toolConfirmation"]["hint"])
        link = hint.rsplit(maxsplit=1)[-1]
        assert link.startswith(f"{base_url}/oauth/sign-in?state=")
        await type_key_at(link, "k-123")
        second = await run(runner, session_id, answer(CONFIRMATION, asked.id, {"confirmed": True}))
        await runner.close()
    answers = tool_answers(second, "forecast")
    assert answers == [{"city": "Oslo", "key_used": "k-123"}]
