"""Confirmations with payloads, the toolset's elicitation capability and get_user_choice, between MCP and ADK.

Real google-adk Runners with the scripted model, real `serve` children over stdio, both protocol eras.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types as genai_types
from mcp import Client, StdioServerParameters, types
from mcp.client.context import ClientRequestContext
from scripted_model import ScriptedModel, call, say

from gateway import McpToolset, StdioConnectionParams, ToolContext
from gateway.adk import to_adk

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FORM_TOOLS = f"{HERE.parent / 'server' / 'form_tools.py'}:TOOLS"
DEADLINE = 30.0
Mode = Literal["legacy", "auto"]
MODES: tuple[Mode, ...] = ("legacy", "auto")


def _serve(reference: str, mode: Mode) -> McpToolset:
    return McpToolset(
        connection_params=StdioConnectionParams(
            command=sys.executable,
            args=["-m", "gateway.cli", "serve", "--tools", reference, "--state", ":memory:"],
            cwd=str(ROOT),
        ),
        mode=mode,
    )


async def _run(runner: Runner, session_id: str, message: genai_types.Content) -> list[Event]:
    events: list[Event] = []
    with anyio.fail_after(DEADLINE):
        async for event in runner.run_async(user_id="user", session_id=session_id, new_message=message):
            events.append(event)
    return events


def _user(text: str) -> genai_types.Content:
    return genai_types.Content(role="user", parts=[genai_types.Part(text=text)])


def _answer(request: genai_types.FunctionCall, response: dict[str, Any]) -> genai_types.Content:
    part = genai_types.Part(
        function_response=genai_types.FunctionResponse(id=request.id, name=request.name, response=response)
    )
    return genai_types.Content(role="user", parts=[part])


async def _confirm_pay(toolset: McpToolset, edit: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run `pay(amount=30)` through `to_adk(toolset)`, answer ADK's confirmation with `edit` merged into its
    payload; the payload ADK's user was shown and the tool's final response."""
    sessions = InMemorySessionService()
    model = ScriptedModel(script=[call("pay", {"amount": 30}), say("Paid.")])
    runner = Runner(
        app_name="app", agent=LlmAgent(name="a", model=model, tools=[to_adk(toolset)]), session_service=sessions
    )
    session = await sessions.create_session(app_name="app", user_id="user")
    try:
        first = await _run(runner, session.id, _user("Pay bob."))
        (request,) = [c for e in first for c in e.get_function_calls() if c.name == "adk_request_confirmation"]
        assert request.args is not None
        shown = dict(request.args["toolConfirmation"]["payload"])
        second = await _run(runner, session.id, _answer(request, {"confirmed": True, "payload": {**shown, **edit}}))
    finally:
        await runner.close()
    responses = {r.name: r.response for e in second for r in e.get_function_responses()}
    return shown, dict(responses["pay"] or {})


@pytest.mark.parametrize("mode", MODES)
async def test_an_adk_user_edits_a_served_tools_confirmation_payload_and_the_tool_gets_the_edit(mode: Mode) -> None:
    shown, response = await _confirm_pay(_serve(FORM_TOOLS, mode), {"to": "carol"})
    assert shown == {"amount": 30, "to": "bob", "rate": 1.5, "urgent": False}
    assert response == {"paid": {"amount": 30, "to": "carol", "rate": 1.5, "urgent": False}}


@pytest.mark.parametrize("mode", MODES)
async def test_a_toolset_used_directly_first_still_asks_adks_user_once_lent_to_adk(mode: Mode) -> None:
    toolset = _serve(FORM_TOOLS, mode)
    # Used on its own first: listed, and a call made with a plain context (which cannot answer a question).
    tools = {tool.name: tool for tool in await toolset.get_tools()}
    direct = await tools["pay"].run_async(args={"amount": 1}, tool_context=ToolContext())
    assert "error" in direct
    _, response = await _confirm_pay(toolset, {"amount": 29})
    assert response == {"paid": {"amount": 29, "to": "bob", "rate": 1.5, "urgent": False}}


class Chooser:
    """An elicitation callback that picks `choice` from the form's enum; keeps what it was asked."""

    def __init__(self, choice: str | None) -> None:
        self.choice = choice
        self.asked: list[types.ElicitRequestFormParams] = []

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params)
        if self.choice is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"choice": self.choice})


@pytest.mark.parametrize("mode", MODES)
async def test_google_adks_get_user_choice_served_asks_the_user_to_pick_one_option(mode: Mode) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "gateway.cli",
            "serve",
            "--tools",
            "google.adk.tools.get_user_choice_tool:get_user_choice_tool",
            "--state",
            ":memory:",
        ],
        cwd=str(ROOT),
    )
    chooser, refuser = Chooser("blue"), Chooser(None)
    async with Client(params, mode=mode, elicitation_callback=chooser) as client:
        with anyio.fail_after(DEADLINE):
            chosen = await client.call_tool("get_user_choice", {"options": ["red", "blue"]})
    async with Client(params, mode=mode, elicitation_callback=refuser) as client:
        with anyio.fail_after(DEADLINE):
            refused = await client.call_tool("get_user_choice", {"options": ["red", "blue"]})
    assert not chosen.is_error, chosen.content
    assert chosen.structured_content == {"result": "blue"}
    (asked,) = chooser.asked
    assert asked.requested_schema["properties"]["choice"]["enum"] == ["red", "blue"]
    assert asked.requested_schema["required"] == ["choice"]
    assert refused.is_error


@pytest.mark.parametrize("mode", MODES)
async def test_a_served_agents_tool_confirmation_payload_is_a_form_and_the_tool_gets_the_edit(
    mode: Mode, tmp_path: Path
) -> None:
    marker = tmp_path / "paid.json"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", "--agent", f"{HERE / 'payload_agent.py'}:payer", "--state", ":memory:"],
        cwd=str(ROOT),
        env={"PYTHONPATH": f"{ROOT}:{HERE}", "PAY_MARKER": str(marker)},
    )
    asked: list[types.ElicitRequestFormParams] = []

    async def edit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        assert isinstance(params, types.ElicitRequestFormParams)
        asked.append(params)
        return types.ElicitResult(action="accept", content={"confirm": True, "to": "carol"})

    async with Client(params, mode=mode, elicitation_callback=edit) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("payer", {"request": "Pay bob 30."})
    assert not result.is_error, result.content
    (form,) = asked
    assert form.requested_schema["properties"]["to"] == {"type": "string", "title": "to", "default": "bob"}
    assert json.loads(marker.read_text()) == {"amount": 30, "to": "carol"}
