"""A google-adk agent whose tools come from MCP servers through the gateway (`to_adk`).

python examples/adk_agent.py     # needs the adk extra: pip install "adk-mcp-gateway[adk]"

The agent gets two of our `McpToolset`s: `mcp-server-time`, and `examples/adk_tools.py` served by
`adk-mcp-gateway serve --tools` (google-adk tools over MCP). `delete_notes` needs a confirmation: the server asks
through elicitation, `to_adk` turns that into ADK's own `adk_request_confirmation`, and this script approves it
the way an ADK app does, by answering with a `FunctionResponse`.

With GOOGLE_API_KEY set the agent uses Gemini (ADK_MODEL, default gemini-2.5-flash); without it, a scripted
stand-in model makes the same calls, so the example runs offline.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.models import BaseLlm
from google.adk.runners import InMemoryRunner
from google.genai import types
from stand_in_model import answer, model, tool_call

from gateway import McpToolset, StdioConnectionParams
from gateway.adk import to_adk

HERE = Path(__file__).resolve().parent
APP, USER = "adk-example", "me"


def _model() -> BaseLlm | str:
    return model(
        tool_call("time_get_current_time", timezone="Europe/Paris"),
        tool_call("notes_take_note", topic="groceries", text="milk, eggs"),
        tool_call("notes_delete_notes", topic="groceries"),
        answer("Here is the time in Paris; the grocery note was written, then deleted."),
    )


def _toolsets() -> list[McpToolset]:
    time_server = Path(sys.executable).with_name("mcp-server-time")
    time = McpToolset(
        connection_params=StdioConnectionParams(
            command=str(time_server) if time_server.exists() else "mcp-server-time", args=["--local-timezone", "UTC"]
        ),
        tool_name_prefix="time",
    )
    notes = McpToolset(
        connection_params=StdioConnectionParams(
            command=sys.executable,
            args=["-m", "gateway.cli", "serve", "--tools", str(HERE / "adk_tools.py"), "--state", ":memory:"],
            cwd=str(HERE.parent),
        ),
        tool_name_prefix="notes",
    )
    return [time, notes]


def _show(event: Event) -> types.FunctionCall | None:
    """Print what happened; return the confirmation ADK asks for, if any."""
    asked = None
    for call in event.get_function_calls():
        print(f"call      {call.name}({json.dumps(call.args)})")
        if call.name == "adk_request_confirmation":
            asked = call
    for response in event.get_function_responses():
        print(f"response  {response.name} -> {json.dumps(response.response, default=str)}")
    if event.is_final_response() and event.content and event.content.parts and event.content.parts[0].text:
        print(f"answer    {event.content.parts[0].text}")
    return asked


async def main() -> None:
    agent = LlmAgent(
        name="assistant",
        model=_model(),
        instruction="Answer with the tools: tell the time, take notes, delete notes when asked.",
        tools=[to_adk(toolset) for toolset in _toolsets()],
    )
    runner = InMemoryRunner(agent=agent, app_name=APP)
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    message = types.Content(
        role="user",
        parts=[types.Part(text="What time is it in Paris? Note 'milk, eggs' under groceries, then delete that note.")],
    )
    try:
        while message is not None:
            pending: types.FunctionCall | None = None
            async for event in runner.run_async(user_id=USER, session_id=session.id, new_message=message):
                pending = _show(event) or pending
            message = None
            if pending is not None:
                hint = (pending.args or {}).get("toolConfirmation", {}).get("hint", "")
                print(f"approving {hint!r}")
                answer = types.FunctionResponse(id=pending.id, name=pending.name, response={"confirmed": True})
                message = types.Content(role="user", parts=[types.Part(function_response=answer)])
    finally:
        await runner.close()


if __name__ == "__main__":
    anyio.run(main)
