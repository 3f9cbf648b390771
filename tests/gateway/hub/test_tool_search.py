"""`toolSearch`: a gateway lists `search_tools` and `call_tool` instead of its catalog, over real transports.

Upstreams are the published `mcp-server-time`, our server mode publishing `hub_upstream_tools.py` and
`hub_notifying_server.py` (whose `grow` adds a tool and announces it); the gateway is `serve CONFIG` as a stdio
child, or served over HTTP in this process (with real OAuth tokens for the policy tests).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from hub_harness import (
    DEADLINE,
    HERE,
    connect,
    gateway,
    structured,
    text_of,
    time_server,
    tool_names,
    upstream_stdio,
    write_config,
)
from mcp import Client, MCPError, types
from test_notifications import Heard

from gateway import hub
from gateway.config import load_config
from gateway.config.access import PolicyConfig, policy_of
from gateway.errors import ConfigError
from gateway.hub import gateway_tools
from gateway.server.search.tool_search import ToolSearchSettings
from gateway.state import InMemoryStateStore
from tests.support.loopback import serving_tools
from tests.support.oauth_provider import OAuthProvider
from tests.support.protected_gateway import protected_gateway, token_client

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]

NOTIFYING = [sys.executable, "-I", str(HERE / "hub_notifying_server.py")]


def searching_config(tmp_path: Path, servers: dict[str, dict[str, Any]], tool_search: Any) -> Path:
    path = write_config(tmp_path, servers)
    document = json.loads(path.read_text(encoding="utf-8"))
    document["toolSearch"] = tool_search
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


async def search(client: Client, query: str, limit: int = 3) -> list[dict[str, Any]]:
    found = structured(await client.call_tool("search_tools", {"query": query, "limit": limit}))
    return found["tools"]


@pytest.mark.parametrize("served_over", ["http", "stdio"])
async def test_the_listing_offers_search_and_call_and_both_reach_upstream_tools(
    served_over: Literal["http", "stdio"], tmp_path: Path
) -> None:
    config = searching_config(
        tmp_path,
        {"time": time_server(), "up": upstream_stdio(tmp_path / "up.db")},
        {"mode": "on", "alwaysVisible": ["up_echo"]},
    )
    with anyio.fail_after(DEADLINE * 2):
        async with gateway(served_over, config, tmp_path / "state.db") as target, connect(target, "auto") as client:
            listed = await tool_names(client)
            hits = await search(client, "the current local time in Tokyo")
            converted = await search(client, "convert 9am Berlin time to New York time")
            now = await client.call_tool(
                "call_tool", {"name": "time_get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
            )
            echoed = await client.call_tool("call_tool", {"name": "up_echo", "arguments": {"text": "hello"}})
            wrong = await client.call_tool("call_tool", {"name": "up_echo", "arguments": {"words": "hello"}})
    assert listed == ["search_tools", "call_tool", "up_echo"]
    assert hits[0]["name"] == "time_get_current_time"
    assert "timezone" in hits[0]["inputSchema"]["properties"]
    assert hits[0]["description"]
    assert converted[0]["name"] == "time_convert_time"
    assert structured(now)["timezone"] == "Asia/Tokyo"
    assert "hello" in text_of(echoed)
    assert wrong.is_error  # the upstream checked the arguments, as for a direct call


async def test_auto_lists_the_whole_catalog_until_it_outgrows_the_threshold(tmp_path: Path) -> None:
    servers = {"n": {"command": NOTIFYING[0], "args": NOTIFYING[1:]}}
    small = searching_config(tmp_path, servers, {"mode": "auto", "threshold": 7})
    with anyio.fail_after(DEADLINE * 2):
        async with gateway("http", small, tmp_path / "state.db") as target, connect(target, "legacy") as client:
            whole = await tool_names(client)
        large = searching_config(tmp_path, servers, {"mode": "auto", "threshold": 6})
        async with gateway("http", large, tmp_path / "state.db") as target, connect(target, "legacy") as client:
            searching = await tool_names(client)
        off = searching_config(tmp_path, servers, "off")
        async with gateway("http", off, tmp_path / "state.db") as target, connect(target, "legacy") as client:
            plain = await tool_names(client)
            with pytest.raises(MCPError) as refused:
                await client.call_tool("search_tools", {"query": "grow"})
    assert len(whole) == 7
    assert "n_grow" in whole
    assert searching == ["search_tools", "call_tool"]
    assert plain == whole
    assert refused.value.error.code == -32602  # off: no such tool


async def test_the_index_follows_an_upstream_tool_list_change(tmp_path: Path) -> None:
    config = searching_config(tmp_path, {"n": {"command": NOTIFYING[0], "args": NOTIFYING[1:]}}, "on")
    heard = Heard()
    with anyio.fail_after(DEADLINE * 2):
        async with (
            gateway("http", config, tmp_path / "state.db") as target,
            connect(target, "legacy", message_handler=heard) as client,
        ):
            await tool_names(client)
            before = await search(client, "the extra tool grow added")
            await client.call_tool("call_tool", {"name": "n_grow"})
            await heard.wait_for(lambda n: isinstance(n, types.ToolListChangedNotification))
            after = await search(client, "the extra tool that was added by grow")
    assert "n_extra_7" not in [hit["name"] for hit in before]
    assert "n_extra_7" in [hit["name"] for hit in after]


async def test_search_and_call_keep_to_the_callers_policy_and_rate_limit(tmp_path: Path) -> None:
    config = load_config(
        searching_config(tmp_path, {"time": time_server(), "up": upstream_stdio(tmp_path / "up.db")}, "on")
    )
    rules: list[dict[str, Any]] = [
        {"claims": {"groups": ["admins"]}, "allowTools": ["*"]},
        {"principals": ["bob"], "allowTools": ["time_*"], "rateLimit": {"calls": 1, "perSeconds": 3600}},
    ]
    policy = policy_of([PolicyConfig.model_validate(rule) for rule in rules])
    assert config.tool_search is not None
    server = hub.gateway_server(
        gateway_tools(config),
        state_store=InMemoryStateStore(),
        policy=policy,
        tool_search=config.tool_search.settings(),
    )
    async with OAuthProvider() as provider, protected_gateway(provider, server) as protected:
        admin = provider.mint("alice", audience=protected.resource, claims={"groups": ["admins"]})
        user = provider.mint("bob", audience=protected.resource)
        with anyio.fail_after(DEADLINE * 2):
            async with token_client(protected.base_url, admin) as client:
                admin_hits = await search(client, "repeat my text back to me", limit=50)
                admin_echo = await client.call_tool("call_tool", {"name": "up_echo", "arguments": {"text": "hi"}})
            async with token_client(protected.base_url, user) as client:
                user_listed = await tool_names(client)
                user_hits = await search(client, "repeat my text back to me", limit=50)
                user_time = await search(client, "what is the current time", limit=50)
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("call_tool", {"name": "up_echo", "arguments": {"text": "hi"}})
                arguments = {"timezone": "UTC"}
                first = await client.call_tool("call_tool", {"name": "time_get_current_time", "arguments": arguments})
                second = await client.call_tool("call_tool", {"name": "time_get_current_time", "arguments": arguments})
    assert admin_hits[0]["name"] == "up_echo"
    assert "hi" in text_of(admin_echo)
    assert user_listed == ["search_tools", "call_tool"]
    assert user_hits == []  # up_echo never shows to bob, however well it matches
    assert user_time[0]["name"] == "time_get_current_time"
    assert all(hit["name"].startswith("time_") for hit in user_time)
    assert refused.value.error.code == -32602
    assert "up_echo" in refused.value.error.message
    assert not first.is_error
    assert second.is_error
    assert "Rate limit" in text_of(second)


async def test_a_catalog_tool_is_still_callable_directly_and_bad_search_arguments_say_what_is_wrong(
    tmp_path: Path,
) -> None:
    config = searching_config(tmp_path, {"time": time_server()}, "on")
    with anyio.fail_after(DEADLINE * 2):
        loaded = load_config(config)
        assert loaded.tool_search is not None
        server = hub.gateway_server(
            gateway_tools(loaded), state_store=InMemoryStateStore(), tool_search=loaded.tool_search.settings()
        )
        async with serving_tools(server) as base_url, connect(base_url, "legacy") as client:
            direct = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
            no_query = await client.call_tool("search_tools", {"limit": 3})
            bad_limit = await client.call_tool("search_tools", {"query": "time", "limit": 0})
            no_name = await client.call_tool("call_tool", {"arguments": {}})
            nothing = await client.call_tool("search_tools", {"query": "zebra xylophone"})
    assert structured(direct)["timezone"] == "UTC"
    assert no_query.is_error
    assert "query" in text_of(no_query)
    assert bad_limit.is_error
    assert "limit" in text_of(bad_limit)
    assert no_name.is_error
    assert structured(nothing) == {"tools": []}


def test_tool_search_config_takes_a_mode_alone_or_settings_and_names_a_bad_key(tmp_path: Path) -> None:
    servers = {"time": time_server()}
    shorthand = load_config(searching_config(tmp_path, servers, "on"))
    full = load_config(searching_config(tmp_path, servers, {"threshold": 12, "alwaysVisible": ["time_*"]}))
    assert shorthand.tool_search is not None
    assert shorthand.tool_search.settings() == ToolSearchSettings("on", ToolSearchSettings.threshold, ())
    assert full.tool_search is not None
    assert full.tool_search.settings() == ToolSearchSettings("auto", 12, ("time_*",))
    with pytest.raises(ConfigError, match="toolSearch"):
        load_config(searching_config(tmp_path, servers, {"mode": "sometimes"}))
