"""examples/sign_in_server.py signs its user in at a loopback OAuth provider, over stdio, in both protocol eras."""

from __future__ import annotations

import base64
import os
import secrets
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters, types

from tests.support.oauth_provider import OAuthProvider
from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_example_signs_the_user_in_over_stdio_within_one_call(mode: str, tmp_path: Path) -> None:
    async with OAuthProvider() as provider:
        callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
        client = provider.add_client(redirect_uris=[callback], grant_types=("authorization_code", "refresh_token"))
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": str(ROOT),  # this checkout's gateway, whatever the environment has installed
            "ADK_MCP_GATEWAY_CREDENTIAL_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
            "ADK_MCP_GATEWAY_CALLBACK_URL": callback,
            "OAUTH_AUTHORIZE_URL": provider.authorization_endpoint,
            "OAUTH_TOKEN_URL": provider.token_endpoint,
            "OAUTH_CLIENT_ID": client.client_id,
            "OAUTH_CLIENT_SECRET": client.client_secret or "",
            "OAUTH_SCOPES": "profile",
        }
        params = StdioServerParameters(
            command=sys.executable,
            args=[str(ROOT / "examples" / "sign_in_server.py"), "stdio", "0", str(tmp_path / "s.db")],
            env=env,
            cwd=ROOT,
        )
        opened: list[int] = []

        async def browser(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            assert isinstance(params, types.ElicitRequestURLParams)
            async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as http:
                opened.append((await http.get(params.url)).status_code)
            return types.ElicitResult(action="accept")

        with anyio.fail_after(60):
            async with Client(params, mode=mode, elicitation_callback=browser) as session:  # type: ignore[arg-type]
                result = await session.call_tool("whoami", {})
                assert result.structured_content == {"subject": "alice", "scope": "profile"}, result
                again = await session.call_tool("whoami", {})
                assert again.structured_content == {"subject": "alice", "scope": "profile"}
        assert opened == [200]
