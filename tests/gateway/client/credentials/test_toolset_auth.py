"""`McpToolset(auth_scheme=..., auth_credential=..., credential_key=...)`: ADK's toolset auth parameters, applied to
connecting and listing as well as to calls, against an OAuth-protected upstream over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from gateway.client import McpToolset, StreamableHTTPConnectionParams
from gateway.errors import UpstreamUnavailableError
from gateway.tools import (
    APIKey,
    APIKeyIn,
    AuthCredential,
    AuthCredentialTypes,
    HttpAuth,
    HTTPBearer,
    HttpCredentials,
    OAuth2,
    OAuth2Auth,
    OAuthFlowAuthorizationCode,
    OAuthFlowClientCredentials,
    OAuthFlows,
    ToolContext,
)
from tests.support.deadlines import DEADLINE
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_upstream import ProtectedUpstream, protected_upstream

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def toolset(upstream: ProtectedUpstream, **auth: Any) -> AsyncGenerator[McpToolset]:
    params = StreamableHTTPConnectionParams(url=upstream.url, connect_timeout=DEADLINE)
    async with McpToolset(connection_params=params, mode="legacy", **auth) as opened:
        yield opened


async def run(tools: McpToolset, context: ToolContext) -> dict[str, Any]:
    with anyio.fail_after(DEADLINE):
        (whoami,) = [tool for tool in await tools.get_tools(context) if tool.name == "whoami"]
        return await whoami.run_async(args={}, tool_context=context)


def bearer(token: str) -> AuthCredential:
    return AuthCredential(
        auth_type=AuthCredentialTypes.HTTP, http=HttpAuth(scheme="bearer", credentials=HttpCredentials(token=token))
    )


async def test_an_http_bearer_credential_authenticates_the_listing_and_the_calls() -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        token = provider.mint("carol", audience=upstream.url)
        async with toolset(upstream, auth_scheme=HTTPBearer(), auth_credential=bearer(token)) as tools:
            answer = await run(tools, ToolContext())
        assert answer["sub"] == "carol"
        assert upstream.seen
        assert set(upstream.seen) == {token}
        assert upstream.refused == []


async def test_an_oauth2_client_credentials_scheme_fetches_the_toolsets_token_from_the_flows_token_url() -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        provider.audience = upstream.url
        client = provider.add_client()
        scheme = OAuth2(
            flows=OAuthFlows(clientCredentials=OAuthFlowClientCredentials(tokenUrl=provider.token_endpoint))
        )
        credential = AuthCredential(
            auth_type=AuthCredentialTypes.OAUTH2,
            oauth2=OAuth2Auth(client_id=client.client_id, client_secret=client.client_secret),
        )
        async with toolset(upstream, auth_scheme=scheme, auth_credential=credential) as tools:
            answer = await run(tools, ToolContext())
        assert answer["sub"] == client.client_id
        assert provider.token_requests == 1


@pytest.mark.parametrize("where", [APIKeyIn.header, APIKeyIn.query])
async def test_an_api_key_travels_where_its_scheme_says(where: APIKeyIn) -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        credential = AuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key="k-123")
        scheme = APIKey.model_validate({"in": where, "name": "x-api-key"})
        async with toolset(upstream, auth_scheme=scheme, auth_credential=credential) as tools:
            with anyio.fail_after(DEADLINE), pytest.raises(UpstreamUnavailableError, match="401"):
                await tools.get_tools()
        query, headers = upstream.requests[0]
        if where == APIKeyIn.header:
            assert headers["x-api-key"] == "k-123"
        else:
            assert query == "x-api-key=k-123"


def authorization_code(provider: OAuthProvider) -> dict[str, Any]:
    flow = OAuthFlowAuthorizationCode(
        authorizationUrl=provider.authorization_endpoint, tokenUrl=provider.token_endpoint
    )
    client = AuthCredential(auth_type=AuthCredentialTypes.OAUTH2, oauth2=OAuth2Auth(client_id="docs-app"))
    return {"auth_scheme": OAuth2(flows=OAuthFlows(authorizationCode=flow)), "auth_credential": client}


async def test_an_authorization_code_scheme_calls_with_each_users_own_credential_and_asks_a_user_without_one() -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        auth = authorization_code(provider)
        async with toolset(upstream, **auth, credential_key="docs") as tools:
            config = tools.get_auth_config()
            assert config is not None
            assert config.credential_key == "docs"
            signed_in = AuthCredential(
                auth_type=AuthCredentialTypes.OAUTH2,
                oauth2=OAuth2Auth(client_id="docs-app", access_token=provider.mint("ada", audience=upstream.url)),
            )
            ada = ToolContext(user_id="ada", function_call_id="call-1", credentials={"docs": signed_in})
            assert (await run(tools, ada))["sub"] == "ada"

            # Bob has not signed in: the call asks for his credential the ADK way, and never uses Ada's.
            (whoami,) = await tools.get_tools(ada)
            bob = ToolContext(user_id="bob", function_call_id="call-2")
            with anyio.fail_after(DEADLINE):
                answer = await whoami.run_async(args={}, tool_context=bob)
            assert answer == {"result": "Pending User Authorization."}
            requested = bob.actions.requested_auth_configs["call-2"]
            assert requested.credential_key == "docs"
            assert [claims["sub"] for claims in map(provider.decode, upstream.seen) if claims] == ["ada"] * len(
                upstream.seen
            )

            # Listing for a user without a credential offers the sign-in alone, never trying without one.
            seen = len(upstream.seen)
            with anyio.fail_after(DEADLINE):
                (sign_in,) = await tools.get_tools(ToolContext(user_id="bob"))
                assert sign_in.name == "sign_in"
                asking = ToolContext(user_id="bob", function_call_id="call-3")
                assert "pending" in await sign_in.run_async(args={}, tool_context=asking)
            assert asking.actions.requested_auth_configs["call-3"].credential_key == "docs"
            assert len(upstream.seen) == seen
