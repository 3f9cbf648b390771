"""examples/gateway.json, the README's gateway, served over stdio: mcp-server-time plus examples/functions.py."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_example_gateway_lists_both_sources_and_calls_each(mode: str, tmp_path: Path) -> None:
    # The config starts `mcp-server-time` by name, as Claude Desktop would: the venv's scripts go first on PATH.
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", str(ROOT / "examples" / "gateway.json"), "--state", str(tmp_path / "s.db")],
        cwd=ROOT,
        env={"PATH": path},
    )
    with anyio.fail_after(60):
        async with Client(params, mode=mode) as client:  # type: ignore[arg-type]
            names = [tool.name for tool in (await client.list_tools()).tools]
            now = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
            first = await client.call_tool("remember", {"note": "milk"})
            second = await client.call_tool("remember", {"note": "eggs"})
    assert names == [
        "time_convert_time",
        "time_get_current_time",
        "convert_temperature",
        "count_words",
        "days_between",
        "remember",
    ]
    assert not now.is_error
    assert now.structured_content is not None
    assert cast("dict[str, Any]", now.structured_content)["timezone"] == "UTC"
    assert first.structured_content == {"notes": ["milk"]}
    assert second.structured_content == {"notes": ["milk", "eggs"]}
