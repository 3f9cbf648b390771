"""`LoadMcpResourceTool`: the `load_mcp_resource` tool `McpToolset(use_mcp_resources=True)` adds, as in ADK.

Same name, description and parameter as google-adk's (`resource_names`: a list of resource names; URIs work too).
ADK's own tool only echoes the names and pastes the contents into the next model request; ours returns them, so it
works wherever the tool runs (an agent, our server, the gateway): each resource as `"Resource <name> is:"` followed
by its text, or by its blob as a media part (image and audio become genai `Part`s through `to_adk`). The description
lists the resources the server had when the tools were listed.
"""

from __future__ import annotations

import base64
import binascii
import logging
from typing import Any, Protocol, cast

from mcp import MCPError, types

from adapters import mcp_result_to_response
from gateway.errors import UpstreamUnavailableError
from gateway.tools import ReadonlyContext, ToolContext
from gateway.tools.base_tool import FixedSchemaTool

__all__ = ["LOAD_MCP_RESOURCE", "LoadMcpResourceTool", "ResourceSource"]

LOAD_MCP_RESOURCE = "load_mcp_resource"
_DESCRIPTION = """Loads resources from the MCP server.

NOTE: Call when you need access to resources."""
_PARAMETERS = {"type": "object", "properties": {"resource_names": {"type": "array", "items": {"type": "string"}}}}
_MAX_LISTED = 50

logger = logging.getLogger(__name__)


class ResourceSource(Protocol):
    """What lists and reads an upstream's resources (an `McpToolset`)."""

    async def list_resources(self, readonly_context: ReadonlyContext | None = None) -> list[types.Resource]: ...

    async def read_resource(
        self, uri: str, readonly_context: ReadonlyContext | None = None
    ) -> types.ReadResourceResult: ...


def _listing(resources: list[types.Resource]) -> str:
    if not resources:
        return ""
    lines = [f"- {r.name} ({r.uri}{', ' + r.mime_type if r.mime_type else ''})" for r in resources[:_MAX_LISTED]]
    more = f"\n- ... and {len(resources) - _MAX_LISTED} more" if len(resources) > _MAX_LISTED else ""
    return "\n\nAvailable resources (resource_names):\n" + "\n".join(lines) + more


def _blocks(name: str, content: types.TextResourceContents | types.BlobResourceContents) -> list[types.ContentBlock]:
    heading = types.TextContent(text=f"Resource {name} is:")
    if isinstance(content, types.TextResourceContents):
        return [heading, types.TextContent(text=content.text)]
    mime_type = content.mime_type or "application/octet-stream"
    try:
        base64.b64decode(content.blob, validate=True)
    except (binascii.Error, ValueError):
        return [heading, types.TextContent(text=f"[Binary content for {name} could not be decoded]")]
    if mime_type.startswith("image/"):
        return [heading, types.ImageContent(data=content.blob, mime_type=mime_type)]
    if mime_type.startswith("audio/"):
        return [heading, types.AudioContent(data=content.blob, mime_type=mime_type)]
    return [heading, types.EmbeddedResource(resource=content)]


class LoadMcpResourceTool(FixedSchemaTool):
    """Loads named resources of one upstream (see the module docstring)."""

    def __init__(self, source: ResourceSource, resources: list[types.Resource] | None = None) -> None:
        super().__init__(
            name=LOAD_MCP_RESOURCE,
            description=_DESCRIPTION + _listing(resources or []),
            parameters=_PARAMETERS,
            annotations={"readOnlyHint": True},
        )
        self._source = source

    @classmethod
    async def listing(cls, source: ResourceSource, readonly_context: ReadonlyContext | None) -> LoadMcpResourceTool:
        """The tool, its description listing the resources the source has now (none if it cannot list them)."""
        try:
            resources = await source.list_resources(readonly_context)
        except (MCPError, UpstreamUnavailableError) as exc:
            logger.debug("Listing the resources for load_mcp_resource failed: %s", exc)
            resources = []
        return cls(source, resources)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any]:
        """Read each named resource; an unknown name is an error listing the names there are."""
        requested: Any = args.get("resource_names") or []
        if not isinstance(requested, list) or not all(isinstance(n, str) for n in cast("list[Any]", requested)):
            return {"error": "resource_names must be a list of resource names (strings)."}
        names = cast("list[str]", requested)
        resources = await self._source.list_resources(tool_context)
        by_name = {r.name: str(r.uri) for r in resources} | {str(r.uri): str(r.uri) for r in resources}
        unknown = [name for name in names if name not in by_name]
        if unknown:
            known = ", ".join(sorted(r.name for r in resources)) or "none"
            return {"error": f"No resource named {', '.join(map(repr, unknown))}. Resources: {known}."}
        blocks: list[types.ContentBlock] = []
        for name in names:
            result = await self._source.read_resource(by_name[name], tool_context)
            for content in result.contents:
                blocks.extend(_blocks(name, content))
        return mcp_result_to_response(
            types.CallToolResult(content=blocks, structured_content={"resource_names": names})
        )
