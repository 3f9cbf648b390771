"""MCP Apps through the gateway: an upstream built on `mcp.server.apps`, seen directly and through the hop.

Its app `ui://clock/app.html` is published as `ui://time/clock/app.html` (prefix `time`), every `_meta.ui.resourceUri`
naming it (on tools, on results) and every resource link to it follow, a read of the new URI returns the upstream's
document, and the app's own calls, made with the upstream's tool names, reach the upstream's tools.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from hub_harness import HERE, SLOW_START, Mode, connect, gateway_http, structured, text_of, write_config
from mcp import Client, MCPError, StdioServerParameters, types

pytestmark = pytest.mark.anyio

APPS_SERVER = str(HERE / "hub_apps_server.py")
APP = "ui://clock/app.html"
PUBLISHED_APP = "ui://time/clock/app.html"
APPS_EXTENSION = "io.modelcontextprotocol/ui"


def _entry(**options: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [APPS_SERVER, "clock"], **SLOW_START, **options}


@asynccontextmanager
async def _direct(mode: Mode) -> AsyncGenerator[Client]:
    async with Client(StdioServerParameters(command=sys.executable, args=[APPS_SERVER, "clock"]), mode=mode) as client:
        yield client


@asynccontextmanager
async def _through_gateway(directory: Path, mode: Mode, **servers: dict[str, Any]) -> AsyncGenerator[Client]:
    config = write_config(directory, servers or {"time": _entry()})
    async with gateway_http(config) as base_url, connect(base_url, mode) as client:
        yield client


def _wire(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tools_name_the_app_under_the_prefix_and_the_app_reads_as_the_upstream_serves_it(
    tmp_path: Path, mode: Mode
) -> None:
    async with _direct(mode) as direct:
        direct_tools = {tool.name: tool for tool in (await direct.list_tools()).tools}
        direct_resources = (await direct.list_resources()).resources
        direct_read = await direct.read_resource(APP)
    async with _through_gateway(tmp_path, mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        resources = (await client.list_resources()).resources
        read = await client.read_resource(PUBLISHED_APP)

    assert direct_tools["get_time"].meta == {"ui": {"resourceUri": APP}}
    assert tools["time_get_time"].meta == {"ui": {"resourceUri": PUBLISHED_APP}}
    assert tools["time_refresh_clock"].meta == {"ui": {"resourceUri": PUBLISHED_APP, "visibility": ["app"]}}
    assert tools["time_show_clock"].meta == direct_tools["show_clock"].meta
    [direct_app] = direct_resources
    [app] = [resource for resource in resources if str(resource.uri).startswith("ui://")]
    assert str(app.uri) == PUBLISHED_APP
    assert _wire(app) == {**_wire(direct_app), "uri": PUBLISHED_APP}
    [direct_contents] = direct_read.contents
    [contents] = read.contents
    assert _wire(contents) == {**_wire(direct_contents), "uri": PUBLISHED_APP}
    assert isinstance(contents, types.TextResourceContents)
    assert contents.mime_type == "text/html;profile=mcp-app"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_result_naming_the_app_names_it_under_the_prefix(tmp_path: Path, mode: Mode) -> None:
    async with _direct(mode) as direct:
        expected = await direct.call_tool("show_clock", {})
    async with _through_gateway(tmp_path, mode) as client:
        await client.list_tools()
        # Twice: a handshake-era session's second call takes the fast lane (the result in its wire form).
        results = [await client.call_tool("time_show_clock", {}) for _ in range(2)]

    assert expected.meta is not None
    assert expected.meta["ui"] == {"resourceUri": APP}
    for result in results:
        assert result.meta is not None
        assert result.meta["ui"] == {"resourceUri": PUBLISHED_APP}
        assert text_of(result) == text_of(expected)
        [link] = [block for block in result.content if isinstance(block, types.ResourceLink)]
        [direct_link] = [block for block in expected.content if isinstance(block, types.ResourceLink)]
        assert _wire(link) == {**_wire(direct_link), "uri": PUBLISHED_APP}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_apps_own_calls_by_the_upstreams_tool_names_reach_its_tools(tmp_path: Path, mode: Mode) -> None:
    async with _direct(mode) as direct:
        expected_refresh = await direct.call_tool("refresh_clock", {"zone": "UTC"})
        expected_time = await direct.call_tool("get_time", {})
    async with _through_gateway(tmp_path, mode) as client:
        refreshed = [await client.call_tool("refresh_clock", {"zone": "UTC"}) for _ in range(2)]
        time = await client.call_tool("get_time", {})
        published = await client.call_tool("time_refresh_clock", {"zone": "UTC"})

    for result in [*refreshed, published]:
        assert structured(result) == structured(expected_refresh)
    assert text_of(time) == text_of(expected_time)


async def test_an_apps_call_by_a_name_two_app_upstreams_have_is_refused_naming_both(tmp_path: Path) -> None:
    async with _through_gateway(tmp_path, "legacy", a=_entry(), b=_entry()) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("get_time", {})
        unknown = await client.call_tool("a_get_time", {})
    assert refused.value.code == types.INVALID_PARAMS
    assert refused.value.data == {"candidates": ["a_get_time", "b_get_time"]}
    assert text_of(unknown) == "12:00"


async def test_an_unknown_name_no_upstream_has_is_still_an_unknown_tool(tmp_path: Path) -> None:
    async with _through_gateway(tmp_path, "legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("no_such_tool", {})
    assert refused.value.code == types.INVALID_PARAMS
    assert "Unknown tool 'no_such_tool'" in refused.value.message


async def test_discover_declares_the_apps_extension_when_an_upstream_does(tmp_path: Path) -> None:
    async with _direct("auto") as direct:
        declared = direct.server_capabilities.extensions if direct.server_capabilities else None
    async with _through_gateway(tmp_path, "auto") as client:
        capabilities = client.server_capabilities
    assert declared == {APPS_EXTENSION: {}}
    assert capabilities is not None
    assert capabilities.extensions is not None
    assert capabilities.extensions[APPS_EXTENSION] == {}


async def test_without_an_upstream_serving_apps_discover_declares_no_apps_extension(tmp_path: Path) -> None:
    tiny = {"command": sys.executable, "args": ["-I", "-S", str(HERE / "hub_tiny_server.py")], **SLOW_START}
    async with _through_gateway(tmp_path, "auto", tiny=tiny) as client:
        capabilities = client.server_capabilities
    assert capabilities is not None
    assert APPS_EXTENSION not in (capabilities.extensions or {})
