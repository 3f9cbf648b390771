"""A served tool that signs its user in, the provider it signs in at, and a client that follows URLs like a browser;
and the same behind a gateway whose callers are OAuth users of that provider (`two_users_gateway`)."""

from __future__ import annotations

import base64
import secrets
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp import types
from mcp.client.context import ClientRequestContext
from server_harness import DEADLINE, Era, connect, http_server

from gateway.server import ToolServer
from gateway.server.auth.oauth_settings import SignInClientSettings
from gateway.tools import (
    AuthConfig,
    AuthCredential,
    AuthCredentialTypes,
    BaseTool,
    FunctionTool,
    OAuth2,
    OAuth2Auth,
    OAuthFlowAuthorizationCode,
    OAuthFlows,
    ToolContext,
)
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_gateway import ProtectedGateway, protected_gateway

__all__ = [
    "LOGIN_CLIENT",
    "Browser",
    "CalendarApi",
    "TwoUsers",
    "call",
    "new_key",
    "open_url",
    "signing_in_server",
    "two_users_gateway",
]


class CalendarApi:
    """The tool and the API it calls: the API accepts the provider's live tokens, minus those it was told to reject."""

    def __init__(self, provider: OAuthProvider) -> None:
        self.provider = provider
        self.client_id = ""
        self.client_secret = ""
        self.rejected: set[str] = set()
        self.always_reject = False
        self.runs = 0

    def config(self) -> AuthConfig:
        scheme = OAuth2(
            flows=OAuthFlows(
                authorizationCode=OAuthFlowAuthorizationCode(
                    authorizationUrl=self.provider.authorization_endpoint,
                    tokenUrl=self.provider.token_endpoint,
                    scopes={"calendar.read": "Read your calendar"},
                )
            )
        )
        raw = AuthCredential(
            auth_type=AuthCredentialTypes.OAUTH2,
            oauth2=OAuth2Auth(client_id=self.client_id, client_secret=self.client_secret),
        )
        return AuthConfig(auth_scheme=scheme, raw_auth_credential=raw, credential_key="calendar")

    def list_events(self, tool_context: ToolContext) -> dict[str, Any]:
        """List the signed-in user's calendar events."""
        self.runs += 1
        config = self.config()
        credential = tool_context.get_auth_response(config)
        token = credential.oauth2.access_token if credential and credential.oauth2 else None
        claims = self.provider.decode(token) if token else None
        if token is None or claims is None or token in self.rejected or self.always_reject:
            tool_context.request_credential(config)
            return {"pending": "Waiting for the user to sign in."}
        return {"user": claims["sub"], "scope": claims.get("scope"), "events": ["standup"]}


class Browser:
    """A URL-elicitation handler that opens the URL the way a browser would (following redirects)."""

    def __init__(self, *, action: types.ElicitAction = "accept") -> None:
        self.action = action
        self.asked: list[types.ElicitRequestURLParams] = []
        self.pages: list[httpx2.Response] = []
        self.completed: list[str] = []

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        del context
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.asked.append(params)
        if self.action == "accept":
            self.pages.append(await open_url(params.url))
        return types.ElicitResult(action=self.action)

    async def on_message(self, message: Any) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)


async def open_url(url: str) -> httpx2.Response:
    async with httpx2.AsyncClient(follow_redirects=True, timeout=DEADLINE) as http:
        return await http.get(url)


def new_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


@asynccontextmanager
async def signing_in_server(
    tool: Callable[[CalendarApi], BaseTool] = lambda api: FunctionTool(api.list_events), **options: Any
) -> AsyncGenerator[tuple[str, CalendarApi, ToolServer]]:
    """The provider, a server publishing `tool(api)` (with a credential key), and its client registered."""
    async with OAuthProvider() as provider:
        api = CalendarApi(provider)
        server = ToolServer([tool(api)], credential_keys=[new_key()], **options)
        async with http_server(server) as base_url:
            client = provider.add_client(
                redirect_uris=[f"{base_url}/oauth/callback"], grant_types=("authorization_code", "refresh_token")
            )
            api.client_id, api.client_secret = client.client_id, client.client_secret or ""
            yield base_url, api, server


async def call(base_url: str, era: Era, browser: Browser | None, tool: str = "list_events") -> types.CallToolResult:
    options: dict[str, Any] = {}
    if browser is not None:
        options = {"elicitation_callback": browser.elicit, "message_handler": browser.on_message}
    async with connect("http", era, base_url, **options) as client:
        with anyio.fail_after(DEADLINE):
            return await client.call_tool(tool, {})


LOGIN_CLIENT = SignInClientSettings(client_id="gateway-login", client_secret="gateway-login-secret")


@dataclass
class TwoUsers:
    """The provider (also the gateway's authorization server), the tool's API, the gateway and its server."""

    provider: OAuthProvider
    api: CalendarApi
    gateway: ProtectedGateway
    server: ToolServer


@asynccontextmanager
async def two_users_gateway() -> AsyncGenerator[TwoUsers]:
    """The provider, and a gateway accepting its tokens that serves a tool signing its user in there."""
    async with OAuthProvider() as provider:
        api = CalendarApi(provider)
        server = ToolServer([FunctionTool(api.list_events)], credential_keys=[new_key()])
        async with protected_gateway(provider, server, sign_in_client=LOGIN_CLIENT) as gateway:
            provider.add_client(
                client_id=LOGIN_CLIENT.client_id,
                client_secret=LOGIN_CLIENT.client_secret,
                redirect_uris=[f"{gateway.base_url}/oauth/login"],
                grant_types=("authorization_code",),
            )
            calendar = provider.add_client(
                redirect_uris=[f"{gateway.base_url}/oauth/callback"],
                grant_types=("authorization_code", "refresh_token"),
            )
            api.client_id, api.client_secret = calendar.client_id, calendar.client_secret or ""
            yield TwoUsers(provider, api, gateway, server)
