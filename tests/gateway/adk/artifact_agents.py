"""google-adk tools and an agent that save artifacts, written as an ADK user writes them (served by `serve`)."""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.tools import FunctionTool, ToolContext, load_artifacts
from google.genai import types
from scripted_model import ScriptedModel, call, say


async def write_report(text: str, tool_context: ToolContext) -> dict[str, Any]:
    """Save `text` as report.md."""
    version = await tool_context.save_artifact("report.md", types.Part(text=text), custom_metadata={"by": "adk"})
    described = await tool_context.get_artifact_version("report.md")
    assert described is not None
    return {"version": version, "metadata": described.custom_metadata, "names": await tool_context.list_artifacts()}


report_tool = FunctionTool(write_report)
TOOLS: list[Any] = [report_tool, load_artifacts]

artist = LlmAgent(
    name="artist",
    model=ScriptedModel(script=[call("write_report", {"text": "drawn by the agent"}), say("saved it")]),
    tools=[report_tool],
    description="Writes reports.",
)
