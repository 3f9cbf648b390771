"""`AppCalls` on the general path: a call of a published tool is looked up once (by the call itself), and only a
name the gateway does not publish is looked up again as an app's upstream tool name."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import DEADLINE, HERE, connect, gateway_server, text_of, write_config

from gateway.server.catalog import CatalogEntry
from gateway.server.identity import SESSION_META_KEY
from gateway.server.observe.observation import RequestRecord
from gateway.tools import ReadonlyContext
from tests.support.loopback import serving_tools

pytestmark = pytest.mark.anyio

APPS_SERVER = str(HERE / "hub_apps_server.py")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_published_tools_call_looks_its_name_up_once(tmp_path: Path, mode: Any) -> None:
    config = write_config(tmp_path, {"up": {"command": sys.executable, "args": [str(HERE / "hub_tiny_server.py")]}})
    tool_server = gateway_server(config)
    catalog = tool_server.catalog
    find = catalog.find
    looked_up: list[str] = []

    async def counted(name: str, readonly_context: ReadonlyContext) -> CatalogEntry:
        looked_up.append(name)
        return await find(name, readonly_context)

    catalog.find = counted  # type: ignore[method-assign]
    with anyio.fail_after(DEADLINE * 2):
        async with serving_tools(tool_server) as base_url, connect(base_url, mode) as client:
            # A session key of the caller's own keeps the call off the plain path: the server's pipeline serves it.
            await client.call_tool("up_pong", {}, meta={SESSION_META_KEY: "key"})
            looked_up.clear()
            results = [await client.call_tool("up_pong", {}, meta={SESSION_META_KEY: "key"}) for _ in range(3)]
    assert [text_of(result) for result in results] == [text_of(results[0])] * 3
    assert looked_up == ["up_pong"] * 3


async def test_an_apps_call_by_its_upstreams_name_is_one_request_of_the_published_tool(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"time": {"command": sys.executable, "args": [APPS_SERVER, "clock"]}})
    tool_server = gateway_server(config)
    records: list[RequestRecord] = []

    class Recorder:
        def request_done(self, record: RequestRecord) -> None:
            records.append(record)

    tool_server.observation.observers.append(Recorder())
    with anyio.fail_after(DEADLINE * 2):
        async with serving_tools(tool_server) as base_url, connect(base_url, "legacy") as client:
            await client.list_tools()
            result = await client.call_tool("get_time", {}, meta={SESSION_META_KEY: "key"})
    calls = [(record.name, record.tool, record.outcome) for record in records if record.method == "tools/call"]
    assert text_of(result) == "12:00"
    assert calls == [("time_get_time", "time_get_time", "ok")]
