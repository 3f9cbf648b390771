"""examples/adk_sign_in.py: a google-adk agent's toolset needs the user's sign-in; the example answers ADK's
`adk_request_credential` the way an app does, against the loopback provider and an OAuth-protected MCP server."""

from __future__ import annotations

import os
import sys

import anyio
import pytest

from tests.support.oauth_provider import OAuthProvider
from tests.support.paths import ROOT
from tests.support.protected_upstream import protected_upstream

REDIRECT_URI = "http://127.0.0.1:9/app/oauth-callback"
"""The app's redirect URI: never served; the example reads the redirect instead of following it."""

pytestmark = pytest.mark.anyio


async def test_the_example_shows_adk_request_credential_and_completes_after_the_user_signs_in() -> None:
    async with OAuthProvider(user="ada") as provider, protected_upstream(provider) as upstream:
        provider.audience = upstream.url
        client = provider.add_client(redirect_uris=[REDIRECT_URI], grant_types=("authorization_code", "refresh_token"))
        env = {key: value for key, value in os.environ.items() if key != "GOOGLE_API_KEY"}  # the stand-in model
        env |= {
            "PYTHONPATH": str(ROOT),
            "DOCS_MCP_URL": upstream.url,
            "OAUTH_AUTHORIZE_URL": provider.authorization_endpoint,
            "OAUTH_TOKEN_URL": provider.token_endpoint,
            "OAUTH_CLIENT_ID": client.client_id,
            "OAUTH_CLIENT_SECRET": client.client_secret or "",
            "OAUTH_REDIRECT_URI": REDIRECT_URI,
        }
        with anyio.fail_after(120):
            done = await anyio.run_process(
                [sys.executable, str(ROOT / "examples" / "adk_sign_in.py")], cwd=ROOT, env=env, check=False
            )
    out, err = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, err
    lines = out.splitlines()
    assert lines[0] == "call      adk_request_credential"
    assert lines[1] == f"sign in   {provider.authorization_endpoint}"
    assert any(line.startswith('response  whoami -> {"sub": "ada"') for line in lines), out
    assert lines[-1] == "answer    You are signed in to the docs server."
    assert {claims["sub"] for claims in map(provider.decode, upstream.seen) if claims} == {"ada"}
