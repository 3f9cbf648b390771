"""A served tool whose credential is OpenID Connect by discovery URL (`OpenIdConnect(openIdConnectUrl=...)`, ADK's
OIDC scheme): the server reads the provider's discovery document and signs the user in, over real HTTP in both
protocol eras."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import types
from server_harness import ERAS, Era
from sign_in_harness import Browser, CalendarApi, call, signing_in_server

from gateway.tools import AuthConfig, AuthCredential, AuthCredentialTypes, FunctionTool, OAuth2Auth, OpenIdConnect

pytestmark = pytest.mark.anyio


class DiscoveredCalendar(CalendarApi):
    """The calendar API of the harness, its provider named by its OpenID Connect discovery URL alone."""

    discovery_url = ""

    def config(self) -> AuthConfig:
        raw = AuthCredential(
            auth_type=AuthCredentialTypes.OPEN_ID_CONNECT,
            oauth2=OAuth2Auth(client_id=self.client_id, client_secret=self.client_secret),
        )
        scheme = OpenIdConnect(openIdConnectUrl=self.discovery_url, scopes=["openid", "calendar.read"])
        return AuthConfig(auth_scheme=scheme, raw_auth_credential=raw, credential_key="calendar-oidc")


def discovered_tool(api: CalendarApi) -> Any:
    api.__class__ = DiscoveredCalendar
    assert isinstance(api, DiscoveredCalendar)
    api.discovery_url = f"{api.provider.origin}/.well-known/openid-configuration"
    return FunctionTool(api.list_events)


@pytest.mark.parametrize("era", ERAS)
async def test_openid_connect_by_discovery_url_signs_the_user_in(era: Era) -> None:
    async with signing_in_server(discovered_tool) as (base_url, api, _server):
        browser = Browser()
        result = await call(base_url, era, browser)
    assert not result.is_error, result
    assert result.structured_content == {"user": "alice", "scope": "openid calendar.read", "events": ["standup"]}
    assert len(browser.asked) == 1
    onward = browser.pages[0].history[0].headers["location"]
    assert onward.startswith(api.provider.authorization_endpoint + "?")


async def test_a_discovery_url_that_answers_no_document_is_named_in_the_error() -> None:
    def broken(api: CalendarApi) -> Any:
        tool = discovered_tool(api)
        assert isinstance(api, DiscoveredCalendar)
        api.discovery_url = f"{api.provider.origin}/nowhere/.well-known/openid-configuration"
        return tool

    async with signing_in_server(broken) as (base_url, api, _server):
        browser = Browser()
        result = await call(base_url, "legacy", browser)
    assert result.is_error
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    text = content.text
    assert f"{api.provider.origin}/nowhere/.well-known/openid-configuration" in text
    assert "404" in text
    assert browser.asked == []
