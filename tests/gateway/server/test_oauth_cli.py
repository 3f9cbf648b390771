"""The command line's auth and policy: `serve --oauth-*` as a real child process, and what `check` prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from server_harness import DEADLINE, INITIALIZE, MCP_HEADERS, ROOT, TOOLS_REF, wait_until_healthy

from tests.support.loopback import free_port
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_gateway import token_client

pytestmark = pytest.mark.anyio


async def test_serve_with_oauth_flags_publishes_metadata_and_serves_only_tokens_with_the_scope(
    tmp_path: Path,
) -> None:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    async with OAuthProvider() as provider:
        command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--transport", "http"]
        command += ["--port", str(port), "--state", str(tmp_path / "state.db")]
        command += ["--oauth-issuer", provider.issuer, "--oauth-scope", "mcp:tools"]
        async with await anyio.open_process(command, cwd=ROOT, stdout=subprocess.DEVNULL) as process:
            try:
                await wait_until_healthy(base_url)
                resource = f"{base_url}/mcp"
                async with httpx2.AsyncClient(timeout=DEADLINE) as http:
                    metadata = (await http.get(f"{base_url}/.well-known/oauth-protected-resource/mcp")).json()
                    unscoped = provider.mint("bob", audience=resource)
                    forbidden = await http.post(
                        resource, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {unscoped}"}
                    )
                token = provider.mint("bob", audience=resource, scopes=["mcp:tools"])
                with anyio.fail_after(DEADLINE):
                    async with token_client(base_url, token) as client:
                        result = await client.call_tool("add", {"a": 20, "b": 22})
            finally:
                process.terminate()
    assert metadata["resource"] == resource
    assert metadata["authorization_servers"] == [provider.issuer]
    assert forbidden.status_code == 403
    assert result.structured_content == {"result": 42}


async def test_oauth_flags_over_stdio_are_a_usage_error() -> None:
    done = await anyio.run_process(
        [sys.executable, "-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--oauth-issuer", "https://idp"],
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2
    assert b"--transport http" in done.stderr


async def test_check_reaches_the_issuer_and_prints_the_effective_policy_per_principal(tmp_path: Path) -> None:
    async with OAuthProvider() as provider:
        config = tmp_path / "gateway.json"
        config.write_text(
            json.dumps(
                {
                    "tools": [TOOLS_REF],
                    "auth": {"issuer": provider.issuer, "resource": "https://gw.example.com/mcp"},
                    "policies": [
                        {"claims": {"groups": ["admins"]}, "allowTools": ["*"]},
                        {"principals": ["bob"], "allowTools": ["add", "greet"]},
                        {"allowTools": ["add"], "rateLimit": {"calls": 10, "perSeconds": 60}},
                    ],
                }
            )
        )
        done = await anyio.run_process(
            [sys.executable, "-m", "gateway.cli", "check", str(config)], cwd=ROOT, check=False
        )
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    assert f"ok    auth: issuer {provider.issuer}, 1 signing keys, resource https://gw.example.com/mcp" in out
    lines = [line.split(None, 1) for line in out.splitlines() if line.startswith("  ") and "  " in line.strip()]
    table = {line[0]: line[1] for line in lines if len(line) == 2}
    assert "policies (3 rules)" in out
    assert table["bob"].startswith("add (10 calls per 60 s), greet")
    assert table["anyone"] == "add (10 calls per 60 s)"
    admins = next(line for line in out.splitlines() if "anyone with groups=admins" in line)
    assert "bump" in admins
    assert "add (10 calls per 60 s)" in admins


async def test_check_reports_an_issuer_it_cannot_reach(tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"tools": [TOOLS_REF], "auth": {"issuer": f"http://127.0.0.1:{free_port()}"}}))
    done = await anyio.run_process([sys.executable, "-m", "gateway.cli", "check", str(config)], cwd=ROOT, check=False)
    assert done.returncode == 1
    assert "FAIL  auth: " in done.stdout.decode()
