"""`to_adk`: our tools and toolsets in a real google-adk agent, run by a real `Runner` with a scripted model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.base_tool import BaseTool as AdkBaseTool
from google.adk.tools.base_toolset import BaseToolset as AdkBaseToolset
from google.genai import types as genai_types
from mcp import types as mcp_types
from scripted_model import ScriptedModel, call, say

from adapters import FunctionDeclaration, Media
from gateway import BaseTool, BaseToolset, FunctionTool, McpToolset, ReadonlyContext, StdioConnectionParams, ToolContext
from gateway.adk import to_adk
from tests.support.deadlines import DEADLINE
from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio

REQUIRED = "This tool call requires confirmation, please approve or reject."
HERE = Path(__file__).resolve().parent
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)

HARD_SCHEMAS: dict[str, dict[str, Any]] = {
    # draft-07 `definitions` with a `$ref` into them
    "draft07": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "definitions": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {"at": {"$ref": "#/definitions/Point"}},
        "required": ["at"],
    },
    # 2020-12 `$defs`, a recursive reference and `additionalProperties`
    "defs": {
        "type": "object",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
        "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    },
    # `anyOf` with no `type`, and a `const`
    "any_of": {
        "type": "object",
        "properties": {"value": {"anyOf": [{"type": "string"}, {"type": "integer"}]}, "mode": {"const": "fast"}},
    },
    # nullable unions, both spellings
    "nullable": {
        "type": "object",
        "properties": {
            "note": {"type": ["string", "null"]},
            "count": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        },
    },
}


class RawTool(BaseTool):
    """A tool whose declaration is a given raw JSON Schema (as an MCP server may send)."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        super().__init__(name=name, description=f"Takes the {name} schema.")
        self._schema = schema

    def _get_declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(name=self.name, description=self.description, parameters_json_schema=self._schema)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        del tool_context
        return {"got": args}


class RawToolset(BaseToolset):
    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        del readonly_context
        return [RawTool(name, schema) for name, schema in HARD_SCHEMAS.items()]


async def _run(runner: Runner, session_id: str, message: genai_types.Content) -> list[Event]:
    events: list[Event] = []
    with anyio.fail_after(DEADLINE):
        async for event in runner.run_async(user_id="user", session_id=session_id, new_message=message):
            events.append(event)
    return events


@pytest.fixture
def sessions() -> InMemorySessionService:
    return InMemorySessionService()


def _user(text: str) -> genai_types.Content:
    return genai_types.Content(role="user", parts=[genai_types.Part(text=text)])


def _walk(node: Any) -> list[dict[str, Any]]:
    """Every schema node of a dumped genai `Schema`."""
    if not isinstance(node, dict):
        return []
    found = [node]
    for key in ("items",):
        found += _walk(node.get(key))
    for child in (node.get("properties") or {}).values():
        found += _walk(child)
    for child in node.get("any_of") or []:
        found += _walk(child)
    return found


async def test_schemas_that_break_adk_reach_the_model_as_gemini_safe_declarations(
    sessions: InMemorySessionService,
) -> None:
    toolset = to_adk(RawToolset())
    assert isinstance(toolset, AdkBaseToolset)
    model = ScriptedModel(script=[say("ok")])
    runner = Runner(app_name="app", agent=LlmAgent(name="a", model=model, tools=[toolset]), session_service=sessions)
    session = await sessions.create_session(app_name="app", user_id="user")
    await _run(runner, session.id, _user("hi"))
    await runner.close()

    (request,) = model.requests
    assert request.config is not None
    assert request.config.tools is not None
    declarations = {d.name: d for tool in request.config.tools for d in (tool.function_declarations or [])}
    assert sorted(declarations) == sorted(HARD_SCHEMAS)
    for name, declaration in declarations.items():
        assert declaration.parameters_json_schema is None, name
        assert declaration.parameters is not None, name
        dumped = declaration.parameters.model_dump(mode="json", exclude_none=True)
        for node in _walk(dumped):
            assert not {"ref", "defs", "additional_properties"} & set(node), (name, node)
            assert "type" in node or "any_of" in node, (name, node)
            for branch in node.get("any_of") or []:
                assert "type" in branch, (name, node)
    at = declarations["draft07"].parameters.properties["at"]  # pyright: ignore[reportOptionalMemberAccess, reportOptionalSubscript]
    assert at.properties["x"].type == genai_types.Type.NUMBER  # pyright: ignore[reportOptionalSubscript, reportOptionalMemberAccess]
    note = declarations["nullable"].parameters.properties["note"]  # pyright: ignore[reportOptionalMemberAccess, reportOptionalSubscript]
    assert (note.type, note.nullable) == (genai_types.Type.STRING, True)


