"""`serve --agent` with an agent whose tool asks for the user's credential (ADK's `adk_request_credential`): the
served agent signs the user in the way a served tool that asks does (a URL elicitation to the server's own page),
in a real serve process, in both protocol eras."""

from __future__ import annotations

import base64
import secrets
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import pytest
from credential_agents import CALENDAR_ENV, MARKER
from mcp import Client, StdioServerParameters, types
from mcp.client.context import ClientRequestContext

from tests.support.deadlines import DEADLINE
from tests.support.loopback import free_port
from tests.support.oauth_provider import OAuthProvider
from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent


class KeyPad:
    """Opens the sign-in link like a browser and types the key on the server's own page."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.asked: list[types.ElicitRequestURLParams] = []

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        del context
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.asked.append(params)
        state = parse_qs(urlparse(params.url).query)["state"][0]
        async with httpx2.AsyncClient(timeout=DEADLINE, follow_redirects=True) as browser:
            shown = await browser.get(params.url)
            assert shown.status_code == 200, shown.text
            sent = await browser.post(str(shown.url).partition("?")[0], data={"state": state, "secret": self.key})
            assert sent.status_code == 200, sent.text
        return types.ElicitResult(action="accept")


def served_weather_agent(
    marker: Path, *, credential_key: bool = True, agent_name: str = "weather_agent", **extra_env: str
) -> StdioServerParameters:
    env = {"PYTHONPATH": f"{ROOT}:{HERE}", MARKER: str(marker), **extra_env}
    if credential_key:
        env["ADK_MCP_GATEWAY_CREDENTIAL_KEY"] = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
    agent = f"{HERE / 'credential_agents.py'}:{agent_name}"
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", "--agent", agent, "--state", ":memory:"],
        cwd=ROOT,
        env=env,
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_served_agent_whose_tool_needs_a_key_signs_the_user_in_and_answers(mode: Any, tmp_path: Path) -> None:
    marker = tmp_path / "key.txt"
    keypad = KeyPad("k-123")
    async with Client(served_weather_agent(marker), mode=mode, elicitation_callback=keypad.elicit) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("weather", {"request": "Weather in Oslo?"})
    assert not result.is_error, result.content
    assert result.content == [types.TextContent(text="Rain in Oslo.")]
    assert len(keypad.asked) == 1
    assert keypad.asked[0].url.startswith("http://127.0.0.1:")
    assert marker.read_text() == "k-123"


async def test_a_served_agent_whose_tool_needs_a_key_on_a_server_without_a_credential_key_says_so(
    tmp_path: Path,
) -> None:
    keypad = KeyPad("k-123")
    params = served_weather_agent(tmp_path / "key.txt", credential_key=False)
    async with Client(params, elicitation_callback=keypad.elicit) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("weather", {"request": "Weather in Oslo?"})
    assert result.is_error
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    assert "ADK_MCP_GATEWAY_CREDENTIAL_KEY" in content.text
    assert keypad.asked == []


class FollowingBrowser:
    """Opens the sign-in link like a browser: the server's page, the provider, back to the server's callback."""

    def __init__(self) -> None:
        self.pages: list[httpx2.Response] = []

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        del context
        assert isinstance(params, types.ElicitRequestURLParams), params
        async with httpx2.AsyncClient(timeout=DEADLINE, follow_redirects=True) as browser:
            self.pages.append(await browser.get(params.url))
        return types.ElicitResult(action="accept")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_served_agent_whose_tool_signs_in_with_oauth2_gets_the_users_token(mode: Any, tmp_path: Path) -> None:
    marker = tmp_path / "token.txt"
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
    async with OAuthProvider(user="ada") as provider:
        # ADK keeps the client secret out of the request it records, so the agent's tool signs in as a public client.
        client = provider.add_client(redirect_uris=[callback], grant_types=("authorization_code",), public=True)
        env = dict(
            zip(CALENDAR_ENV, (provider.authorization_endpoint, provider.token_endpoint, client.client_id), strict=True)
        )
        params = served_weather_agent(marker, agent_name="calendar_agent", ADK_MCP_GATEWAY_CALLBACK_URL=callback, **env)
        browser = FollowingBrowser()
        async with Client(params, mode=mode, elicitation_callback=browser.elicit) as client_session:
            with anyio.fail_after(DEADLINE):
                result = await client_session.call_tool("calendar", {"request": "Who am I?"})
        assert not result.is_error, result.content
        assert result.content == [types.TextContent(text="You are signed in.")]
        assert [page.status_code for page in browser.pages] == [200]
        assert (provider.decode(marker.read_text()) or {}).get("sub") == "ada"
