"""A served tool that needs the user's sign-in: `request_credential` ⇄ URL-mode elicitation, over real HTTP.

The loopback OAuth provider (`tests.support.oauth_provider`) approves every authorization request; the client's
URL-elicitation handler follows the URL like a browser (redirects and all), which lands on the server's callback.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import httpx2
import pytest
from mcp import types
from mcp.client.context import ClientRequestContext
from server_harness import DEADLINE, ERAS, Era, connect, http_server
from sign_in_harness import Browser, CalendarApi, call, new_key, open_url, signing_in_server

from gateway.errors import ConfigError
from gateway.server import ToolServer
from gateway.tools import (
    APIKey,
    APIKeyIn,
    AuthConfig,
    AuthCredential,
    AuthenticatedFunctionTool,
    FunctionTool,
    HTTPBase,
    HTTPBearer,
    OAuth2,
    ToolContext,
)
from tests.support.oauth_provider import OAuthProvider


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_that_requests_a_sign_in_completes_in_one_call_after_the_user_signs_in(era: Era) -> None:
    async with signing_in_server() as (base_url, api, _server):
        browser = Browser()
        result = await call(base_url, era, browser)
        assert not result.is_error, result
        assert result.structured_content == {"user": "alice", "scope": "calendar.read", "events": ["standup"]}
        assert len(browser.asked) == 1
        asked = browser.asked[0]
        # The link is the server's own page; it binds the browser, then sends it on to the provider.
        assert asked.url.startswith(f"{base_url}/oauth/sign-in?state=")
        onward = browser.pages[0].history[0].headers["location"]
        assert onward.startswith(api.provider.authorization_endpoint + "?")
        assert "code_challenge_method=S256" in onward
        assert browser.pages[0].status_code == 200
        assert "signed in" in browser.pages[0].text
        if era == "legacy":
            assert browser.completed == [asked.elicitation_id]
        # Stored for the principal, not the session: a new session needs no sign-in.
        again = Browser()
        result = await call(base_url, era, again)
        assert result.structured_content == {"user": "alice", "scope": "calendar.read", "events": ["standup"]}
        assert again.asked == []


@pytest.mark.anyio
async def test_an_expired_access_token_is_refreshed_without_asking_the_user() -> None:
    async with signing_in_server() as (base_url, api, _server):
        api.provider.token_lifetime = 5  # inside the server's expiry margin: expired as soon as it is issued
        await call(base_url, "legacy", Browser())
        requests_before = api.provider.token_requests
        browser = Browser()
        result = await call(base_url, "modern", browser)
        assert not result.is_error, result
        assert browser.asked == []
        assert api.provider.token_requests == requests_before + 1


@pytest.mark.anyio
async def test_a_revoked_refresh_token_leads_to_a_new_sign_in_not_a_loop() -> None:
    async with signing_in_server() as (base_url, api, _server):
        api.provider.token_lifetime = 5
        await call(base_url, "legacy", Browser())
        for refresh_token in list(api.provider.refresh_tokens):
            api.provider.revoke(refresh_token)
        browser = Browser()
        result = await call(base_url, "legacy", browser)
        assert not result.is_error, result
        assert len(browser.asked) == 1


@pytest.mark.anyio
async def test_a_tool_that_rejects_every_credential_gets_one_sign_in_then_an_error() -> None:
    async with signing_in_server() as (base_url, api, _server):
        api.always_reject = True
        browser = Browser()
        result = await call(base_url, "legacy", browser)
        assert result.is_error
        assert "again right after the user signed in" in result.content[0].text  # type: ignore[union-attr]
        assert len(browser.asked) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_a_client_without_url_elicitation_is_told_the_sign_in_url_and_the_next_call_works(era: Era) -> None:
    async with signing_in_server() as (base_url, _api, _server):
        result = await call(base_url, era, None)
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert "Sign-in required" in text
        url = text.rpartition(": ")[2]
        assert url.startswith(f"{base_url}/oauth/sign-in?state=")
        page = await open_url(url)
        assert page.status_code == 200
        result = await call(base_url, era, None)
        assert result.structured_content == {"user": "alice", "scope": "calendar.read", "events": ["standup"]}


def malformed_token_url(api: CalendarApi) -> FunctionTool:
    """The tool, its config naming a token endpoint no HTTP client can request."""
    config = api.config

    def malformed() -> AuthConfig:
        built = config()
        assert isinstance(built.auth_scheme, OAuth2)
        assert built.auth_scheme.flows.authorizationCode is not None
        built.auth_scheme.flows.authorizationCode.tokenUrl = "http://[::1/token"
        return built

    api.config = malformed  # type: ignore[method-assign]
    return FunctionTool(api.list_events)


@pytest.mark.anyio
async def test_a_token_endpoint_that_cannot_be_requested_fails_the_sign_in_and_tells_the_call() -> None:
    async with signing_in_server(malformed_token_url) as (base_url, _api, server):
        browser = Browser()
        result = await call(base_url, "legacy", browser)
        assert server.credentials is not None
        stored = await server.credentials.store.load_all("local")
    assert browser.pages[0].status_code == 502
    assert result.is_error
    assert "could not be reached" in result.content[0].text  # type: ignore[union-attr]
    assert stored == {}


@pytest.mark.anyio
async def test_a_declined_sign_in_ends_the_call_with_an_error_and_stores_nothing() -> None:
    async with signing_in_server() as (base_url, api, server):
        result = await call(base_url, "legacy", Browser(action="decline"))
        assert result.is_error
        assert "declined" in result.content[0].text  # type: ignore[union-attr]
        assert server.credentials is not None
        assert await server.credentials.store.load_all("local") == {}
        assert api.runs == 1


@pytest.mark.anyio
async def test_a_callback_with_a_wrong_replayed_or_missing_state_does_nothing_but_say_so() -> None:
    async with signing_in_server() as (base_url, api, server):
        landed: list[str] = []

        class Recorder(Browser):
            async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
                assert isinstance(params, types.ElicitRequestURLParams)
                async with httpx2.AsyncClient(timeout=DEADLINE) as http:
                    onward = (await http.get(params.url)).headers["location"]  # the link binds this client
                    redirect = (await http.get(onward)).headers["location"]
                    landed.append(redirect)
                    forged = redirect.replace("state=", "state=x")
                    assert (await http.get(forged)).status_code == 400
                    assert (await http.get(f"{base_url}/oauth/callback?code=abc")).status_code == 400
                    assert (await http.get(redirect)).status_code == 200
                return await super().elicit(context, params)  # a second visit: a fresh code, the same state

        browser = Recorder()
        result = await call(base_url, "legacy", browser)
        assert not result.is_error, result
        assert browser.pages[0].status_code == 400
        assert "already used or expired" in browser.pages[0].text
        exchanges = api.provider.token_requests
        async with httpx2.AsyncClient(timeout=DEADLINE) as http:
            replay = await http.get(landed[0])
        assert replay.status_code == 400
        assert api.provider.token_requests == exchanges
        assert server.credentials is not None
        assert set(await server.credentials.store.load_all("local")) == {"calendar"}


@pytest.mark.anyio
async def test_without_a_credential_key_the_tool_gets_an_error_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ADK_MCP_GATEWAY_CREDENTIAL_KEY", raising=False)
    async with OAuthProvider() as provider:
        api = CalendarApi(provider)
        async with http_server(ToolServer([FunctionTool(api.list_events)])) as base_url:
            result = await call(base_url, "legacy", Browser())
    assert result.is_error
    assert "ADK_MCP_GATEWAY_CREDENTIAL_KEY" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
@pytest.mark.parametrize("era", ERAS)
async def test_a_google_adk_tool_asking_with_adks_own_auth_config_signs_the_user_in_too(era: Era) -> None:
    from google.adk.tools import FunctionTool as AdkFunctionTool
    from google.adk.tools.tool_context import ToolContext as AdkToolContext

    from gateway.adk import from_adk
    from gateway.adk.auth import auth_config_to_adk

    def adk_tool(api: CalendarApi) -> Any:
        def list_adk_events(tool_context: AdkToolContext) -> dict[str, Any]:
            """List the signed-in user's calendar events (a google-adk tool)."""
            config = auth_config_to_adk(api.config())
            credential = tool_context.get_auth_response(config)
            token = credential.oauth2.access_token if credential and credential.oauth2 else None
            claims = api.provider.decode(token) if token else None
            if claims is None:
                tool_context.request_credential(config)
                return {"pending": "Waiting for the user to sign in."}
            return {"user": claims["sub"]}

        return from_adk(AdkFunctionTool(list_adk_events))

    async with signing_in_server(adk_tool) as (base_url, _api, _server):
        browser = Browser()
        result = await call(base_url, era, browser, tool="list_adk_events")
        assert not result.is_error, result
        assert result.structured_content == {"user": "alice"}
        assert len(browser.asked) == 1


