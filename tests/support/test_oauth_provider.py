"""The loopback authorization server does what the auth suites rely on (checked with pyjwt, an independent JOSE)."""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any

import anyio
import httpx2
import jwt
import pytest

from tests.support.oauth_provider import OAuthProvider

pytestmark = pytest.mark.anyio

REDIRECT = "http://127.0.0.1:9/callback"


async def verify(provider: OAuthProvider, token: str, audience: str | None = None) -> dict[str, Any]:
    """Verify `token` the way a resource server would: metadata → jwks_uri → key by kid → signature."""
    async with httpx2.AsyncClient() as http:
        metadata = (await http.get(provider.metadata_url)).json()
        keys = jwt.PyJWKSet.from_dict((await http.get(metadata["jwks_uri"])).json())
    kid = jwt.get_unverified_header(token)["kid"]
    key = next((k for k in keys.keys if k.key_id == kid), None)
    if key is None:
        raise LookupError(f"no published key {kid}")
    options = {} if audience else {"verify_aud": False}
    return jwt.decode(token, key, algorithms=["RS256", "ES256"], audience=audience, options=options)


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
async def test_minted_tokens_verify_against_the_published_jwks(algorithm: Any) -> None:
    async with OAuthProvider(algorithm=algorithm, path="/realms/test") as provider:
        token = provider.mint("bob", scopes=["a", "b"], audience="http://rs/mcp", claims={"groups": ["ops"]})
        claims = await verify(provider, token, audience="http://rs/mcp")
    assert claims["iss"] == provider.issuer
    assert provider.issuer.endswith("/realms/test")
    assert (claims["sub"], claims["scope"], claims["groups"]) == ("bob", "a b", ["ops"])
    assert provider.jwks_fetches == 1


async def test_a_rotated_key_signs_new_tokens_and_old_ones_verify_until_it_is_retired() -> None:
    async with OAuthProvider() as provider:
        first_kid = provider.current_kid
        old = provider.mint()
        new_kid = provider.rotate_key()
        new = provider.mint()
        assert jwt.get_unverified_header(new)["kid"] == new_kid != first_kid
        await verify(provider, old)
        await verify(provider, new)
        provider.retire_key(first_kid)
        with pytest.raises(LookupError):
            await verify(provider, old)
        hidden = provider.mint(kid=provider.add_key())
        with pytest.raises(LookupError):
            await verify(provider, hidden)


async def test_client_credentials_issue_a_token_for_the_requested_resource() -> None:
    async with OAuthProvider() as provider:
        client = provider.add_client(scope="jobs:run")
        assert client.client_secret is not None
        async with httpx2.AsyncClient() as http:
            answer = await http.post(
                provider.token_endpoint,
                data={"grant_type": "client_credentials", "resource": "http://rs/mcp"},
                auth=(client.client_id, client.client_secret),
            )
            wrong = await http.post(
                provider.token_endpoint,
                data={"grant_type": "client_credentials"},
                auth=(client.client_id, "not-the-secret"),
            )
        claims = await verify(provider, answer.json()["access_token"], audience="http://rs/mcp")
    assert (claims["sub"], claims["scope"]) == (client.client_id, "jobs:run")
    assert (wrong.status_code, wrong.json()["error"]) == (401, "invalid_client")


async def test_registration_authorization_code_with_pkce_and_rotating_refresh() -> None:
    async with OAuthProvider() as provider, httpx2.AsyncClient() as http:
        provider.user, provider.user_claims = "carol", {"groups": ["admins"]}
        registered = await http.post(
            provider.registration_endpoint,
            json={"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", "client_name": "t"},
        )
        assert registered.status_code == 201
        client_id = registered.json()["client_id"]
        verifier, challenge = pkce()
        browser = provider.browser()
        query = httpx2.QueryParams(
            response_type="code",
            client_id=client_id,
            redirect_uri=REDIRECT,
            state="s1",
            code_challenge=challenge,
            code_challenge_method="S256",
            scope="tools:call",
            resource="http://rs/mcp",
        )
        await browser.redirect_handler(f"{provider.authorization_endpoint}?{query}")
        result = await browser.callback_handler()
        assert result.state == "s1"
        exchange = {"grant_type": "authorization_code", "code": result.code, "redirect_uri": REDIRECT}
        refused = await http.post(
            provider.token_endpoint, data={**exchange, "client_id": client_id, "code_verifier": "x" * 43}
        )
        assert refused.json()["error"] == "invalid_grant"  # and the code is spent

        await browser.redirect_handler(f"{provider.authorization_endpoint}?{query}")
        exchange["code"] = (await browser.callback_handler()).code
        tokens = (
            await http.post(
                provider.token_endpoint, data={**exchange, "client_id": client_id, "code_verifier": verifier}
            )
        ).json()
        claims = await verify(provider, tokens["access_token"], audience="http://rs/mcp")
        assert (claims["sub"], claims["groups"], claims["scope"]) == ("carol", ["admins"], "tools:call")

        refresh = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": tokens["refresh_token"]}
        renewed = (await http.post(provider.token_endpoint, data=refresh)).json()
        assert renewed["refresh_token"] != tokens["refresh_token"]
        replayed = await http.post(provider.token_endpoint, data=refresh)
        assert replayed.json()["error"] == "invalid_grant"
        provider.revoke(renewed["refresh_token"])
        revoked = await http.post(provider.token_endpoint, data={**refresh, "refresh_token": renewed["refresh_token"]})
        assert revoked.json()["error"] == "invalid_grant"


async def test_introspection_explains_opaque_and_signed_tokens_and_reports_revoked_ones_inactive() -> None:
    async with OAuthProvider() as provider, httpx2.AsyncClient() as http:
        resource_server = provider.add_client()
        assert resource_server.client_secret is not None
        auth = (resource_server.client_id, resource_server.client_secret)
        opaque = provider.mint_opaque("dave", scopes=["x"], audience="http://rs/mcp")
        signed = provider.mint("erin")

        async def introspect(token: str) -> dict[str, Any]:
            return (await http.post(provider.introspection_endpoint, data={"token": token}, auth=auth)).json()

        assert (await introspect(opaque))["sub"] == "dave"
        assert (await introspect(signed))["sub"] == "erin"
        provider.revoke(opaque)
        assert await introspect(opaque) == {"active": False}
        assert await introspect(provider.mint(expires_in=-5)) == {"active": False}
        anonymous = await http.post(provider.introspection_endpoint, data={"token": signed})
        assert anonymous.status_code == 401
        assert provider.introspections == 5


async def test_token_exchange_issues_a_token_for_another_audience_acting_for_the_subject() -> None:
    async with OAuthProvider() as provider, httpx2.AsyncClient() as http:
        gateway = provider.add_client(client_id="gateway")
        assert gateway.client_secret is not None
        answer = await http.post(
            provider.token_endpoint,
            data={
                "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                "subject_token": provider.mint("frank", scopes=["read"]),
                "subject_token_type": "urn:ietf:params:oauth:token-type:access_token",
                "resource": "http://upstream/mcp",
            },
            auth=("gateway", gateway.client_secret),
        )
        claims = await verify(provider, answer.json()["access_token"], audience="http://upstream/mcp")
    assert (claims["sub"], claims["act"], claims["scope"]) == ("frank", {"sub": "gateway"}, "read")


async def test_leaving_the_block_stops_the_server() -> None:
    async with OAuthProvider() as provider:
        url = provider.metadata_url
    with anyio.fail_after(10), pytest.raises(httpx2.ConnectError):
        async with httpx2.AsyncClient() as http:
            await http.get(url)
