"""`serve --agent`: a google-adk agent as one MCP tool, run by an ADK Runner over the MCP session."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from adk_agents import note_script, notes_model, root_agent, shred_model, shredder, sum_agent
from google.adk.models import LlmRequest
from mcp import Client, StdioServerParameters, types
from scripted_model import call, say

from gateway.adk import from_adk
from gateway.server import SESSION_META_KEY, ToolServer
from gateway.state import SqliteStateStore

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DEADLINE = 20.0
SESSION = "notes-session-0123456789abcdef"


class Progress:
    def __init__(self) -> None:
        self.messages: list[str | None] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        del progress, total
        self.messages.append(message)


async def _ask(client: Client, name: str, request: str, progress: Progress | None = None) -> types.CallToolResult:
    with anyio.fail_after(DEADLINE):
        return await client.call_tool(
            name, {"request": request}, meta={SESSION_META_KEY: SESSION}, progress_callback=progress
        )


async def test_an_agent_is_one_tool_taking_a_request_and_its_events_arrive_as_progress() -> None:
    notes_model.script[:] = note_script("the sky is blue")
    progress = Progress()
    async with ToolServer([from_adk(root_agent)]) as server, Client(server.server) as client:
        (tool,) = (await client.list_tools()).tools
        result = await _ask(client, "notetaker", "Remember that the sky is blue.", progress)
    assert tool.name == "notetaker"
    assert tool.description == "Takes notes."
    assert tool.input_schema["required"] == ["request"]
    assert not result.is_error, result.content
    assert result.content[0].text == "Noted: the sky is blue."  # pyright: ignore[reportAttributeAccessIssue]
    assert progress.messages == ['notetaker calls remember({"fact": "the sky is blue"})', "remember answered"]


async def test_the_adk_session_is_the_mcp_session_and_its_state_lives_in_the_store_across_a_restart(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state.db"
    notes_model.requests.clear()
    async with (
        ToolServer([from_adk(root_agent)], state_store=SqliteStateStore(state)) as server,
        Client(server.server) as client,
    ):
        for fact in ("one", "two"):
            notes_model.script[:] = note_script(fact)
            await _ask(client, "notetaker", f"Remember {fact}.")
    assert _remembered() == {"facts": ["one", "two"], "total": 2}
    # The second request continued the first one's conversation: the model saw the earlier turns.
    assert "Remember one." in _texts(notes_model.requests[-2])

    notes_model.requests.clear()
    async with (
        ToolServer([from_adk(root_agent)], state_store=SqliteStateStore(state)) as server,
        Client(server.server) as client,
    ):
        notes_model.script[:] = note_script("three")
        result = await _ask(client, "notetaker", "Remember three.")
    assert not result.is_error, result.content
    # After the restart the state came from the store (the conversation itself lived in memory only).
    assert _remembered() == {"facts": ["one", "two", "three"], "total": 3}
    assert "Remember one." not in _texts(notes_model.requests[-1])


async def test_an_agent_given_adks_sqlite_session_service_keeps_its_conversation_across_a_restart(
    tmp_path: Path,
) -> None:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    from gateway.adk.served_agent import AgentToolset

    state, conversations = tmp_path / "state.db", str(tmp_path / "conversations.db")
    for fact in ("one", "two"):
        notes_model.requests.clear()
        notes_model.script[:] = note_script(fact)
        agent = AgentToolset(root_agent, session_service=SqliteSessionService(conversations))
        async with (
            ToolServer([agent], state_store=SqliteStateStore(state)) as server,
            Client(server.server) as client,
        ):
            result = await _ask(client, "notetaker", f"Remember {fact}.")
        assert not result.is_error, result.content
    # The restarted server's agent continued the conversation: its model saw the turn before the restart.
    assert "Remember one." in _texts(notes_model.requests[-1])
    assert _remembered() == {"facts": ["one", "two"], "total": 2}


def _texts(request: LlmRequest) -> list[str]:
    return [part.text for content in request.contents for part in content.parts or [] if part.text]


def _remembered() -> Any:
    """What `remember` answered in the model's latest request."""
    (part,) = notes_model.requests[-1].contents[-1].parts or []
    assert part.function_response is not None
    return part.function_response.response


async def test_an_agent_with_an_output_schema_answers_with_structured_output() -> None:
    async with ToolServer([from_adk(sum_agent)]) as server, Client(server.server) as client:
        (tool,) = (await client.list_tools()).tools
        result = await _ask(client, "adder", "2 + 3?")
    assert tool.output_schema is not None
    assert set(tool.output_schema["properties"]) == {"total", "explanation"}
    assert result.structured_content == {"total": 5, "explanation": "2 + 3"}


async def test_serve_agent_publishes_the_agent_over_stdio() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", "--agent", f"{HERE / 'adk_agents.py'}:root_agent", "--state", ":memory:"],
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT}:{HERE}"},
    )
    async with Client(params) as client:
        (tool,) = (await client.list_tools()).tools
        result = await _ask(client, "notetaker", "Remember that the sky is blue.")
    assert tool.name == "notetaker"
    assert result.content[0].text == "Noted: the sky is blue."  # pyright: ignore[reportAttributeAccessIssue]


class Human:
    """Answers each elicitation with the given action, keeping the questions."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        self.asked.append(params.message)
        accepted = self.action == "accept"
        return types.ElicitResult(action=self.action, content={"confirm": True} if accepted else None)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("action", ["accept", "decline"])
async def test_a_confirmation_an_agents_tool_asks_for_is_asked_of_the_mcp_client(
    action: str, mode: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "shredded.txt"
    shred_model.script[:] = [call("shred", {"document": "plans", "marker": str(marker)}), say("Finished.")]
    human = Human(action)
    async with (
        ToolServer([from_adk(shredder)]) as server,
        Client(server.server, mode=mode, elicitation_callback=human) as client,
    ):
        result = await _ask(client, "shredder", "Shred the plans.")
    assert not result.is_error, result.content
    assert result.content[0].text == "Finished."  # pyright: ignore[reportAttributeAccessIssue]
    assert human.asked == [f"Allow the tool call shred(document='plans', marker={str(marker)!r})?"]
    # The model saw the tool's answer: run after an approval, ADK's rejection after a refusal.
    response = shred_model.requests[-1].contents[-1].parts[0].function_response  # pyright: ignore[reportOptionalSubscript]
    assert response is not None
    if action == "accept":
        assert response.response == {"shredded": "plans"}
        assert marker.read_text() == "plans"
    else:
        assert response.response == {"error": "This tool call is rejected."}
        assert not marker.exists()


async def test_an_accepting_answer_sent_before_a_served_agent_asked_does_not_confirm_its_tool(tmp_path: Path) -> None:
    marker = tmp_path / "shredded.txt"
    shred_model.script[:] = [call("shred", {"document": "plans", "marker": str(marker)}), say("Finished.")]
    human = Human("decline")
    unasked = types.ElicitResult(action="accept", content={"confirm": True})
    async with (
        ToolServer([from_adk(shredder)]) as server,
        Client(server.server, mode="auto", elicitation_callback=human) as client,
    ):
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool(
                "shredder",
                {"request": "Shred the plans."},
                meta={SESSION_META_KEY: SESSION},
                input_responses={"elicit-0": unasked},
            )
    assert not result.is_error, result.content
    assert len(human.asked) == 1
    assert not marker.exists()
