"""Outbound credentials: an `McpToolset` authenticates to an OAuth-protected upstream over real HTTP.

The authorization server is the loopback `OAuthProvider`; the upstream checks its tokens (`protected_upstream`).
"""

from __future__ import annotations

import json
import logging
import stat
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from gateway.client import McpToolset, SseConnectionParams, StreamableHTTPConnectionParams
from gateway.client.credentials import ClientCredentials, Credential, StoredLogin, TokenExchange, TokenFile, log_in
from gateway.errors import CredentialError, UpstreamUnavailableError
from gateway.tools import ReadonlyContext, ToolContext
from tests.support.deadlines import DEADLINE
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_upstream import ProtectedUpstream, protected_upstream

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def toolset_for(upstream: ProtectedUpstream, credential: Credential) -> AsyncGenerator[McpToolset]:
    params = StreamableHTTPConnectionParams(url=upstream.url, connect_timeout=DEADLINE)
    async with McpToolset(connection_params=params, credential=credential, mode="legacy") as toolset:
        yield toolset


async def whoami(toolset: McpToolset) -> dict[str, Any]:
    with anyio.fail_after(DEADLINE):
        result = await toolset.call_tool("whoami", {}, ToolContext())
    assert not result.is_error, result
    assert result.structured_content is not None
    return result.structured_content


def client_credentials(provider: OAuthProvider, upstream: ProtectedUpstream, **options: Any) -> ClientCredentials:
    client = provider.add_client()
    assert client.client_secret is not None
    return ClientCredentials(
        client_id=client.client_id,
        client_secret=client.client_secret,
        issuer=provider.issuer,
        resource=upstream.url,
        **options,
    )


# --- client credentials ---------------------------------------------------------------------------------------------


async def test_client_credentials_fetch_one_token_that_serves_listing_and_calls() -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        credential = client_credentials(provider, upstream)
        async with toolset_for(upstream, credential) as toolset:
            tools = await toolset.get_tools()
            claims = await whoami(toolset)
            await whoami(toolset)
        assert [tool.name for tool in tools] == ["whoami"]
        assert claims["aud"] == upstream.url
        assert provider.token_requests == 1
        assert len(set(upstream.seen)) == 1
        assert upstream.refused == []


async def test_a_client_credentials_token_past_its_expiry_is_replaced_before_it_is_sent() -> None:
    # Tokens living 5 s are stale at once (tokens count as expired 30 s early): every request needs a new one.
    async with OAuthProvider(token_lifetime=5) as provider, protected_upstream(provider) as upstream:
        async with toolset_for(upstream, client_credentials(provider, upstream)) as toolset:
            await whoami(toolset)
            await whoami(toolset)
        assert upstream.refused == []
        assert len(set(upstream.seen)) == len(upstream.seen) == provider.token_requests
        assert provider.token_requests >= 3


async def test_a_401_for_a_token_gets_one_new_token_and_the_request_is_sent_once_more() -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        async with toolset_for(upstream, client_credentials(provider, upstream)) as toolset:
            await whoami(toolset)
            first = upstream.seen[-1]
            upstream.reject(first)
            claims = await whoami(toolset)
        assert claims["sub"]
        assert upstream.refused == [first]
        assert provider.token_requests == 2
        assert upstream.seen[-1] != first


async def test_an_upstream_refusing_every_token_gets_one_renewal_then_the_connection_fails() -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        upstream.reject_all = True
        async with toolset_for(upstream, client_credentials(provider, upstream)) as toolset:
            with anyio.fail_after(DEADLINE), pytest.raises(UpstreamUnavailableError, match="401"):
                await toolset.get_tools()
        assert provider.token_requests == 2
        assert len(upstream.refused) == 2


async def test_a_token_endpoint_refusing_the_client_fails_the_connection_naming_the_endpoint() -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        credential = ClientCredentials(
            client_id="nobody", client_secret="wrong", token_url=provider.token_endpoint, resource=upstream.url
        )
        async with toolset_for(upstream, credential) as toolset:
            with anyio.fail_after(DEADLINE), pytest.raises(UpstreamUnavailableError) as raised:
                await toolset.get_tools()
        message = str(raised.value)
        assert provider.token_endpoint in message
        assert "invalid_client" in message
        assert "wrong" not in message
        assert upstream.seen == []