class KeyPad(Browser):
    """Opens the server's credential page and submits `values` on it, as a user typing them would."""

    def __init__(self, values: dict[str, str]) -> None:
        super().__init__()
        self.values = values

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        del context
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.asked.append(params)
        state = parse_qs(urlparse(params.url).query)["state"][0]
        async with httpx2.AsyncClient(timeout=DEADLINE, follow_redirects=True) as http:
            shown = await http.get(params.url)
            assert shown.status_code == 200
            assert "type='password'" in shown.text
            action = str(shown.url).partition("?")[0]
            self.pages.append(await http.post(action, data={"state": state, **self.values}))
            # The same state again: already used.
            self.pages.append(await http.post(action, data={"state": state, **self.values}))
        return types.ElicitResult(action="accept")


def weather_tool(expected: dict[str, str]) -> Any:
    schemes = {
        "apiKey": APIKey(**{"in": APIKeyIn.header, "name": "X-API-Key"}),
        "bearer": HTTPBearer(),
        "basic": HTTPBase(scheme="basic"),
    }

    def weather(kind: str, tool_context: ToolContext) -> dict[str, Any]:
        """Today's weather from an API that needs the user's own credential."""
        config = AuthConfig(auth_scheme=schemes[kind], credential_key=f"weather-{kind}")
        credential = tool_context.get_auth_response(config)
        given = None
        if credential is not None:
            http = credential.http
            given = credential.api_key or (http.credentials.token or http.credentials.password if http else None)
        if given != expected[kind]:
            tool_context.request_credential(config)
            return {"pending": "Waiting for your credential."}
        return {"weather": "sunny"}

    return FunctionTool(weather)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("era", "kind", "values"),
    [
        ("legacy", "apiKey", {"secret": "k-123"}),
        ("modern", "apiKey", {"secret": "k-123"}),
        ("modern", "bearer", {"secret": "t-456"}),
        ("legacy", "basic", {"username": "alice", "password": "p-789"}),
    ],
)
async def test_an_api_key_or_token_is_entered_on_the_servers_own_page_never_through_the_client(
    era: Era, kind: str, values: dict[str, str]
) -> None:
    expected = {"apiKey": "k-123", "bearer": "t-456", "basic": "p-789"}
    server = ToolServer([weather_tool(expected)], credential_keys=[new_key()])
    async with http_server(server) as base_url:
        keypad = KeyPad(values)
        options = {"elicitation_callback": keypad.elicit, "message_handler": keypad.on_message}
        async with connect("http", era, base_url, **options) as client:
            with anyio.fail_after(DEADLINE):
                result = await client.call_tool("weather", {"kind": kind})
                again = await client.call_tool("weather", {"kind": kind})
        assert result.structured_content == {"weather": "sunny"}, result
        assert again.structured_content == {"weather": "sunny"}
        assert len(keypad.asked) == 1
        assert keypad.asked[0].url.startswith(f"{base_url}/oauth/sign-in?state=")
        assert [page.status_code for page in keypad.pages] == [200, 400]
        if era == "legacy":
            assert keypad.completed == [keypad.asked[0].elicitation_id]


