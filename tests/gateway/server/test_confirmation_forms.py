"""A confirmation's payload is a form the user fills or edits; the tool receives the edited payload (both eras)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from form_tools import TOOLS
from mcp import StdioServerParameters, types
from mcp.client.context import ClientRequestContext
from server_harness import DEADLINE, ERAS, ROOT, Era, connect, first_text, http_server

from gateway.server import ToolServer

pytestmark = pytest.mark.anyio

FORM_TOOLS_REF = f"{Path(__file__).with_name('form_tools.py')}:TOOLS"


class Editor:
    """An elicitation callback that accepts with `answer` and keeps what it was asked."""

    def __init__(self, answer: dict[str, Any] | None, action: str = "accept") -> None:
        self.answer = answer
        self.action = action
        self.asked: list[types.ElicitRequestFormParams] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params)
        return types.ElicitResult(action=self.action, content=self.answer)  # pyright: ignore[reportArgumentType]


async def _call(era: Era, editor: Editor, name: str, args: dict[str, Any]) -> types.CallToolResult:
    async with (
        http_server(ToolServer(TOOLS)) as base_url,
        connect("http", era, base_url, elicitation_callback=editor) as client,
    ):
        with anyio.fail_after(DEADLINE):
            return await client.call_tool(name, args)


@pytest.mark.parametrize("era", ERAS)
async def test_the_payload_is_a_form_the_user_edits_and_the_tool_receives_the_edit(era: Era) -> None:
    editor = Editor({"confirm": True, "amount": 25, "to": "carol"})
    result = await _call(era, editor, "pay", {"amount": 30})
    assert result.structured_content == {"paid": {"amount": 25, "to": "carol", "rate": 1.5, "urgent": False}}
    (asked,) = editor.asked
    properties = asked.requested_schema["properties"]
    assert properties["amount"] == {"type": "integer", "title": "amount", "default": 30}
    assert properties["to"] == {"type": "string", "title": "to", "default": "bob"}
    assert properties["rate"] == {"type": "number", "title": "rate", "default": 1.5}
    assert properties["urgent"] == {"type": "boolean", "title": "urgent", "default": False}
    assert properties["confirm"]["type"] == "boolean"
    assert asked.requested_schema["required"] == ["confirm"]
    assert "Check the payment." in asked.message


@pytest.mark.parametrize("era", ERAS)
async def test_an_edit_of_the_wrong_type_rejects_the_call_saying_which_field(era: Era) -> None:
    result = await _call(era, Editor({"confirm": True, "amount": "lots"}), "pay", {"amount": 30})
    assert result.is_error
    assert first_text(result).startswith("This tool call is rejected.")
    assert "'amount'" in first_text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_a_nested_payload_is_one_json_field_and_the_tool_receives_the_parsed_edit(era: Era) -> None:
    edited = {"items": ["a"], "to": {"city": "Bergen"}}
    editor = Editor({"confirm": True, "payload": json.dumps(edited)})
    result = await _call(era, editor, "ship", {})
    assert result.structured_content == {"shipped": edited}
    field = editor.asked[0].requested_schema["properties"]["payload"]
    assert field["type"] == "string"
    assert json.loads(field["default"]) == {"items": ["a", "b"], "to": {"city": "Oslo"}}


@pytest.mark.parametrize("era", ERAS)
async def test_invalid_json_in_the_payload_field_rejects_the_call(era: Era) -> None:
    result = await _call(era, Editor({"confirm": True, "payload": "{not json"}), "ship", {})
    assert result.is_error
    assert "not valid JSON" in first_text(result)


@pytest.mark.parametrize("era", ERAS)
async def test_the_tools_hint_hook_words_the_question_from_the_arguments(era: Era) -> None:
    editor = Editor({"confirm": True})
    result = await _call(era, editor, "delete_file", {"path": "notes/x.txt"})
    assert result.structured_content == {"result": "deleted notes/x.txt"}
    assert editor.asked[0].message.endswith("Delete notes/x.txt?")


@pytest.mark.parametrize("era", ERAS)
async def test_payload_forms_and_hints_over_stdio(era: Era, state_file: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", "--tools", FORM_TOOLS_REF, "--state", str(state_file)],
        cwd=ROOT,
    )
    editor = Editor({"confirm": True, "to": "dave"})
    async with connect("stdio", era, params, elicitation_callback=editor) as client:
        with anyio.fail_after(DEADLINE):
            paid = await client.call_tool("pay", {"amount": 7})
            deleted = await client.call_tool("delete_file", {"path": "a.txt"})
    assert paid.structured_content == {"paid": {"amount": 7, "to": "dave", "rate": 1.5, "urgent": False}}
    assert deleted.structured_content == {"result": "deleted a.txt"}
    assert editor.asked[1].message.endswith("Delete a.txt?")
