"""An upstream that dies or never starts: a clear error naming it, and everything else keeps working."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import (
    DEADLINE,
    LOCAL_TOOLS,
    Mode,
    connect,
    gateway_http,
    structured,
    text_of,
    tool_names,
    upstream_http,
    upstream_stdio,
    write_config,
)

from gateway.server import SESSION_META_KEY

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_upstream_that_kills_itself_fails_its_call_only_and_the_next_call_gets_a_fresh_session(
    mode: Mode, tmp_path: Path
) -> None:
    # A modern client keeps one session (and so one isolated upstream session) across calls only with a key.
    meta: Any = {SESSION_META_KEY: "one-downstream-session-0123456789"} if mode == "auto" else None
    async with upstream_http() as url:
        config = write_config(
            tmp_path, {"fragile": upstream_stdio(tmp_path / "up.db"), "steady": {"url": url}}, tools=[LOCAL_TOOLS]
        )
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, mode) as client:
                counted = await client.call_tool("fragile_tally", {}, meta=meta)
                first_process = structured(await client.call_tool("fragile_process_id", {}, meta=meta))["result"]
                crashed = await client.call_tool("fragile_crash", {}, meta=meta)
                steady = await client.call_tool("steady_echo", {"text": "steady"}, meta=meta)
                local = await client.call_tool("shout", {"text": "local"}, meta=meta)
                names = await tool_names(client)
                recounted = await client.call_tool("fragile_tally", {}, meta=meta)
                second_process = structured(await client.call_tool("fragile_process_id", {}, meta=meta))["result"]

    assert counted.structured_content == {"result": 1}
    assert crashed.is_error
    error = text_of(crashed)
    assert error.startswith("Upstream 'fragile': ")
    assert "during the call to 'crash'" in error
    assert "not retried" in error
    assert text_of(steady) == "steady"
    assert text_of(local) == "LOCAL"
    assert "fragile_crash" in names
    # A new process, a new connection: a fresh upstream session.
    assert second_process != first_process
    if mode == "auto":
        # A sessionless (2026-07-28) upstream session is named by the key the gateway sends in `_meta`, which is
        # the same, so the restarted upstream finds the session's state in its state file.
        assert structured(recounted) == {"result": 2}
    else:
        # A handshake-era client's upstream session speaks the handshake era (nothing of it is lost on the hop)
        # and so has a session of the upstream's own: the restarted upstream starts it afresh, as it would for
        # that client connected directly.
        assert structured(recounted) == {"result": 1}


async def test_an_upstream_that_cannot_start_leaves_the_rest_of_the_catalog_working(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(
            tmp_path,
            {"broken": {"command": str(tmp_path / "no-such-server")}, "steady": {"url": url, "allowTools": ["echo"]}},
            tools=[LOCAL_TOOLS],
        )
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
                names = await tool_names(client)
                steady = await client.call_tool("steady_echo", {"text": "steady"})
                local = await client.call_tool("shout", {"text": "local"})
    assert names == ["steady_echo", "shout"]
    assert text_of(steady) == "steady"
    assert text_of(local) == "LOCAL"
