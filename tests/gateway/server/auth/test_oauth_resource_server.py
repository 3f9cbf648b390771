"""The HTTP front as an OAuth 2.1 resource server, against a real authorization server on loopback."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from fixture_tools import TOOLS
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from server_harness import INITIALIZE, MCP_HEADERS

from gateway.server import ToolServer
from gateway.server.auth.oauth_settings import IntrospectionSettings
from gateway.state import InMemoryStateStore
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_gateway import DEADLINE, ProtectedGateway, protected_gateway, token_client

pytestmark = pytest.mark.anyio


async def post_initialize(base_url: str, token: str | None) -> httpx2.Response:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with httpx2.AsyncClient(timeout=DEADLINE) as http:
        return await http.post(f"{base_url}/mcp", content=json.dumps(INITIALIZE), headers=headers)


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate: Bearer k="v", ...` header."""
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer")
    params: dict[str, str] = {}
    for part in value[len("Bearer") :].split('", '):
        if "=" in part:
            key, _, raw = part.strip().partition("=")
            params[key] = raw.strip('"')
    return params


@asynccontextmanager
async def protected_server(provider: OAuthProvider, **settings: Any) -> AsyncGenerator[ProtectedGateway]:
    """The fixture tools, in-memory state, protected by `provider`."""
    async with protected_gateway(provider, ToolServer(TOOLS, state_store=InMemoryStateStore()), **settings) as gateway:
        yield gateway


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def test_protected_resource_metadata_is_served_at_the_path_suffixed_and_root_well_known_urls() -> None:
    async with (
        OAuthProvider() as provider,
        protected_server(provider, required_scopes=("mcp",)) as gateway,
        httpx2.AsyncClient(timeout=DEADLINE) as http,
    ):
        suffixed = await http.get(
            f"{gateway.base_url}/.well-known/oauth-protected-resource/mcp",
            headers={"Origin": "http://localhost:6274"},  # the MCP Inspector's page
        )
        root = await http.get(f"{gateway.base_url}/.well-known/oauth-protected-resource")
    assert suffixed.json() == root.json()
    document = suffixed.json()
    assert document["resource"] == gateway.resource
    assert document["authorization_servers"] == [provider.issuer]
    assert document["scopes_supported"] == ["mcp"]
    assert suffixed.headers["access-control-allow-origin"] == "*"


async def test_a_request_without_a_token_gets_401_pointing_at_the_resource_metadata_and_no_error_code() -> None:
    async with OAuthProvider() as provider, protected_server(provider) as gateway:
        response = await post_initialize(gateway.base_url, None)
    assert response.status_code == 401
    params = challenge(response)
    assert params["resource_metadata"] == f"{gateway.base_url}/.well-known/oauth-protected-resource/mcp"
    assert "error" not in params


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_client_discovers_the_authorization_server_from_the_401_and_calls_a_tool(mode: str) -> None:
    async with OAuthProvider() as provider, protected_server(provider, required_scopes=("mcp:tools",)) as gateway:
        browser = provider.browser()
        storage = MemoryStorage()
        auth = OAuthClientProvider(
            f"{gateway.base_url}/mcp",
            OAuthClientMetadata(redirect_uris=["http://127.0.0.1:9/callback"], client_name="test"),  # type: ignore[list-item]
            storage,
            redirect_handler=browser.redirect_handler,
            callback_handler=browser.callback_handler,
        )
        with anyio.fail_after(DEADLINE):
            async with httpx2.AsyncClient(auth=auth, timeout=DEADLINE) as http:
                transport = streamable_http_client(f"{gateway.base_url}/mcp", http_client=http)
                async with Client(transport, mode=mode) as client:  # type: ignore[arg-type]
                    result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}
    assert storage.client is not None
    assert storage.client.client_id.startswith("dcr-")
    assert storage.tokens is not None
    claims = provider.decode(storage.tokens.access_token)
    assert claims is not None
    assert claims["aud"] == gateway.resource  # RFC 8707: the token was asked for this resource
    assert claims["scope"] == "mcp:tools"  # the scope came from the resource metadata
    assert len(browser.visited) == 1


