"""examples/serve_functions.py serves over stdio in both protocol eras, and the Claude Desktop snippet is valid."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_example_server_lists_and_confirms_over_stdio(mode: str, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(ROOT / "examples" / "serve_functions.py"), "stdio", "0", str(tmp_path / "s.db")],
    )
    asked: list[str] = []

    async def confirm(_context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    with anyio.fail_after(60):
        async with Client(params, mode=mode, elicitation_callback=confirm) as client:  # type: ignore[arg-type]
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names == ["convert_temperature", "count_words", "days_between", "remember", "forget"]
            noted = await client.call_tool("remember", {"note": "milk"})
            assert noted.structured_content == {"notes": ["milk"]}
            forgotten = await client.call_tool("forget", {})
            assert forgotten.structured_content == {"result": "forgotten"}
            assert asked == ["Allow the tool call forget()?"]


def test_the_claude_desktop_snippet_runs_the_serve_command() -> None:
    config = json.loads((ROOT / "examples" / "claude_desktop_config.json").read_text(encoding="utf-8"))
    server = config["mcpServers"]["adk-examples"]
    assert server["command"].endswith("/.venv/bin/adk-mcp-gateway")
    assert server["args"][:2] == ["serve", "--tools"]
    assert server["args"][2].endswith("/examples/functions.py")
