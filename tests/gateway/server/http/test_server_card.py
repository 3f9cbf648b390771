"""The HTTP front serves its MCP Server Card (SEP-2127): at `<streamable-http-url>/server-card`, as
`application/mcp-server-card+json`, with an ETag a client can revalidate against."""

from __future__ import annotations

import re
from typing import Any

import anyio
import httpx2
import pytest
from fixture_tools import TOOLS
from server_harness import DEADLINE, http_server

from gateway.server import ToolServer
from gateway.state import InMemoryStateStore
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_gateway import protected_gateway

pytestmark = pytest.mark.anyio

CARD_TYPE = "application/mcp-server-card+json"
SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
TOKENS = {"tok-alice-0123456789abcdef": "alice"}


def _server() -> ToolServer:
    return ToolServer(TOOLS, name="Fixture tools", version="1.2.3", state_store=InMemoryStateStore())


async def _get(base_url: str, path: str = "/mcp/server-card", **headers: str) -> httpx2.Response:
    async with httpx2.AsyncClient(base_url=base_url, timeout=DEADLINE) as http:
        with anyio.fail_after(DEADLINE):
            return await http.get(path, headers={"Accept": CARD_TYPE, **headers})


def _remotes(card: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {remote["type"]: remote for remote in card["remotes"]}


async def test_the_card_names_the_server_its_version_and_its_transports() -> None:
    async with http_server(_server()) as base_url:
        # A browser-based client reads it from another origin.
        response = await _get(base_url, Origin="https://registry.example")
    assert response.status_code == 200
    assert response.headers["content-type"].split(";")[0] == CARD_TYPE
    assert response.headers["access-control-allow-origin"] == "*"
    card = response.json()
    assert card["$schema"] == SCHEMA
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", card["name"])
    assert card["version"] == "1.2.3"
    assert card["title"] == "Fixture tools"
    assert 1 <= len(card["description"]) <= 100
    remotes = _remotes(card)
    assert remotes["streamable-http"]["url"] == f"{base_url}/mcp"
    assert remotes["sse"]["url"] == f"{base_url}/sse"
    for remote in remotes.values():
        assert {"2025-11-25", "2026-07-28"} <= set(remote["supportedProtocolVersions"])
        assert "headers" not in remote  # nothing to present: the server asks for no token
    assert "_meta" not in card


async def test_a_client_holding_the_current_etag_gets_304_and_a_stale_one_gets_the_card() -> None:
    async with http_server(_server()) as base_url:
        first = await _get(base_url)
        etag = first.headers["etag"]
        again = await _get(base_url, **{"If-None-Match": etag})
        listed = await _get(base_url, **{"If-None-Match": f'"stale", {etag}'})
        stale = await _get(base_url, **{"If-None-Match": '"stale"'})
    assert re.fullmatch(r'"[0-9a-f]+"', etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert listed.status_code == 304
    assert stale.status_code == 200
    assert stale.headers["etag"] == etag
    assert stale.json() == first.json()


async def test_the_well_known_path_of_earlier_drafts_serves_the_same_card() -> None:
    async with http_server(_server()) as base_url:
        reserved = await _get(base_url)
        well_known = await _get(base_url, "/.well-known/mcp/server-card")
    assert well_known.status_code == 200
    assert well_known.headers["content-type"].split(";")[0] == CARD_TYPE
    assert well_known.json() == reserved.json()
    assert well_known.headers["etag"] == reserved.headers["etag"]


async def test_a_foreign_host_gets_no_card() -> None:
    async with http_server(_server()) as base_url:
        response = await _get(base_url, Host="evil.example.com")
    assert response.status_code == 421


async def test_with_bearer_tokens_the_card_is_public_and_says_a_token_is_required() -> None:
    async with http_server(_server(), auth_tokens=TOKENS) as base_url:
        response = await _get(base_url)
    assert response.status_code == 200
    card = response.json()
    for remote in _remotes(card).values():
        [header] = remote["headers"]
        assert header["name"] == "Authorization"
        assert header["isRequired"] is True
        assert header["isSecret"] is True
    auth = card["_meta"]["adk-mcp-gateway/auth"]
    assert auth["required"] is True
    assert auth["schemes"] == ["bearer"]
    assert "protectedResourceMetadata" not in auth


async def test_with_oauth_the_card_points_at_the_protected_resource_metadata() -> None:
    async with (
        OAuthProvider() as provider,
        protected_gateway(provider, _server(), required_scopes=("mcp",)) as gateway,
    ):
        response = await _get(gateway.base_url)
        metadata_url = response.json()["_meta"]["adk-mcp-gateway/auth"]["protectedResourceMetadata"]
        async with httpx2.AsyncClient(timeout=DEADLINE) as http:
            metadata = (await http.get(metadata_url)).json()
    assert response.status_code == 200
    card = response.json()
    auth = card["_meta"]["adk-mcp-gateway/auth"]
    assert auth["schemes"] == ["bearer", "oauth2"]
    assert auth["authorizationServers"] == [provider.issuer]
    assert auth["scopes"] == ["mcp"]
    assert metadata["resource"] == gateway.resource
    assert _remotes(card)["streamable-http"]["url"] == gateway.resource
