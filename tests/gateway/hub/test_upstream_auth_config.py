"""Per-upstream credentials in the gateway config: client credentials, a user login (`adk-mcp-gateway login`), token
exchange on behalf of the downstream principal, and opt-in pass-through — against our own server mode as an
OAuth-protected upstream over real HTTP, the gateway itself an OAuth resource server, both trusting the loopback
authorization server.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream
from hub_harness import DEADLINE, ROOT, structured, write_config
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from gateway.client.credentials import TOKEN_DIR_ENV
from gateway.server.auth.oauth_settings import OAuthSettings
from tests.support.loopback import serving_tools
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_upstream import protected_upstream

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def downstream(base_url: str, token: str | None = None) -> AsyncGenerator[Client]:
    """A downstream client of the gateway, presenting `token` as its bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(DEADLINE, read=300)) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode="legacy") as client,
    ):
        yield client


@asynccontextmanager
async def gateway_for(config: Path, **serve_options: Any) -> AsyncGenerator[str]:
    from hub_harness import gateway_server

    async with serving_tools(gateway_server(config), **serve_options) as base_url:
        yield base_url


async def whoami_through(base_url: str, token: str | None = None) -> dict[str, Any]:
    async with downstream(base_url, token) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("docs_whoami", {})
    assert not result.is_error, result
    return structured(result)


GATEWAY = "http://gateway.test/mcp"
"""The gateway's resource identifier: downstream tokens are made for it."""


def inbound(provider: OAuthProvider) -> OAuthSettings:
    """The gateway as an OAuth resource server trusting the loopback provider."""
    return OAuthSettings(issuer=provider.issuer, resource=GATEWAY)


def exchange_client(provider: OAuthProvider) -> tuple[str, str]:
    client = provider.add_client(grant_types=["client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange"])
    assert client.client_secret is not None
    return client.client_id, client.client_secret


async def test_an_upstream_with_client_credentials_is_called_with_the_gateways_own_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        client_id, secret = exchange_client(provider)
        monkeypatch.setenv("TEST_GW_SECRET", secret)
        auth = {"type": "clientCredentials", "issuer": provider.issuer, "clientId": client_id}
        config = write_config(
            tmp_path, {"docs": {"url": upstream.url, "auth": {**auth, "clientSecret": "${TEST_GW_SECRET}"}}}
        )
        async with gateway_for(config) as base_url:
            claims = await whoami_through(base_url)
        assert (claims["sub"], claims["client_id"], claims["aud"]) == (client_id, client_id, upstream.url)
        assert upstream.refused == []


async def test_the_downstream_clients_token_never_reaches_an_upstream_that_did_not_opt_in(tmp_path: Path) -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        alice = provider.mint("alice", audience=[GATEWAY, upstream.url])
        config = write_config(tmp_path, {"docs": {"url": upstream.url}})
        async with gateway_for(config, oauth=inbound(provider)) as base_url, downstream(base_url, alice) as client:
            with anyio.fail_after(DEADLINE):
                result = await client.call_tool("docs_whoami", {})
        assert result.is_error
        assert alice not in upstream.seen


async def test_pass_through_forwards_the_downstream_clients_own_token_when_the_entry_opts_in(tmp_path: Path) -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        alice = provider.mint("alice", audience=[GATEWAY, upstream.url])
        config = write_config(tmp_path, {"docs": {"url": upstream.url, "auth": {"type": "passThrough"}}})
        async with gateway_for(config, oauth=inbound(provider)) as base_url:
            claims = await whoami_through(base_url, alice)
        assert claims["sub"] == "alice"
        assert set(upstream.seen) == {alice}


async def test_token_exchange_calls_the_upstream_with_a_token_for_it_on_behalf_of_the_principal(
    tmp_path: Path,
) -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        client_id, secret = exchange_client(provider)
        alice = provider.mint("alice", audience=GATEWAY, scopes=["docs"])
        bob = provider.mint("bob", audience=GATEWAY, scopes=["docs"])
        auth = {
            "type": "tokenExchange",
            "tokenUrl": provider.token_endpoint,
            "clientId": client_id,
            "clientSecret": secret,
        }
        config = write_config(tmp_path, {"docs": {"url": upstream.url, "auth": auth}})
        async with gateway_for(config, oauth=inbound(provider)) as base_url:
            as_alice = await whoami_through(base_url, alice)
            as_bob = await whoami_through(base_url, bob)
        assert (as_alice["sub"], as_alice["aud"], as_alice["act"]) == ("alice", upstream.url, {"sub": client_id})
        assert as_bob["sub"] == "bob"
        assert alice not in upstream.seen
        assert bob not in upstream.seen


# --- `adk-mcp-gateway login` ----------------------------------------------------------------------------------------


async def authorization_url(process: Process) -> str:
    """The URL the login command prints (read from its stderr)."""
    assert process.stderr is not None
    text = ""
    async for chunk in TextReceiveStream(process.stderr):
        text += chunk
        for line in text.splitlines():
            if line.strip().startswith("http://"):
                return line.strip()
    raise AssertionError(f"the login command printed no URL: {text}")


async def test_the_login_command_signs_in_once_and_the_gateway_then_calls_with_the_stored_login(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with OAuthProvider(user="ada") as provider, protected_upstream(provider) as upstream:
        config = write_config(tmp_path, {"docs": {"url": upstream.url, "auth": {"type": "oauth"}}})
        tokens = tmp_path / "tokens"
        env = {**os.environ, TOKEN_DIR_ENV: str(tokens)}
        command = [sys.executable, "-m", "gateway.cli", "login", str(config), "docs", "--no-browser"]
        with anyio.fail_after(DEADLINE):
            async with await anyio.open_process(command, env=env, cwd=ROOT) as process:
                url = await authorization_url(process)
                async with httpx2.AsyncClient(timeout=10.0, follow_redirects=True) as browser:
                    page = await browser.get(url)
                assert page.status_code == 200
                assert "signed in" in page.text
                assert await process.wait() == 0
        (stored,) = tokens.iterdir()
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        assert json.loads(stored.read_text())["refresh_token"]

        monkeypatch.setenv(TOKEN_DIR_ENV, str(tokens))
        async with gateway_for(config) as base_url:
            claims = await whoami_through(base_url)
        assert claims["sub"] == "ada"


async def test_a_gateway_without_a_login_answers_calls_with_the_login_command_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with OAuthProvider() as provider, protected_upstream(provider) as upstream:
        config = write_config(tmp_path, {"docs": {"url": upstream.url, "auth": {"type": "oauth"}}})
        monkeypatch.setenv(TOKEN_DIR_ENV, str(tmp_path / "none"))
        async with gateway_for(config) as base_url, downstream(base_url) as client:
            with anyio.fail_after(DEADLINE):
                result = await client.call_tool("docs_whoami", {})
        assert result.is_error
        assert f"adk-mcp-gateway login {config} docs" in str(result.content)