def test_a_server_with_a_tool_that_needs_credentials_refuses_to_start_without_a_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ADK_MCP_GATEWAY_CREDENTIAL_KEY", raising=False)
    config = AuthConfig(auth_scheme=HTTPBearer(), credential_key="k")
    tool = AuthenticatedFunctionTool(func=lambda credential=None: "ok", auth_config=config)
    with pytest.raises(ConfigError, match=r"<lambda> ask their users for credentials.*ADK_MCP_GATEWAY_CREDENTIAL_KEY"):
        ToolServer([tool])
    assert ToolServer([tool], credential_keys=[new_key()]).credentials is not None


@pytest.mark.anyio
async def test_an_authenticated_function_tool_gets_the_signed_in_credential_as_its_argument() -> None:
    made: list[AuthenticatedFunctionTool] = []

    def tool(api: CalendarApi) -> Any:
        def whoami(credential: AuthCredential) -> dict[str, Any]:
            """Who is signed in."""
            assert credential.oauth2 is not None
            claims = api.provider.decode(credential.oauth2.access_token or "")
            return {"user": claims["sub"] if claims else None}

        made.append(AuthenticatedFunctionTool(func=whoami, auth_config=api.config()))
        return made[0]

    async with signing_in_server(tool) as (base_url, api, _server):
        made[0].auth_config = api.config()  # the OAuth client exists once the server's callback URL is known
        browser = Browser()
        result = await call(base_url, "legacy", browser, tool="whoami")
        assert result.structured_content == {"user": "alice"}, result
        assert len(browser.asked) == 1
