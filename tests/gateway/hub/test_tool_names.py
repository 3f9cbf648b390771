"""Tool names across the hop: prefixes, allow/deny lists, and conflicts that name both sources."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import (
    DEADLINE,
    LOCAL_TOOLS,
    ROOT,
    connect,
    gateway_http,
    text_of,
    tool_names,
    upstream_http,
    write_config,
)
from mcp import MCPError

pytestmark = pytest.mark.anyio


async def listed(tmp_path: Path, servers: dict[str, dict[str, Any]], tools: list[str] | None = None) -> list[str]:
    """The names a client of a gateway for these upstreams (all our HTTP upstream) and local tools lists."""
    config = write_config(tmp_path, servers, tools=tools)
    with anyio.fail_after(DEADLINE):
        async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
            return await tool_names(client)


async def test_the_prefix_is_the_key_unless_set_and_an_empty_prefix_passes_names_through(tmp_path: Path) -> None:
    async with upstream_http() as url:
        names = await listed(
            tmp_path,
            {
                "keyed": {"url": url, "allowTools": ["echo"]},
                "renamed": {"url": url, "allowTools": ["peek"], "prefix": "files"},
                "bare": {"url": url, "allowTools": ["tally"], "prefix": ""},
            },
        )
    assert names == ["keyed_echo", "files_peek", "tally"]


async def test_allow_and_deny_lists_match_upstream_names_before_the_prefix(tmp_path: Path) -> None:
    async with upstream_http() as url:
        names = await listed(
            tmp_path,
            {
                "both": {"url": url, "allowTools": ["echo", "peek", "record"], "denyTools": ["record"]},
                "deny": {
                    "url": url,
                    "denyTools": ["crash", "wait_forever", "ask_name", "summarize", "count_up", "process_id"],
                },
                "prefixed": {"url": url, "allowTools": ["prefixed_echo"]},
            },
        )
    assert names == [
        "both_echo",
        "both_peek",
        "deny_echo",
        "deny_peek",
        "deny_quiet_progress",
        "deny_record",
        "deny_tally",
    ]


async def test_a_filtered_out_tool_cannot_be_called_and_the_error_lists_what_exists(tmp_path: Path) -> None:
    async with upstream_http() as url:
        config = write_config(tmp_path, {"up": {"url": url, "allowTools": ["echo"]}}, tools=[LOCAL_TOOLS])
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
                with pytest.raises(MCPError) as raised:
                    await client.call_tool("up_record", {"marker": str(tmp_path / "never")})
                allowed = await client.call_tool("up_echo", {"text": "still here"})
    assert "Unknown tool 'up_record'. Available tools: shout, up_echo." in raised.value.message
    assert text_of(allowed) == "still here"
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize(
    ("servers", "tools", "sources"),
    [
        pytest.param(
            {"a": {"prefix": ""}, "b": {"prefix": ""}}, [], ("upstream 'a'", "upstream 'b'"), id="two-upstreams"
        ),
        pytest.param({"a": {"prefix": ""}}, [f"{LOCAL_TOOLS}:echo"], ("upstream 'a'", "local"), id="upstream-local"),
    ],
)
async def test_two_sources_publishing_one_name_fail_the_listing_naming_both(
    servers: dict[str, dict[str, Any]], tools: list[str], sources: tuple[str, str], tmp_path: Path
) -> None:
    async with upstream_http() as url:
        config = write_config(
            tmp_path,
            {key: {"url": url, "allowTools": ["echo"], **options} for key, options in servers.items()},
            tools=tools,
        )
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
                with pytest.raises(MCPError) as listing:
                    await client.list_tools()
            # The CLI reports it as a configuration error: exit 2, the same sentence.
            done = await anyio.run_process(
                [sys.executable, "-m", "gateway.cli", "tools", str(config)], cwd=ROOT, check=False
            )
    conflict = f"Two tools are named 'echo': one from {sources[0]}, one from {sources[1]}."
    assert conflict in listing.value.message
    assert done.returncode == 2
    assert conflict in done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()
