"""The issuer's signing keys while its JWKS endpoint fails or hangs, against a real authorization server on loopback.

Every test first lets the gateway load the keys, then breaks the JWKS endpoint. `jwksMaxAge` is tiny, so every
later token finds the cached keys past their age; `jwksRefetchInterval` is long, so one refetch is all the gateway
may try during the test.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from fixture_tools import TOOLS
from server_harness import INITIALIZE, MCP_HEADERS

from gateway.server import ToolServer
from gateway.state import InMemoryStateStore
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_gateway import DEADLINE, ProtectedGateway, protected_gateway

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def keys_past_their_age(provider: OAuthProvider) -> AsyncGenerator[tuple[ProtectedGateway, httpx2.AsyncClient]]:
    """A protected gateway that has loaded the provider's keys and holds them past `jwksMaxAge` from now on."""
    async with (
        protected_gateway(
            provider,
            ToolServer(TOOLS, state_store=InMemoryStateStore()),
            jwks_max_age=0.001,
            jwks_refetch_interval=3600,
        ) as gateway,
        httpx2.AsyncClient(timeout=DEADLINE) as http,
    ):
        assert await initialize(http, gateway, provider.mint(audience=gateway.resource)) == 200
        assert provider.jwks_fetches == 1
        yield gateway, http


async def initialize(http: httpx2.AsyncClient, gateway: ProtectedGateway, token: str) -> int:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    response = await http.post(f"{gateway.base_url}/mcp", content=json.dumps(INITIALIZE), headers=headers)
    return response.status_code


def bad_signature(provider: OAuthProvider, audience: str) -> str:
    """A token naming the current (known) `kid` whose signature is another key's."""
    header_and_claims = provider.mint(audience=audience).rsplit(".", 1)[0]
    foreign_signature = provider.mint(audience=audience, kid=provider.add_key()).rsplit(".", 1)[1]
    return f"{header_and_claims}.{foreign_signature}"


def unknown_kid(provider: OAuthProvider, audience: str) -> str:
    return provider.mint(audience=audience, kid=provider.add_key())


async def test_a_failing_jwks_endpoint_is_asked_once_and_cached_keys_keep_serving_while_junk_asks_nothing() -> None:
    async with OAuthProvider() as provider, keys_past_their_age(provider) as (gateway, http):
        provider.break_jwks("error")
        valid: list[int] = []
        junk: list[int] = []
        with anyio.fail_after(DEADLINE):  # a hang detector: each call must not wait for the issuer
            for _ in range(10):
                valid.append(await initialize(http, gateway, provider.mint(audience=gateway.resource)))
                junk.append(await initialize(http, gateway, bad_signature(provider, gateway.resource)))
                junk.append(await initialize(http, gateway, unknown_kid(provider, gateway.resource)))
                junk.append(await initialize(http, gateway, "eyJhbGciOiJSUzI1NiJ9.garbage.garbage"))
    assert valid == [200] * 10
    assert junk == [401] * 30
    assert provider.jwks_fetches == 2  # the first load, and one refetch past the age


async def test_a_hanging_jwks_endpoint_stalls_no_request_and_an_unknown_kid_asks_no_more_within_the_interval() -> None:
    async with OAuthProvider() as provider, keys_past_their_age(provider) as (gateway, http):
        provider.break_jwks("hang")
        with anyio.fail_after(DEADLINE):  # the gateway's own wait on the issuer is 10 s a fetch
            valid = [await initialize(http, gateway, provider.mint(audience=gateway.resource)) for _ in range(10)]
            junk = [await initialize(http, gateway, bad_signature(provider, gateway.resource)) for _ in range(10)]
        provider.mend_jwks()
        with anyio.fail_after(DEADLINE):
            unknown = [await initialize(http, gateway, unknown_kid(provider, gateway.resource)) for _ in range(10)]
            after = await initialize(http, gateway, provider.mint(audience=gateway.resource))
    assert valid == [200] * 10
    assert junk == [401] * 10
    assert unknown == [401] * 10
    assert after == 200
    assert provider.jwks_fetches == 2  # the first load, and the one refetch past the age (answered once mended)


async def test_an_issuer_down_from_the_start_is_asked_once_per_interval_and_tokens_are_refused_meanwhile() -> None:
    async with (
        OAuthProvider() as provider,
        protected_gateway(
            provider, ToolServer(TOOLS, state_store=InMemoryStateStore()), jwks_refetch_interval=3600
        ) as gateway,
        httpx2.AsyncClient(timeout=DEADLINE) as http,
    ):
        provider.break_jwks("error")
        with anyio.fail_after(DEADLINE):
            refused = [await initialize(http, gateway, provider.mint(audience=gateway.resource)) for _ in range(5)]
            provider.mend_jwks()
            still_refused = await initialize(http, gateway, provider.mint(audience=gateway.resource))
    assert refused == [401] * 5
    assert provider.jwks_fetches == 1
    assert still_refused == 401  # the next try comes an interval after the failed one


class _MalformedJwksUri(OAuthProvider):
    """An issuer whose metadata names a `jwks_uri` no HTTP client can request."""

    def metadata(self) -> dict[str, Any]:
        return {**super().metadata(), "jwks_uri": "http://[::1/jwks"}


async def test_an_issuer_whose_metadata_names_a_malformed_jwks_uri_gets_401s_and_the_server_serves_on() -> None:
    server = ToolServer(TOOLS, state_store=InMemoryStateStore())
    async with (
        _MalformedJwksUri() as provider,
        protected_gateway(provider, server, serve_options={"auth_tokens": {"static-token": "carol"}}) as gateway,
        httpx2.AsyncClient(timeout=DEADLINE) as http,
    ):
        with anyio.fail_after(DEADLINE):
            statuses = [await initialize(http, gateway, provider.mint(audience=gateway.resource)) for _ in range(2)]
            statuses.append(await initialize(http, gateway, "static-token"))
    assert statuses == [401, 401, 200]
