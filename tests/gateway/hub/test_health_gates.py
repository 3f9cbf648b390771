"""`GET /healthz` behind the gates: status only without a token, details (redacted) with one, Host/Origin checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hub_harness import DEADLINE, gateway_server, write_config
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

TOKEN = "tok-operator-0123456789abcdef"
SECRETS = ("ARGSECRET", "URLPASS", "URLSECRET", "HEADERSECRET", "ENVSECRET")


def broken_upstreams(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Two upstreams that cannot be reached, with secrets in their arguments, URL, headers and environment."""
    return {
        "broken": {
            "command": str(tmp_path / "no-such-server"),
            "args": ["--password", "ARGSECRET"],
            "env": {"API_KEY": "ENVSECRET"},
            "connectTimeout": 5,
        },
        "remote": {
            "url": "http://ada:URLPASS@127.0.0.1:9/mcp/URLSECRET?key=URLSECRET",
            "headers": {"X-Api-Key": "HEADERSECRET"},
            "connectTimeout": 5,
        },
    }


async def _list_tools(base_url: str, token: str | None) -> None:
    """One listing through the gateway, so that every upstream is tried (and the broken ones fail)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=DEADLINE) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode="legacy") as client,
    ):
        await client.list_tools()


@pytest.mark.parametrize("auth", [True, False])
async def test_without_a_token_healthz_says_only_ok_or_degraded_with_200_or_503(auth: bool, tmp_path: Path) -> None:
    config = write_config(tmp_path, broken_upstreams(tmp_path))
    options: dict[str, Any] = {"auth_tokens": {TOKEN: "operator"}} if auth else {"allowed_hosts": ["gw.example"]}
    async with serving_tools(gateway_server(config), **options) as base_url, httpx2.AsyncClient() as http:
        with anyio.fail_after(DEADLINE):
            before = await http.get(f"{base_url}/healthz")
            await _list_tools(base_url, TOKEN if auth else None)
            after = await http.get(f"{base_url}/healthz")
    assert (before.status_code, before.json()) == (200, {"status": "ok"})
    assert (after.status_code, after.json()) == (503, {"status": "degraded"})


async def test_with_a_valid_token_healthz_shows_each_upstreams_state_with_secrets_redacted(tmp_path: Path) -> None:
    config = write_config(tmp_path, broken_upstreams(tmp_path))
    async with (
        serving_tools(gateway_server(config), auth_tokens={TOKEN: "operator"}) as base_url,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
    ):
        with anyio.fail_after(DEADLINE):
            await _list_tools(base_url, TOKEN)
            response = await http.get(f"{base_url}/healthz")
            wrong = await http.get(f"{base_url}/healthz", headers={"Authorization": "Bearer tok-mallory-0123456789"})
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "degraded"
    assert {name: report["state"] for name, report in body["upstreams"].items()} == {
        "broken": "failing",
        "remote": "failing",
    }
    assert "no-such-server" in body["upstreams"]["broken"]["error"]
    assert "127.0.0.1:9" in body["upstreams"]["remote"]["error"]
    assert not [secret for secret in SECRETS if secret in response.text]
    assert wrong.json() == {"status": "degraded"}


async def test_a_local_server_without_tokens_shows_loopback_callers_the_redacted_details(tmp_path: Path) -> None:
    config = write_config(tmp_path, broken_upstreams(tmp_path))
    async with serving_tools(gateway_server(config)) as base_url, httpx2.AsyncClient() as http:
        with anyio.fail_after(DEADLINE):
            await _list_tools(base_url, None)
            response = await http.get(f"{base_url}/healthz")
    assert response.status_code == 503
    assert response.json()["upstreams"]["broken"]["state"] == "failing"
    assert not [secret for secret in SECRETS if secret in response.text]


@pytest.mark.parametrize("auth", [True, False])
@pytest.mark.parametrize("header", [{"Host": "evil.example.com"}, {"Origin": "http://evil.example.com"}])
async def test_healthz_refuses_a_foreign_host_or_origin(auth: bool, header: dict[str, str], tmp_path: Path) -> None:
    config = write_config(tmp_path, {})
    options: dict[str, Any] = {"auth_tokens": {TOKEN: "operator"}} if auth else {}
    headers = {**header, "Authorization": f"Bearer {TOKEN}"} if auth else header
    async with serving_tools(gateway_server(config), **options) as base_url, httpx2.AsyncClient() as http:
        with anyio.fail_after(DEADLINE):
            response = await http.get(f"{base_url}/healthz", headers=headers)
    assert response.status_code in {403, 421}
    assert "upstreams" not in response.text
