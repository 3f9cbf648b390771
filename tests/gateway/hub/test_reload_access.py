"""A reload applies the config's `policies` to every session, open ones included; a changed `auth` is refused.

The gateway is the real `adk-mcp-gateway serve CONFIG --transport http` child with static bearer tokens (from
`$ADK_MCP_GATEWAY_TOKENS`), its upstream `hub_tagged_server.py`; reloads are triggered by `SIGHUP`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest
from hub_harness import DEADLINE, HERE, Heard, child_env, text_of, tool_names
from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client

from gateway.config import load_config
from gateway.errors import ConfigError
from gateway.hub.hub import Hub
from gateway.hub.reloader import ConfigReloader, reloading_gateway_server
from gateway.state import InMemoryStateStore
from tests.support.child_process import child_process
from tests.support.loopback import free_port, serving_tools, wait_for_port

pytestmark = pytest.mark.anyio

TAGGED = str(HERE / "hub_tagged_server.py")
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
BOTH_ALLOWED: list[dict[str, Any]] = [{"principals": ["alice", "bob"], "allowTools": ["*"]}]
ALICE_ALONE: list[dict[str, Any]] = [{"principals": ["alice"], "allowTools": ["*"]}]


def write_access_config(directory: Path, policies: list[dict[str, Any]] | None, **top: Any) -> Path:
    """A config with one upstream `a` and these `policies` (None: no such section)."""
    upstream = {"command": sys.executable, "args": ["-I", "-S", TAGGED], "env": {"TAG": "a"}}
    document: dict[str, Any] = {"name": "access-gateway", "mcpServers": {"a": upstream}, **top}
    if policies is not None:
        document["policies"] = policies
    path = directory / "gateway.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path


@asynccontextmanager
async def gateway_process(config: Path, directory: Path) -> AsyncGenerator[tuple[str, anyio.abc.Process]]:
    """`adk-mcp-gateway serve CONFIG` over HTTP as a child, alice's and bob's tokens accepted; its URL and process."""
    port = free_port()
    command = [sys.executable, "-m", "gateway.cli", "serve", str(config), "--transport", "http"]
    command += ["--port", str(port), "--state", str(directory / "state.db")]
    env = {**os.environ, **child_env(), "ADK_MCP_GATEWAY_TOKENS": f"alice={ALICE},bob={BOB}"}
    with (directory / "gateway.log").open("wb") as log:
        async with child_process(
            command, terminate_within=DEADLINE, env=env, stdout=subprocess.DEVNULL, stderr=log
        ) as process:
            await wait_for_port(port, DEADLINE, process)
            yield f"http://127.0.0.1:{port}", process


@asynccontextmanager
async def bearer_client(base_url: str, token: str, **options: Any) -> AsyncGenerator[Client]:
    """A handshake-era `mcp.Client` sending `token` as its bearer token (one session for the whole block)."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(DEADLINE, read=300)) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode="legacy", **options) as client,
    ):
        yield client


def is_list_changed(notification: types.ServerNotification) -> bool:
    return isinstance(notification, types.ToolListChangedNotification)


@pytest.mark.parametrize(
    "before", [pytest.param(None, id="from-no-policies"), pytest.param(BOTH_ALLOWED, id="from-a-policy")]
)
async def test_sighup_revokes_a_principals_access_on_its_open_session(
    tmp_path: Path, before: list[dict[str, Any]] | None
) -> None:
    config = write_access_config(tmp_path, before)
    heard = Heard()
    with anyio.fail_after(DEADLINE * 3):
        async with (
            gateway_process(config, tmp_path) as (base_url, process),
            bearer_client(base_url, ALICE, message_handler=heard) as alice,
            bearer_client(base_url, BOB) as bob,
        ):
            # Twice: bob's second call comes from a session the gateway has seen (the fast lane's case).
            for _ in range(2):
                assert not (await bob.call_tool("a_whoami", {})).is_error
            assert not (await alice.call_tool("a_whoami", {})).is_error

            write_access_config(tmp_path, ALICE_ALONE)
            process.send_signal(signal.SIGHUP)
            await heard.wait_for(is_list_changed)

            with pytest.raises(MCPError) as refused:
                await bob.call_tool("a_whoami", {})
            assert "policies do not allow principal 'bob'" in refused.value.error.message
            assert await tool_names(bob) == []
            answered = await alice.call_tool("a_whoami", {})
            assert not answered.is_error, text_of(answered)
    assert "policies reloaded" in (tmp_path / "gateway.log").read_text()


async def test_a_reload_that_changes_auth_is_refused_naming_the_restart_it_needs(tmp_path: Path) -> None:
    config = write_access_config(tmp_path, None)
    loaded = load_config(config)
    server = reloading_gateway_server(loaded, sighup=False, name=loaded.name, state_store=InMemoryStateStore())
    reloader = cast("ConfigReloader", cast("Hub", server.extension).reloader)
    with anyio.fail_after(DEADLINE):
        async with serving_tools(server):
            write_access_config(tmp_path, ALICE_ALONE, auth={"issuer": "https://login.example.com"})
            with pytest.raises(ConfigError, match="auth") as refused:
                await reloader.reload()
            assert "restart" in str(refused.value)
            assert server.policy is None  # nothing of the refused config applies