async def test_a_valid_token_is_served_and_its_subject_is_the_principal_of_user_state() -> None:
    async with OAuthProvider() as provider, protected_server(provider) as gateway:
        alice_1 = provider.mint("alice", audience=gateway.resource)
        alice_2 = provider.mint("alice", audience=gateway.resource, client_id="another-app")
        bob = provider.mint("bob", audience=gateway.resource)
        with anyio.fail_after(DEADLINE):
            async with token_client(gateway.base_url, alice_1) as client:
                first = (await client.call_tool("bump", {})).structured_content
            async with token_client(gateway.base_url, alice_2) as client:
                second = (await client.call_tool("bump", {})).structured_content
            async with token_client(gateway.base_url, bob, mode="auto") as client:
                third = (await client.call_tool("bump", {})).structured_content
    assert first is not None
    assert second is not None
    assert third is not None
    assert (first["user"], second["user"], third["user"]) == (1, 2, 1)


def _forged(header: dict[str, Any], claims: dict[str, Any], secret: bytes) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest() if secret else b""
    return f"{signing_input}.{b64(signature)}"


@pytest.mark.parametrize(
    "bad",
    [
        "expired",
        "not-yet-valid",
        "wrong-audience",
        "no-audience",
        "wrong-issuer",
        "unpublished-key",
        "alg-none",
        "hs256",
    ],
)
async def test_a_token_that_is_not_valid_here_gets_401_invalid_token(bad: str) -> None:
    async with OAuthProvider() as provider, protected_server(provider, leeway=5) as gateway:
        resource = gateway.resource
        good_claims = provider.decode(provider.mint("mallory", audience=resource))
        assert good_claims is not None
        public_key = json.dumps(provider.jwks()["keys"][0]).encode()
        token = {
            "expired": lambda: provider.mint(audience=resource, expires_in=-60),
            "not-yet-valid": lambda: provider.mint(audience=resource, not_before=60),
            "wrong-audience": lambda: provider.mint(audience="http://127.0.0.1:1/other"),
            "no-audience": provider.mint,
            "wrong-issuer": lambda: provider.mint(audience=resource, issuer="http://127.0.0.1:1"),
            "unpublished-key": lambda: provider.mint(audience=resource, kid=provider.add_key()),
            "alg-none": lambda: _forged({"alg": "none", "kid": provider.current_kid}, good_claims, b""),
            "hs256": lambda: _forged({"alg": "HS256", "kid": provider.current_kid}, good_claims, public_key),
        }[bad]()
        response = await post_initialize(gateway.base_url, token)
    assert response.status_code == 401
    assert challenge(response)["error"] == "invalid_token"


async def test_a_token_lacking_a_required_scope_gets_403_insufficient_scope_naming_the_scopes() -> None:
    async with (
        OAuthProvider() as provider,
        protected_server(provider, required_scopes=("mcp:tools", "mcp:read")) as gateway,
    ):
        partial = provider.mint(audience=gateway.resource, scopes=["mcp:read"])
        full = provider.mint(audience=gateway.resource, scopes=["mcp:read", "mcp:tools", "other"])
        refused = await post_initialize(gateway.base_url, partial)
        accepted = await post_initialize(gateway.base_url, full)
    assert refused.status_code == 403
    params = challenge(refused)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "mcp:tools mcp:read"
    assert accepted.status_code == 200


async def test_a_rotated_key_is_followed_and_a_retired_key_stops_working_after_the_cache_expires() -> None:
    async with OAuthProvider() as provider, protected_server(provider, jwks_max_age=3600) as gateway:
        old_kid = provider.current_kid
        assert (await post_initialize(gateway.base_url, provider.mint(audience=gateway.resource))).status_code == 200
        provider.rotate_key()
        rotated = await post_initialize(gateway.base_url, provider.mint(audience=gateway.resource))
        old = await post_initialize(gateway.base_url, provider.mint(audience=gateway.resource, kid=old_kid))
    assert rotated.status_code == 200
    assert old.status_code == 200  # the old key is still published
    assert provider.jwks_fetches == 2  # once at the first token, once for the new kid


