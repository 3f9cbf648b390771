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
    ("servers", "tools", "kept", "withheld"),
    [
        pytest.param(
            {"a": {"prefix": ""}, "b": {"prefix": ""}}, [], "upstream 'a'", "upstream 'b'", id="two-upstreams"
        ),
        pytest.param({"a": {"prefix": ""}}, [f"{LOCAL_TOOLS}:echo"], "local", "upstream 'a'", id="upstream-local"),
    ],
)
async def test_a_name_two_sources_publish_stays_with_the_first_and_the_other_is_withheld_naming_both(
    servers: dict[str, dict[str, Any]], tools: list[str], kept: str, withheld: str, tmp_path: Path
) -> None:
    async with upstream_http() as url:
        config = write_config(
            tmp_path,
            {key: {"url": url, "allowTools": ["echo"], **options} for key, options in servers.items()},
            tools=tools,
        )
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
                names = await tool_names(client)
                echoed = await client.call_tool("echo", {"text": "one name, one tool"})
            # The CLI lists the same catalog and says what it withheld.
            done = await anyio.run_process(
                [sys.executable, "-m", "gateway.cli", "tools", str(config)], cwd=ROOT, check=False
            )
    assert names == ["echo"]
    assert text_of(echoed) == "one name, one tool"
    assert done.returncode == 0, done.stderr.decode()
    assert f"Withholding the tool 'echo' of {withheld}: {kept} published that name first." in done.stderr.decode()