async def test_a_function_tool_returning_an_image_hands_adk_the_image_as_media(
    sessions: InMemorySessionService,
) -> None:
    def snapshot() -> Media:
        """Take a picture."""
        return Media(PNG, "image/png")

    tool = to_adk(FunctionTool(snapshot))
    assert isinstance(tool, AdkBaseTool)
    model = ScriptedModel(script=[call("snapshot"), say("a picture")])
    runner = Runner(app_name="app", agent=LlmAgent(name="a", model=model, tools=[tool]), session_service=sessions)
    session = await sessions.create_session(app_name="app", user_id="user")
    await _run(runner, session.id, _user("picture please"))
    await runner.close()
    (part,) = model.requests[1].contents[-1].parts or []
    assert part.function_response is not None
    media = part.function_response.parts or []
    assert [(m.inline_data.mime_type, m.inline_data.data) for m in media if m.inline_data] == [("image/png", PNG)]


@pytest.mark.parametrize("confirmed", [True, False], ids=["approved", "rejected"])
async def test_a_runner_calls_a_published_server_and_our_confirmed_tool_through_to_adk(
    confirmed: bool, sessions: InMemorySessionService, tmp_path: Path
) -> None:
    marker = tmp_path / "removed.txt"
    time = McpToolset(
        connection_params=StdioConnectionParams(
            command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "UTC"]
        ),
        tool_name_prefix="time",
    )
    store = McpToolset(
        connection_params=StdioConnectionParams(
            command=sys.executable,
            args=["-m", "gateway.cli", "serve", "--tools", str(HERE / "confirm_tools.py"), "--state", ":memory:"],
            cwd=str(ROOT),
        ),
        tool_name_prefix="store",
    )
    remove = {"item": "photos", "marker": str(marker)}
    model = ScriptedModel(
        script=[call("time_get_current_time", {"timezone": "UTC"}), call("store_remove_item", remove), say("Done.")]
    )
    agent = LlmAgent(name="assistant", model=model, tools=[to_adk(time), to_adk(store)])
    runner = Runner(app_name="app", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="app", user_id="user")
    try:
        first = await _run(runner, session.id, _user("What time is it? Then remove my photos."))
        calls = [c.name for e in first for c in e.get_function_calls()]
        assert calls == ["time_get_current_time", "store_remove_item", "adk_request_confirmation"]
        responses = {r.name: r.response for e in first for r in e.get_function_responses()}
        assert "UTC" in str(responses["time_get_current_time"])
        assert responses["store_remove_item"] == {
            "error": "This tool call requires confirmation, please approve or reject."
        }
        assert not marker.exists()
        (request,) = [c for e in first for c in e.get_function_calls() if c.name == "adk_request_confirmation"]
        assert request.args is not None
        assert "remove_item(item='photos'" in request.args["toolConfirmation"]["hint"]

        answer = genai_types.Part(
            function_response=genai_types.FunctionResponse(
                id=request.id, name="adk_request_confirmation", response={"confirmed": confirmed}
            )
        )
        second = await _run(runner, session.id, genai_types.Content(role="user", parts=[answer]))
    finally:
        await runner.close()
    responses = {r.name: r.response for e in second for r in e.get_function_responses()}
    if confirmed:
        assert responses["store_remove_item"] == {"removed": "photos"}
        assert marker.read_text() == "photos"
    else:
        assert responses["store_remove_item"] == {"error": "This tool call is rejected."}
        assert not marker.exists()
    assert second[-1].content is not None
    assert second[-1].content.parts[0].text == "Done."  # pyright: ignore[reportOptionalSubscript]