async def test_random_key_ids_cannot_make_the_gateway_hammer_the_jwks_endpoint() -> None:
    async with OAuthProvider() as provider, protected_server(provider, jwks_refetch_interval=3600) as gateway:
        statuses = [
            (
                await post_initialize(
                    gateway.base_url, provider.mint(audience=gateway.resource, kid=provider.add_key())
                )
            ).status_code
            for _ in range(5)
        ]
        good = await post_initialize(gateway.base_url, provider.mint(audience=gateway.resource))
    assert statuses == [401] * 5
    assert good.status_code == 200
    assert provider.jwks_fetches == 2  # the first fetch, and one refetch for the first unknown kid


async def test_an_opaque_token_is_checked_by_introspection_and_a_revoked_one_is_refused() -> None:
    async with OAuthProvider() as provider:
        gateway_client = provider.add_client(client_id="gateway")
        assert gateway_client.client_secret is not None
        introspection = IntrospectionSettings(
            client_id="gateway", client_secret=gateway_client.client_secret, cache_seconds=0
        )
        async with protected_server(provider, introspection=introspection) as gateway:
            opaque = provider.mint_opaque("olga", audience=gateway.resource)
            wrong_audience = provider.mint_opaque("olga", audience="http://127.0.0.1:1/mcp")
            with anyio.fail_after(DEADLINE):
                async with token_client(gateway.base_url, opaque) as client:
                    state = (await client.call_tool("bump", {})).structured_content
            refused_audience = await post_initialize(gateway.base_url, wrong_audience)
            provider.revoke(opaque)
            revoked = await post_initialize(gateway.base_url, opaque)
    assert state is not None
    assert state["user"] == 1
    assert refused_audience.status_code == 401
    assert revoked.status_code == 401


async def test_an_opaque_token_whose_introspection_names_no_audience_gets_401_invalid_token() -> None:
    async with OAuthProvider() as provider:
        gateway_client = provider.add_client(client_id="gateway")
        assert gateway_client.client_secret is not None
        introspection = IntrospectionSettings(client_id="gateway", client_secret=gateway_client.client_secret)
        async with protected_server(provider, introspection=introspection) as gateway:
            no_audience = provider.mint_opaque("mallory", client_id="other-app")
            empty_audience = provider.mint_opaque("mallory", client_id="other-app", claims={"aud": []})
            refused = [await post_initialize(gateway.base_url, t) for t in (no_audience, empty_audience)]
            accepted = await post_initialize(gateway.base_url, provider.mint_opaque(audience=gateway.resource))
    assert [r.status_code for r in refused] == [401, 401]
    for response in refused:
        params = challenge(response)
        assert params["error"] == "invalid_token"
        assert params["error_description"] == "The access token is not valid for this resource."
    assert accepted.status_code == 200


async def test_an_opaque_token_for_a_configured_audience_is_accepted_and_one_for_the_resource_then_is_not() -> None:
    async with OAuthProvider() as provider:
        gateway_client = provider.add_client(client_id="gateway")
        assert gateway_client.client_secret is not None
        introspection = IntrospectionSettings(client_id="gateway", client_secret=gateway_client.client_secret)
        async with protected_server(provider, introspection=introspection, audiences=("api://tools",)) as gateway:
            api = provider.mint_opaque(audience="api://tools")
            in_a_list = provider.mint_opaque(claims={"aud": ["api://other", "api://tools"]})
            resource = provider.mint_opaque(audience=gateway.resource)
            none = provider.mint_opaque()
            statuses = [
                (await post_initialize(gateway.base_url, t)).status_code for t in (api, in_a_list, resource, none)
            ]
    assert statuses == [200, 200, 401, 401]


async def test_issuer_metadata_is_discovered_for_an_issuer_with_a_path() -> None:
    async with OAuthProvider(path="/realms/test") as provider, protected_server(provider) as gateway:
        response = await post_initialize(gateway.base_url, provider.mint(audience=gateway.resource))
    assert response.status_code == 200