class _MalformedTokenEndpoint(OAuthProvider):
    """An issuer whose metadata names a `token_endpoint` no HTTP client can request."""

    def metadata(self) -> dict[str, Any]:
        return {**super().metadata(), "token_endpoint": "http://[::1/token"}


async def test_an_issuer_naming_a_malformed_token_endpoint_fails_each_connection_clearly() -> None:
    async with _MalformedTokenEndpoint() as provider, protected_upstream(provider) as upstream:
        async with toolset_for(upstream, client_credentials(provider, upstream)) as toolset:
            for _ in range(2):  # the toolset is not broken by the first failure: the next one says the same
                with anyio.fail_after(DEADLINE), pytest.raises(UpstreamUnavailableError) as raised:
                    await toolset.get_tools()
                assert "http://[::1/token" in str(raised.value)
                assert "cannot be reached" in str(raised.value)
        assert upstream.seen == []


# --- a user login --------------------------------------------------------------------------------------------------


def browser(visited: list[str]) -> Any:
    """A test "browser": opens the authorization URL and follows the redirect to the login's listener."""

    async def open_url(url: str) -> None:
        visited.append(url)
        async with httpx2.AsyncClient(timeout=10.0, follow_redirects=True) as http:
            response = await http.get(url)
        assert response.status_code == 200, response.text

    return open_url


async def test_a_login_registers_a_client_signs_in_with_pkce_and_stores_the_tokens_for_its_owner_only(
    tmp_path: Path,
) -> None:
    async with OAuthProvider(user="ada") as provider, protected_upstream(provider) as upstream:
        file = TokenFile("docs", upstream.url, directory=tmp_path / "tokens")
        visited: list[str] = []
        params = StreamableHTTPConnectionParams(url=upstream.url)
        with anyio.fail_after(DEADLINE):
            result = await log_in(params, file, open_url=browser(visited))
        assert result.tools == 1
        assert len(visited) == 1
        assert "code_challenge_method=S256" in visited[0]
        assert stat.S_IMODE(file.path.stat().st_mode) == 0o600
        assert stat.S_IMODE(file.path.parent.stat().st_mode) == 0o700
        record = json.loads(file.path.read_text())
        assert record["token_endpoint"] == provider.token_endpoint
        assert record["refresh_token"]
        assert record["client"]["client_id"].startswith("dcr-")

        login = StoredLogin(file, login_command="adk-mcp-gateway login gw.json docs")
        async with toolset_for(upstream, login) as toolset:
            claims = await whoami(toolset)
        assert claims["sub"] == "ada"
        assert claims["aud"] == upstream.url


async def test_a_stored_login_whose_token_expired_is_renewed_with_the_refresh_token_and_stored_again(
    tmp_path: Path,
) -> None:
    async with OAuthProvider(user="ada") as provider, protected_upstream(provider) as upstream:
        file = TokenFile("docs", upstream.url, directory=tmp_path)
        with anyio.fail_after(DEADLINE):
            await log_in(StreamableHTTPConnectionParams(url=upstream.url), file, open_url=browser([]))
        before = json.loads(file.path.read_text())
        await file.update(expires_at=before["expires_at"] - 3600)

        login = StoredLogin(file, login_command="adk-mcp-gateway login gw.json docs")
        async with toolset_for(upstream, login) as toolset:
            claims = await whoami(toolset)
        after = json.loads(file.path.read_text())
        assert claims["sub"] == "ada"
        assert after["access_token"] != before["access_token"]
        assert after["refresh_token"] != before["refresh_token"]  # the provider rotates refresh tokens
        assert provider.refresh_tokens[before["refresh_token"]].used
        assert before["access_token"] not in upstream.seen[-1:]
        assert stat.S_IMODE(file.path.stat().st_mode) == 0o600