async def test_state_our_tool_writes_lands_in_the_adk_session(sessions: InMemorySessionService) -> None:
    def visit(page: str, tool_context: ToolContext) -> dict[str, Any]:
        """Count a visit in the session and for the user."""
        tool_context.state["visits"] = tool_context.state.get("visits", 0) + 1
        tool_context.state["user:pages"] = [*tool_context.state.get("user:pages", []), page]
        return {"visits": tool_context.state["visits"]}

    model = ScriptedModel(script=[call("visit", {"page": "a"}), say("1"), call("visit", {"page": "b"}), say("2")])
    agent = LlmAgent(name="a", model=model, tools=[to_adk(FunctionTool(visit))])
    runner = Runner(app_name="app", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="app", user_id="user")
    await _run(runner, session.id, _user("visit a"))
    await _run(runner, session.id, _user("visit b"))
    await runner.close()
    stored = await sessions.get_session(app_name="app", user_id="user", session_id=session.id)
    assert stored is not None
    assert stored.state["visits"] == 2
    assert stored.state["user:pages"] == ["a", "b"]


async def test_a_toolset_with_its_own_elicitation_callback_keeps_it_under_to_adk(
    sessions: InMemorySessionService, tmp_path: Path
) -> None:
    marker = tmp_path / "removed.txt"
    asked: list[str] = []

    async def approve(context: Any, params: Any) -> Any:
        del context
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"confirm": True})

    store = McpToolset(
        connection_params=StdioConnectionParams(
            command=sys.executable,
            args=["-m", "gateway.cli", "serve", "--tools", str(HERE / "confirm_tools.py"), "--state", ":memory:"],
            cwd=str(ROOT),
        ),
        elicitation_callback=approve,
    )
    model = ScriptedModel(script=[call("remove_item", {"item": "photos", "marker": str(marker)}), say("Done.")])
    runner = Runner(
        app_name="app", agent=LlmAgent(name="a", model=model, tools=[to_adk(store)]), session_service=sessions
    )
    session = await sessions.create_session(app_name="app", user_id="user")
    try:
        events = await _run(runner, session.id, _user("Remove my photos."))
    finally:
        await runner.close()
    assert [c.name for e in events for c in e.get_function_calls()] == ["remove_item"]
    assert marker.read_text() == "photos"
    assert len(asked) == 1


async def test_an_adk_agent_finds_and_calls_a_published_servers_tool_through_a_searching_toolset(
    sessions: InMemorySessionService,
) -> None:
    time = McpToolset(
        connection_params=StdioConnectionParams(
            command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "UTC"]
        ),
        tool_name_prefix="time",
        tool_search=True,
    )
    model = ScriptedModel(
        script=[
            call("time_search_tools", {"query": "what is the current time in a timezone", "limit": 2}),
            call("time_call_tool", {"name": "get_current_time", "arguments": {"timezone": "UTC"}}),
            say("Done."),
        ]
    )
    agent = LlmAgent(name="assistant", model=model, tools=[to_adk(time)])
    runner = Runner(app_name="app", agent=agent, session_service=sessions)
    session = await sessions.create_session(app_name="app", user_id="user")
    try:
        events = await _run(runner, session.id, _user("What time is it in UTC?"))
    finally:
        await runner.close()
    offered = [sorted(request.tools_dict) for request in model.requests]
    responses = {r.name: r.response for e in events for r in e.get_function_responses()}
    assert offered[0] == ["time_call_tool", "time_search_tools"]
    assert responses["time_search_tools"] is not None
    hits = responses["time_search_tools"]["tools"]
    assert hits[0]["name"] == "get_current_time"
    assert "timezone" in hits[0]["inputSchema"]["properties"]
    assert "UTC" in str(responses["time_call_tool"])
