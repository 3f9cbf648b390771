"""Artifacts across the ADK bridge: google-adk tools and agents served by a real `serve` process save into the MCP
session (its resources), served `load_artifacts` returns the files, and our tool lent to a real google-adk Runner
saves into the Runner's own artifact service."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from google.adk.agents import LlmAgent
from google.adk.artifacts import InMemoryArtifactService as AdkInMemoryArtifactService
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types as genai_types
from mcp import Client, StdioServerParameters, types
from scripted_model import ScriptedModel, call, say

from adapters.meta_keys import SESSION_META_KEY
from gateway.adk import to_adk
from gateway.tools import FunctionTool, ToolContext
from tests.support.deadlines import DEADLINE
from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
MODULE = HERE / "artifact_agents.py"
Mode = Literal["legacy", "auto"]
MODES: tuple[Mode, ...] = ("legacy", "auto")


@asynccontextmanager
async def serving(tmp_path: Path, mode: Mode, *source: str) -> AsyncIterator[tuple[Client, dict[str, Any]]]:
    """A real `serve` process over stdio of `source`, a client, and the `_meta` naming the client's session."""
    args = ["-m", "gateway.cli", "serve", *source, "--state", str(tmp_path / "state.db")]
    params = StdioServerParameters(
        command=sys.executable, args=args, cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{ROOT}:{HERE}"}
    )
    async with Client(params, mode=mode) as client:
        yield client, {SESSION_META_KEY: uuid.uuid4().hex}


async def read_text(client: Client, uri: str, meta: dict[str, Any]) -> str:
    with anyio.fail_after(DEADLINE):
        result = await client.read_resource(uri, meta=meta, cache_mode="bypass")  # pyright: ignore[reportArgumentType]
    (contents,) = result.contents
    assert isinstance(contents, types.TextResourceContents)
    return contents.text


def link_uris(result: types.CallToolResult) -> list[str]:
    return [block.uri for block in result.content if isinstance(block, types.ResourceLink)]


@pytest.mark.parametrize("mode", MODES)
async def test_a_served_google_adk_tool_saves_an_artifact_the_mcp_client_reads_and_load_artifacts_returns(
    mode: Mode, tmp_path: Path
) -> None:
    async with serving(tmp_path, mode, "--tools", f"{MODULE}:TOOLS") as (client, meta):
        with anyio.fail_after(DEADLINE):
            saved = await client.call_tool("write_report", {"text": "the q3 numbers"}, meta=meta)  # pyright: ignore[reportArgumentType]
            loaded = await client.call_tool("load_artifacts", {"artifact_names": ["report.md"]}, meta=meta)  # pyright: ignore[reportArgumentType]
        text = await read_text(client, "artifact://report.md", meta)

    assert not saved.is_error, saved.content
    assert saved.structured_content == {"version": 0, "metadata": {"by": "adk"}, "names": ["report.md"]}
    assert link_uris(saved) == ["artifact://report.md?version=0"]
    assert text == "the q3 numbers"
    assert not loaded.is_error, loaded.content
    assert loaded.structured_content is not None
    assert loaded.structured_content["artifacts"] == {"report.md": "the q3 numbers"}


@pytest.mark.parametrize("mode", MODES)
async def test_a_served_google_adk_agent_saves_its_artifacts_into_the_mcp_session(mode: Mode, tmp_path: Path) -> None:
    async with serving(tmp_path, mode, "--agent", f"{MODULE}:artist") as (client, meta):
        with anyio.fail_after(DEADLINE):
            answered = await client.call_tool("artist", {"request": "draw"}, meta=meta)  # pyright: ignore[reportArgumentType]
        text = await read_text(client, "artifact://report.md", meta)

    assert not answered.is_error, answered.content
    assert "artifact://report.md?version=0" in link_uris(answered)
    assert text == "drawn by the agent"


async def test_our_tool_lent_to_a_runner_saves_into_the_runners_artifact_service() -> None:
    async def keep_notes(text: str, tool_context: ToolContext) -> dict[str, Any]:
        """Keep notes."""
        version = await tool_context.save_artifact("notes.txt", text, custom_metadata={"source": "ours"})
        described = await tool_context.get_artifact_version("notes.txt")
        assert described is not None
        return {
            "version": version,
            "metadata": described.custom_metadata,
            "back": await tool_context.load_artifact("notes.txt"),
        }

    artifacts = AdkInMemoryArtifactService()
    sessions = InMemorySessionService()
    model = ScriptedModel(script=[call("keep_notes", {"text": "buy milk"}), say("noted")])
    agent = LlmAgent(name="a", model=model, tools=[to_adk(FunctionTool(keep_notes))])
    runner = Runner(app_name="app", agent=agent, session_service=sessions, artifact_service=artifacts)
    session = await sessions.create_session(app_name="app", user_id="user")
    message = genai_types.Content(role="user", parts=[genai_types.Part(text="note it")])
    events = []
    with anyio.fail_after(DEADLINE):
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message):
            events.append(event)
    await runner.close()

    stored = await artifacts.load_artifact(app_name="app", user_id="user", session_id=session.id, filename="notes.txt")
    described = await artifacts.get_artifact_version(
        app_name="app", user_id="user", session_id=session.id, filename="notes.txt"
    )
    responses = [
        part.function_response.response
        for event in events
        for part in (event.content.parts or [] if event.content else [])
        if part.function_response is not None
    ]
    assert stored is not None
    assert stored.text == "buy milk"
    assert described is not None
    assert described.custom_metadata == {"source": "ours"}
    assert responses == [{"version": 0, "metadata": {"source": "ours"}, "back": "buy milk"}]
    assert any(event.actions.artifact_delta == {"notes.txt": 0} for event in events)
    assert events[-1].content is not None
    assert events[-1].content.parts is not None
    assert events[-1].content.parts[0].text == "noted"