async def test_a_401_for_a_stored_login_renews_it_once_and_a_failed_renewal_asks_for_a_new_login(
    tmp_path: Path,
) -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        file = TokenFile("docs", upstream.url, directory=tmp_path)
        with anyio.fail_after(DEADLINE):
            await log_in(StreamableHTTPConnectionParams(url=upstream.url), file, open_url=browser([]))
        login = StoredLogin(file, login_command="adk-mcp-gateway login gw.json docs")
        async with toolset_for(upstream, login) as toolset:
            await whoami(toolset)
            upstream.reject(upstream.seen[-1])
            await whoami(toolset)
            assert len(upstream.refused) == 1

            record = json.loads(file.path.read_text())
            provider.revoke(record["refresh_token"])
            upstream.reject(record["access_token"])
            with (
                anyio.fail_after(DEADLINE),
                pytest.raises(CredentialError, match=r"adk-mcp-gateway login gw\.json docs"),
            ):
                await login.token(rejected=record["access_token"])


async def test_without_a_login_the_error_says_which_command_logs_in(tmp_path: Path) -> None:
    login = StoredLogin(TokenFile("docs", "http://127.0.0.1:9/mcp", directory=tmp_path), login_command="LOGIN-HERE")
    with pytest.raises(CredentialError, match="LOGIN-HERE"):
        await login.token()


async def test_a_login_with_a_pre_registered_client_uses_it_and_its_fixed_redirect_port(tmp_path: Path) -> None:
    from tests.support.loopback import free_port

    port = free_port()
    async with OAuthProvider(user="ada") as provider, protected_upstream(provider) as upstream:
        client = provider.add_client(
            redirect_uris=[f"http://127.0.0.1:{port}/callback"],
            grant_types=["authorization_code", "refresh_token"],
            public=True,
        )
        file = TokenFile("docs", upstream.url, directory=tmp_path)
        params = StreamableHTTPConnectionParams(url=upstream.url)
        with anyio.fail_after(DEADLINE):
            await log_in(params, file, open_url=browser([]), client_id=client.client_id, port=port)
        record = json.loads(file.path.read_text())
        assert record["client"]["client_id"] == client.client_id
        assert not [c for c in provider.clients if c.startswith("dcr-")]
        async with toolset_for(upstream, StoredLogin(file, login_command="login")) as toolset:
            assert (await whoami(toolset))["sub"] == "ada"


async def test_client_credentials_work_over_sse_too_and_no_secret_or_token_reaches_a_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        credential = client_credentials(provider, upstream)
        params = SseConnectionParams(url=upstream.url.removesuffix("/mcp") + "/sse", connect_timeout=DEADLINE)
        async with McpToolset(connection_params=params, credential=credential, mode="legacy") as toolset:
            claims = await whoami(toolset)
            upstream.reject(upstream.seen[-1])
            await whoami(toolset)
        secrets = [client.client_secret for client in provider.clients.values() if client.client_secret]
    assert claims["aud"] == upstream.url
    assert len(set(upstream.seen)) == 2
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert logged
    for secret in [*secrets, *upstream.seen]:
        assert secret not in logged


# --- on behalf of the downstream principal -------------------------------------------------------------------------


async def test_token_exchange_keeps_principals_apart_and_a_caller_without_a_token_does_not_fail_the_upstream() -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        client = provider.add_client()
        assert client.client_secret is not None
        inbound = {"alice": provider.mint("alice"), "bob": provider.mint("bob")}
        credential = TokenExchange(
            client_id=client.client_id,
            client_secret=client.client_secret,
            token_url=provider.token_endpoint,
            resource=upstream.url,
            subject_token=lambda context: inbound.get(context.user_id) if context else None,
        )
        async with toolset_for(upstream, credential) as toolset:
            with anyio.fail_after(DEADLINE), pytest.raises(UpstreamUnavailableError, match="no bearer token"):
                await toolset.get_tools(ReadonlyContext(user_id="mallory"))
            assert toolset.status()["state"] != "failing"
            for user in ("alice", "bob"):
                with anyio.fail_after(DEADLINE):
                    result = await toolset.call_tool("whoami", {}, ToolContext(user_id=user))
                assert result.structured_content is not None
                assert result.structured_content["sub"] == user
            assert toolset.status()["sessions"] == 2
        assert not set(inbound.values()) & set(upstream.seen)
