"""Tools that save and read artifacts through our `ToolContext`, served by `adk-mcp-gateway serve --tools`."""

from __future__ import annotations

from typing import Any

from adapters import Media
from gateway.tools import ToolContext

PNG = b"\x89PNG\r\n\x1a\n-chart-"


async def save_report(text: str, tool_context: ToolContext) -> dict[str, Any]:
    """Save `text` as report.md, with its word count as custom metadata."""
    version = await tool_context.save_artifact("report.md", text, custom_metadata={"words": len(text.split())})
    return {"version": version}


async def save_chart(tool_context: ToolContext) -> dict[str, Any]:
    """Save a PNG chart."""
    return {"version": await tool_context.save_artifact("chart.png", Media(data=PNG, mime_type="image/png"))}


async def save_profile(lang: str, tool_context: ToolContext) -> dict[str, Any]:
    """Save the user's profile (a `user:` artifact every session of the user sees)."""
    return {"version": await tool_context.save_artifact("user:profile.json", {"lang": lang})}


async def save_blob(size: int, tool_context: ToolContext) -> dict[str, Any]:
    """Save `size` bytes."""
    return {"version": await tool_context.save_artifact("blob.bin", b"x" * size)}


async def describe_artifact(filename: str, tool_context: ToolContext) -> dict[str, Any]:
    """What the session knows of `filename`: its versions' metadata and its latest value."""
    described = await tool_context.get_artifact_version(filename)
    value = await tool_context.load_artifact(filename)
    if described is None:
        return {"found": False, "names": await tool_context.list_artifacts()}
    return {
        "found": True,
        "version": described.version,
        "custom_metadata": described.custom_metadata,
        "value": value if isinstance(value, str | dict) else repr(value),
        "names": await tool_context.list_artifacts(),
    }


TOOLS: list[Any] = [save_report, save_chart, save_profile, save_blob, describe_artifact]
