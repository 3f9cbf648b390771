"""The adapters on the real tool schemas of published MCP servers (from PyPI, run as stdio children)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from adapters import declaration_to_mcp_tool, mcp_tool_to_declaration
from adapters.gemini_schema import to_gemini_schema

pytestmark = pytest.mark.anyio


def _keys(schema: Any) -> set[str]:
    """Every key used anywhere in a JSON document."""
    if isinstance(schema, dict):
        return set(schema) | {k for value in schema.values() for k in _keys(value)}
    if isinstance(schema, list):
        return {k for value in schema for k in _keys(value)}
    return set()


async def _list_tools(module: str, *args: str) -> list[types.Tool]:
    params = StdioServerParameters(command=sys.executable, args=["-m", module, *args])
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            tools: list[types.Tool] = []
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return tools


@pytest.fixture
def git_repository(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "--quiet", str(tmp_path)], check=True)
    return tmp_path


@pytest.fixture
async def published_tools(git_repository: Path) -> list[types.Tool]:
    time_tools = await _list_tools("mcp_server_time")
    git_tools = await _list_tools("mcp_server_git", "--repository", str(git_repository))
    assert {"get_current_time", "convert_time"} <= {t.name for t in time_tools}
    assert {"git_status", "git_log", "git_commit"} <= {t.name for t in git_tools}
    return time_tools + git_tools


async def test_published_tools_survive_a_trip_through_a_declaration_exactly(
    published_tools: list[types.Tool],
) -> None:
    for tool in published_tools:
        again = declaration_to_mcp_tool(mcp_tool_to_declaration(tool))
        assert again.model_dump(by_alias=True, mode="json", exclude_none=True) == tool.model_dump(
            by_alias=True, mode="json", exclude_none=True
        ), tool.name


async def test_published_declarations_keep_descriptions_and_required_arguments(
    published_tools: list[types.Tool],
) -> None:
    by_name = {tool.name: mcp_tool_to_declaration(tool) for tool in published_tools}
    convert = by_name["convert_time"]
    assert convert.description
    assert convert.parameters_json_schema is not None
    assert set(convert.parameters_json_schema["required"]) == {"source_timezone", "time", "target_timezone"}


async def test_published_schemas_convert_to_gemini_form_without_refs_or_rejected_keywords(
    published_tools: list[types.Tool],
) -> None:
    for tool in published_tools:
        declaration = mcp_tool_to_declaration(tool)
        gemini = to_gemini_schema(declaration.parameters_json_schema or {"type": "object"})
        assert gemini["type"] == "object", tool.name
        assert not _keys(gemini) & {"$ref", "$defs", "$schema", "additionalProperties", "const"}, tool.name
        json.dumps(gemini)  # plain JSON, ready to send
