"""Published MCP servers from PyPI as upstreams over stdio: `mcp-server-time` and `mcp-server-git`."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from client_harness import DEADLINE

from gateway.client import McpTool, McpToolset, StdioConnectionParams
from gateway.tools import ToolContext

BIN = Path(sys.executable).parent


async def call(params: StdioConnectionParams, mode: str, name: str, args: dict[str, str]) -> dict[str, object]:
    with anyio.fail_after(DEADLINE):
        async with McpToolset(connection_params=params, mode=mode, tool_filter=[name]) as toolset:
            [tool] = await toolset.get_tools()
            assert isinstance(tool, McpTool)
            return await tool.run_async(args=args, tool_context=ToolContext())


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_mcp_server_time_tells_the_time_in_a_timezone(mode: str) -> None:
    params = StdioConnectionParams(command=str(BIN / "mcp-server-time"), args=["--local-timezone", "UTC"])
    response = await call(params, mode, "get_current_time", {"timezone": "Europe/Paris"})
    assert response["timezone"] == "Europe/Paris"
    assert isinstance(response["datetime"], str)
    assert str(response["datetime"]).endswith(("+01:00", "+02:00"))


@pytest.mark.anyio
async def test_mcp_server_git_reports_the_status_of_a_new_repository(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    await anyio.run_process(["git", "init", "-q", str(repository)])
    (repository / "notes.txt").write_text("hello\n")
    params = StdioConnectionParams(command=str(BIN / "mcp-server-git"), args=["--repository", str(repository)])
    response = await call(params, "auto", "git_status", {"repo_path": str(repository)})
    assert set(response) == {"result"}
    assert "notes.txt" in str(response["result"])
