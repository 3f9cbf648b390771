"""`sessionPolicy`: `isolated` gives each downstream session its own upstream session, `shared` one for all.

The upstream tool `tally` counts calls in its own session-scoped state, so its answers show which downstream
sessions share an upstream session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from hub_harness import (
    DEADLINE,
    Mode,
    connect,
    gateway_http,
    gateway_server,
    structured,
    upstream_http,
    upstream_stdio,
    write_config,
)
from mcp import Client, types

from gateway.server import SESSION_META_KEY
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio


async def alternate_tallies(
    config: Path, mode: Mode, metas: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)
) -> list[int]:
    """Two downstream sessions call `up_tally` in turn, twice each; the counts the upstream answered, in order."""
    counts: list[int] = []

    async def tally(client: Client, meta: dict[str, Any] | None) -> None:
        result = await client.call_tool("up_tally", {}, meta=cast("types.RequestParamsMeta | None", meta))
        counts.append(int(structured(result)["result"]))

    with anyio.fail_after(DEADLINE):
        async with (
            gateway_http(config) as base_url,
            connect(base_url, mode) as first,
            connect(base_url, mode) as second,
        ):
            for _ in range(2):
                await tally(first, metas[0])
                await tally(second, metas[1])
    return counts


@pytest.mark.parametrize(("policy", "expected"), [("isolated", [1, 1, 2, 2]), ("shared", [1, 2, 3, 4])])
@pytest.mark.parametrize("upstream_transport", ["stdio", "http"])
async def test_handshake_era_sessions_get_their_own_upstream_session_only_when_isolated(
    upstream_transport: str, policy: str, expected: list[int], tmp_path: Path
) -> None:
    async with upstream_http() as url:
        # Over HTTP the gateway speaks the sessionless 2026-07-28 protocol to our upstream, which then tells
        # isolated sessions apart by the session key the gateway sends in `_meta`.
        entry = upstream_stdio(tmp_path / "up.db") if upstream_transport == "stdio" else {"url": url}
        config = write_config(tmp_path, {"up": {**entry, "sessionPolicy": policy}})
        counts = await alternate_tallies(config, "legacy")
    assert counts == expected


async def test_modern_era_sessions_are_told_apart_by_the_session_key_in_meta(tmp_path: Path) -> None:
    metas = ({SESSION_META_KEY: "first"}, {SESSION_META_KEY: "second"})
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        counts = await alternate_tallies(config, "auto", metas)
    assert counts == [1, 1, 2, 2]


@pytest.mark.parametrize(("policy", "expected"), [("isolated", [1, 1, 1, 1]), ("shared", [1, 2, 3, 4])])
async def test_anonymous_modern_calls_without_a_session_key_never_share_an_isolated_upstream_session(
    policy: str, expected: list[int], tmp_path: Path
) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url, "sessionPolicy": policy}})
        counts = await alternate_tallies(config, "auto")
    assert counts == expected


async def test_anonymous_calls_reuse_one_warm_upstream_connection_each_as_a_new_upstream_session(
    tmp_path: Path,
) -> None:
    async with upstream_http() as url:
        tool_server = gateway_server(write_config(tmp_path, {"up": {"url": url}}))
        with anyio.fail_after(DEADLINE):
            async with serving_tools(tool_server) as base_url, connect(base_url, "auto") as client:
                counts = [structured(await client.call_tool("up_tally", {}))["result"] for _ in range(3)]
                await client.list_tools()
                sessions = tool_server.upstream_status()["up"]["sessions"]
    assert counts == [1, 1, 1]  # three upstream sessions ...
    assert sessions == 2  # ... on one warm connection, beside the one anonymous listings share (no call runs in it)


async def test_the_session_key_sent_upstream_is_random_not_derived_from_the_downstream_key(tmp_path: Path) -> None:
    meta = {SESSION_META_KEY: "same-downstream-key"}
    counts: list[int] = []
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url}})
        for _ in range(2):  # two gateways, one after the other, before one upstream
            with anyio.fail_after(DEADLINE):
                async with gateway_http(config) as base_url, connect(base_url, "auto") as client:
                    for _ in range(2):
                        result = await client.call_tool("up_tally", {}, meta=cast("types.RequestParamsMeta", meta))
                        counts.append(int(structured(result)["result"]))
    # A key derived from the downstream key would reach the first gateway's upstream session again (3, 4).
    assert counts == [1, 2, 1, 2]
