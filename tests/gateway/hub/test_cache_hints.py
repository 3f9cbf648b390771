"""Cache hints (SEP-2549) across the hop: what the gateway stamps on its listings, and how it keeps an upstream's.

Upstreams are `hub_hinted_server.HintedUpstream`s (2026-07-28, hints on every cacheable result, listings counted);
the gateway serves over streamable HTTP in this process; the downstream client speaks 2026-07-28 with its own
response cache off, so every listing reaches the gateway. What an upstream answers directly is compared with what
crosses the gateway.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import connect, gateway_http, write_config
from hub_hinted_server import HintedUpstream, serving
from mcp import Client, types

from gateway import hub
from gateway.config import load_config
from gateway.config.access import PolicyConfig, policy_of
from gateway.hub import gateway_tools
from gateway.hub.pins import PinStore
from gateway.state import InMemoryStateStore
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

LONG_TTL = 600_000
"""Ten minutes: no listing in a test outlives it."""

Listed = (
    types.ListToolsResult
    | types.ListPromptsResult
    | types.ListResourcesResult
    | types.ListResourceTemplatesResult
    | types.ReadResourceResult
)


def _entry(url: str, prefix: str, **options: Any) -> dict[str, Any]:
    return {"url": url, "prefix": prefix, "protocolVersion": "2026-07-28", "sessionPolicy": "shared", **options}


@asynccontextmanager
async def _upstreams(*upstreams: HintedUpstream) -> AsyncGenerator[list[str]]:
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(serving(upstream)) for upstream in upstreams]


@asynccontextmanager
async def _direct(url: str) -> AsyncGenerator[Client]:
    async with Client(url, mode="2026-07-28", cache=None) as client:
        yield client


async def _listings(client: Client) -> dict[str, Listed]:
    return {
        "tools/list": await client.list_tools(),
        "prompts/list": await client.list_prompts(),
        "resources/list": await client.list_resources(),
        "resources/templates/list": await client.list_resource_templates(),
    }


def _hint(result: Listed) -> tuple[int, str]:
    assert {"ttl_ms", "cache_scope"} <= result.model_fields_set, f"no cache hint on {type(result).__name__}"
    return result.ttl_ms, result.cache_scope


async def test_a_merged_listing_is_as_fresh_as_its_stalest_upstream_and_private_if_one_upstream_is(
    tmp_path: Path,
) -> None:
    fresh, stale = HintedUpstream("fresh", LONG_TTL), HintedUpstream("stale", 300_000, "private")
    async with _upstreams(fresh, stale) as (fresh_url, stale_url):
        async with _direct(stale_url) as client:
            direct = await _listings(client)
        config = write_config(tmp_path, {"a": _entry(fresh_url, "a"), "b": _entry(stale_url, "b")})
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "auto", cache=None) as client:
                merged = await _listings(client)
    for method, result in merged.items():
        ttl_ms, scope = _hint(result)
        direct_ttl, direct_scope = _hint(direct[method])
        assert (direct_ttl, direct_scope) == (300_000, "private"), method
        # What is left of the stalest upstream's TTL (the gateway kept its listing a moment), never the fresher's.
        assert 0 < ttl_ms <= direct_ttl, method
        assert scope == "private", method
    assert [tool.name for tool in merged["tools/list"].tools] == ["a_fresh_one", "b_stale_one"]


async def test_listings_of_public_upstreams_stay_public_except_the_sessions_own_resources(tmp_path: Path) -> None:
    first, second = HintedUpstream("first", LONG_TTL), HintedUpstream("second", 300_000)
    async with _upstreams(first, second) as (first_url, second_url):
        async with _direct(second_url) as client:
            direct = await _listings(client)
        config = write_config(tmp_path, {"a": _entry(first_url, "a"), "b": _entry(second_url, "b")})
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "auto", cache=None) as client:
                merged = await _listings(client)
                read = await client.read_resource("b+memo://second")
        async with _direct(second_url) as client:
            direct_read = await client.read_resource("memo://second")
    scopes = {method: _hint(result)[1] for method, result in merged.items()}
    # resources/list starts with the caller's session's artifacts: a listing of its own.
    assert scopes == {
        "tools/list": "public",
        "prompts/list": "public",
        "resources/list": "private",
        "resources/templates/list": "public",
    }
    for method, result in merged.items():
        assert 0 < _hint(result)[0] <= _hint(direct[method])[0] == 300_000, method
    # A read crosses as its upstream answered it, hint included.
    assert _hint(read) == _hint(direct_read) == (300_000, "public")
    assert read.contents[0].text == direct_read.contents[0].text  # type: ignore[union-attr]


async def test_a_listing_filtered_for_its_caller_is_private(tmp_path: Path) -> None:
    upstream = HintedUpstream("shared", LONG_TTL)
    async with _upstreams(upstream) as (url,):
        config = load_config(write_config(tmp_path, {"a": _entry(url, "a")}))
        rules = [{"principals": ["*"], "allowTools": ["*"], "allowResources": ["*"], "allowPrompts": ["*"]}]
        policy = policy_of([PolicyConfig.model_validate(rule) for rule in rules])
        server = hub.gateway_server(gateway_tools(config), state_store=InMemoryStateStore(), policy=policy)
        with anyio.fail_after(DEADLINE):
            async with serving_tools(server) as base_url, connect(base_url, "auto", cache=None) as client:
                filtered = await _listings(client)
        searched_config = write_config(tmp_path, {"a": _entry(url, "a")})
        document = json.loads(searched_config.read_text(encoding="utf-8"))
        searched_config.write_text(json.dumps({**document, "toolSearch": "on"}), encoding="utf-8")
        with anyio.fail_after(DEADLINE):
            async with gateway_http(searched_config) as base_url, connect(base_url, "auto", cache=None) as client:
                searched = await client.list_tools()
    assert {method: _hint(result)[1] for method, result in filtered.items()} == dict.fromkeys(filtered, "private")
    assert [tool.name for tool in filtered["tools/list"].tools] == ["a_shared_one"]
    assert _hint(searched)[1] == "private"


async def test_the_gateway_keeps_an_upstream_listing_for_its_ttl(tmp_path: Path) -> None:
    upstream = HintedUpstream("kept", LONG_TTL)
    async with _upstreams(upstream) as (url,):
        async with _direct(url) as client:
            direct = await _listings(client)
        asked_directly = dict(upstream.asked)
        config = write_config(tmp_path, {"a": _entry(url, "")})
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "auto", cache=None) as client:
                first = await _listings(client)
                called = await client.call_tool("kept_one", {})
                second = await _listings(client)
    assert {method: upstream.asked[method] - asked_directly[method] for method in direct} == dict.fromkeys(direct, 1)
    assert called.content[0].text == "kept_one ran"  # type: ignore[union-attr]
    assert [tool.model_dump() for tool in first["tools/list"].tools] == [
        tool.model_dump() for tool in direct["tools/list"].tools
    ]
    assert first["prompts/list"].prompts == direct["prompts/list"].prompts  # type: ignore[union-attr]
    for method in direct:
        # The second answer is as old as the gateway's kept listing: never fresher than the first.
        assert 0 < _hint(second[method])[0] <= _hint(first[method])[0] <= _hint(direct[method])[0] == LONG_TTL
    assert _hint(first["tools/list"])[1] == _hint(direct["tools/list"])[1] == "public"


async def test_the_gateway_asks_again_once_an_upstream_listing_went_stale(tmp_path: Path) -> None:
    upstream = HintedUpstream("brief", 100)
    async with _upstreams(upstream) as (url,):
        config = write_config(tmp_path, {"a": _entry(url, "")})
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "auto", cache=None) as client:
                await _listings(client)
                asked = dict(upstream.asked)
                upstream.tools = ["brief_one", "brief_two"]
                # Past the upstream's 100 ms: the kept listings are stale by now, whatever the machine's speed.
                await anyio.sleep(0.5)
                listed = await _listings(client)
    assert {method: upstream.asked[method] - asked[method] for method in listed} == dict.fromkeys(listed, 1)
    assert [tool.name for tool in listed["tools/list"].tools] == ["brief_one", "brief_two"]  # type: ignore[union-attr]


async def test_a_list_change_ends_a_kept_listing_before_its_ttl(tmp_path: Path) -> None:
    upstream = HintedUpstream("watched", LONG_TTL, listen=True)
    async with _upstreams(upstream) as (url,):
        config = write_config(tmp_path, {"a": _entry(url, "")})
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "auto", cache=None) as client:
                before = await client.list_tools()
                await client.list_tools()
                asked = upstream.asked["tools/list"]
                await upstream.change_tools(["watched_one", "watched_two"])
                listed = before
                while len(listed.tools) < 2:  # the change reaches the gateway on its listen stream
                    await anyio.sleep(0.05)
                    listed = await client.list_tools()
    assert upstream.asked["tools/list"] > asked
    assert [tool.name for tool in listed.tools] == ["watched_one", "watched_two"]
    assert 0 < _hint(listed)[0] <= LONG_TTL
    assert _hint(listed)[1] == "public"


async def test_a_resource_list_change_ends_a_kept_resource_listing_before_its_ttl(tmp_path: Path) -> None:
    upstream = HintedUpstream("noted", LONG_TTL, listen=True)
    async with _upstreams(upstream) as (url,):
        config = write_config(tmp_path, {"a": _entry(url, "")})
        with anyio.fail_after(DEADLINE):
            async with gateway_http(config) as base_url, connect(base_url, "auto", cache=None) as client:
                await client.list_resources()
                await client.list_resources()
                asked = upstream.asked["resources/list"]
                await upstream.change_resources()
                while upstream.asked["resources/list"] == asked:  # the change reaches the gateway on its listen stream
                    await anyio.sleep(0.05)
                    listed = await client.list_resources()
    assert upstream.asked["resources/list"] == asked + 1
    assert [str(resource.uri) for resource in listed.resources] == ["memo://noted"]
    assert 0 < _hint(listed)[0] <= LONG_TTL


async def test_a_listing_under_pinned_tools_is_private(tmp_path: Path) -> None:
    upstream = HintedUpstream("pinned", LONG_TTL)
    async with _upstreams(upstream) as (url,):
        config = load_config(write_config(tmp_path, {"a": _entry(url, "a", pinTools=True)}))
        state = InMemoryStateStore()
        tools = gateway_tools(config, PinStore(state, config.name))
        server = hub.gateway_server(tools, state_store=state)
        with anyio.fail_after(DEADLINE):
            async with serving_tools(server) as base_url, connect(base_url, "auto", cache=None) as client:
                listed = await client.list_tools()
    # What a pin check withholds is the gateway's doing, not the upstream's listing: never shared.
    assert [tool.name for tool in listed.tools] == ["a_pinned_one"]
    assert _hint(listed)[1] == "private"
