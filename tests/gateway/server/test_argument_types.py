"""Over the wire, non-finite numbers and booleans for numbers never reach a tool as numbers.

`NaN`, `Infinity` and `1e999` are not JSON: the HTTP front reads bodies strictly and answers them -32700 before any
tool runs. Strings such as `"NaN"` and booleans given for numbers are JSON, and are refused as `isError` results
naming the field. Both kinds of tool are covered: a FunctionTool (validated by pydantic) and a tool with only a
declared JSON Schema (validated by jsonschema).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from server_harness import DEADLINE, MODERN_VERSION, http_server

from adapters import FunctionDeclaration
from gateway.server import ToolServer
from gateway.tools import BaseTool, FunctionTool, ToolContext

pytestmark = pytest.mark.anyio

MODERN_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": MODERN_VERSION,
    "Mcp-Method": "tools/call",
}
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Ran:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []


class Measure(BaseTool):
    """A tool known only by its declared JSON Schema (no pydantic model behind it)."""

    def __init__(self, ran: Ran) -> None:
        super().__init__(name="measure", description="Record a measurement.")
        self._ran = ran

    def _get_declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema={
                "type": "object",
                "properties": {"x": {"type": "number"}, "n": {"type": "integer"}},
                "required": ["x"],
            },
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        self._ran.calls.append(args)
        return {"x": args["x"]}


def _server(ran: Ran) -> ToolServer:
    def scale(x: float, n: int = 1) -> float:
        """Multiply x by n."""
        ran.calls.append({"x": x, "n": n})
        return x * n

    return ToolServer([FunctionTool(scale), Measure(ran)])


async def _raw_call(base_url: str, tool: str, arguments: str, *, status: int = 200) -> dict[str, Any]:
    """A modern-era `tools/call` whose arguments are given as raw JSON text (so NaN can be written)."""
    body = (
        f'{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {{"name": "{tool}", '
        f'"arguments": {arguments}, "_meta": {json.dumps(META)}}}}}'
    )
    async with httpx2.AsyncClient(base_url=base_url) as http:
        with anyio.fail_after(DEADLINE):
            response = await http.post("/mcp", content=body, headers={**MODERN_HEADERS, "Mcp-Name": tool})
    assert response.status_code == status, response.text
    return response.json()


@pytest.mark.parametrize("tool", ["scale", "measure"])
@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ('{"x": "NaN"}', "x"),
        ('{"x": "inf"}', "x"),
        ('{"x": true}', "x"),
        ('{"x": 2, "n": true}', "n"),
    ],
)
async def test_a_non_finite_string_or_a_boolean_for_a_number_is_an_error_result_naming_the_field(
    tool: str, arguments: str, field: str
) -> None:
    ran = Ran()
    async with http_server(_server(ran)) as base_url:
        reply = await _raw_call(base_url, tool, arguments)
        finite = await _raw_call(base_url, tool, '{"x": 2.5, "n": 2}')

    result = reply["result"]
    assert result["isError"] is True
    assert f"'{field}'" in result["content"][0]["text"]
    assert "structuredContent" not in result
    assert len(ran.calls) == 1
    assert finite["result"].get("isError") is not True


@pytest.mark.parametrize("tool", ["scale", "measure"])
@pytest.mark.parametrize(
    "arguments", ['{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}', '{"x": 1e999}', '{"x": 2, "n": 1e999}']
)
async def test_a_non_finite_number_token_is_a_parse_error_and_no_tool_runs(tool: str, arguments: str) -> None:
    ran = Ran()
    async with http_server(_server(ran)) as base_url:
        reply = await _raw_call(base_url, tool, arguments, status=400)
        finite = await _raw_call(base_url, tool, '{"x": 2.5, "n": 2}')

    assert reply["error"]["code"] == -32700
    assert "result" not in reply
    assert len(ran.calls) == 1
    assert finite["result"].get("isError") is not True
