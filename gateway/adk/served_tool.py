"""google-adk tools and toolsets served by our server: `AdkTool` and `AdkToolset`.

An `AdkTool` is one of our `BaseTool`s around a google-adk `BaseTool`. Its MCP declaration is the ADK tool's own
(`_get_declaration()`, converted exactly); a call runs the ADK tool's own `run_async` with a real google-adk
`ToolContext` whose session state is the MCP session's, behind the same confirmation gate ADK's flow puts before
every tool; a generator tool's yields are sent as MCP progress and its last value is the result. Whatever the ADK
tool asks for (state writes, a confirmation, a transfer or an escalation) is copied onto our context, so the server
stores the state, asks the MCP client to confirm and sends the actions as `_meta` keys, exactly as for our own tools.
"""

from __future__ import annotations

import base64
import inspect
import logging
import weakref
from typing import Any, cast

import pydantic
from google.adk.sessions import BaseSessionService, InMemorySessionService
from google.adk.tools.authenticated_function_tool import AuthenticatedFunctionTool as AdkAuthenticatedFunctionTool
from google.adk.tools.base_authenticated_tool import BaseAuthenticatedTool as AdkBaseAuthenticatedTool
from google.adk.tools.base_tool import BaseTool as AdkBaseTool
from google.adk.tools.base_toolset import BaseToolset as AdkBaseToolset
from google.adk.tools.function_tool import FunctionTool as AdkFunctionTool
from google.adk.tools.load_artifacts_tool import LoadArtifactsTool as AdkLoadArtifactsTool
from google.adk.tools.mcp_tool import McpTool as AdkMcpTool
from google.adk.tools.tool_context import ToolContext as AdkToolContext
from google.genai import types as genai_types
from mcp import types

from adapters import FunctionDeclaration, Media, mcp_result_to_response
from gateway.adk._kind import MODEL_SIDE_HINT
from gateway.adk._user_choice import ask_user_choice, is_user_choice
from gateway.adk.context import adk_readonly_context, adk_tool_context, settle_in_gateway
from gateway.adk.declarations import declaration_from_adk
from gateway.client.mcp_tool import restore_actions
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext, ToolContext
from gateway.tools.confirmation import confirmation_gate
from gateway.tools.function_tool import unexpected_arguments_error
from gateway.tools.tool_updates import drain_async_generator, drain_generator

__all__ = ["AdkTool", "AdkToolset"]

logger = logging.getLogger(__name__)


async def _confirmation_gate(tool: AdkBaseTool, args: dict[str, Any], context: AdkToolContext) -> dict[str, str] | None:
    """ADK's flow-level gate (google-adk keeps it in a private module): the answer instead of running, or None.

    It covers every ADK tool that overrides `check_require_confirmation`, not only those whose `run_async` asks.
    """
    required: Any = tool.check_require_confirmation(args, context)
    if inspect.isawaitable(required):
        required = await required
    # ADK lets a call through unless its tool answers exactly True; the summarization is the flow's own business.
    refusal = confirmation_gate(tool.name, required is True, context, skip_summarization=False)
    return None if refusal is None else {"error": refusal}


def _media(part: genai_types.Part) -> Media | None:
    blob = part.inline_data
    if blob is None or blob.data is None:
        return None
    return Media(data=blob.data, mime_type=blob.mime_type or "application/octet-stream")


def typed_part(media: Media) -> dict[str, Any]:
    kind = "image" if media.mime_type.startswith("image/") else "audio" if media.mime_type.startswith("audio/") else ""
    data = base64.b64encode(media.data).decode()
    if kind:
        return {"type": kind, "data": data, "mime_type": media.mime_type}
    return {
        "type": "resource",
        "resource": {"uri": "resource://adk-tool/inline-data", "blob": data, "mime_type": media.mime_type},
    }


def media_list(value: object) -> list[Media] | None:
    """The media of a part or of a non-empty list of parts that all carry inline data; None otherwise."""
    items: list[Any] = (
        [value] if isinstance(value, genai_types.Part) else cast("list[Any]", value) if isinstance(value, list) else []
    )
    media = [_media(item) if isinstance(item, genai_types.Part) else None for item in items]
    if not media or any(m is None for m in media):
        return None
    return [m for m in media if m is not None]


def adk_response(value: Any) -> Any:
    """An ADK tool's return value with its genai media parts as our `Media` (ADK's flow moves them out the same way).

    A part or a list of parts becomes `Media`; parts among a dict's values move to the dict's typed `"parts"`.
    """
    if isinstance(value, genai_types.Part):
        return _media(value) or value.text or value.model_dump(mode="json", exclude_none=True)
    media = media_list(value)
    if media is not None:
        return media
    if not isinstance(value, dict):
        return value
    fields = cast("dict[str, Any]", value)
    kept: dict[str, Any] = {}
    parts: list[dict[str, Any]] = []
    for key, item in fields.items():
        found = media_list(item)
        if found is None:
            kept[key] = item
        else:
            parts.extend(typed_part(m) for m in found)
    if not parts:
        return fields
    # As in `adapters.results`: data with a "parts" key of its own is nested under "result".
    return {"result": kept, "parts": parts} if "parts" in kept else {**kept, "parts": parts}


async def _with_artifacts(response: dict[str, Any], adk_context: AdkToolContext) -> dict[str, Any]:
    """google-adk's `load_artifacts` answer with the artifacts themselves.

    In ADK the tool only names them and the flow puts their contents in the model's next request; served, there is
    no such request, so the result carries them: text under `artifacts`, media as typed parts.
    """
    names = [name for name in cast("list[Any]", response.get("artifact_names") or []) if isinstance(name, str)]
    texts: dict[str, str] = {}
    media: list[genai_types.Part] = []
    missing: list[str] = []
    for name in names:
        part = await adk_context.load_artifact(name)
        if part is None:
            missing.append(name)
        elif part.text is not None:
            texts[name] = part.text
        else:
            media.append(part)
    loaded: dict[str, Any] = {"artifact_names": names, "artifacts": texts}
    if media:
        loaded["files"] = media
    if missing:
        loaded["missing"] = missing
    return loaded


class AdkTool(BaseTool):
    """A google-adk `BaseTool` as one of ours (see the module docstring).

    Args:
        tool: the google-adk tool (`FunctionTool`, `LongRunningFunctionTool`, `AgentTool`, an `McpTool`, ...).
        sessions: the ADK session service its contexts name (a tool never writes to it; default: in memory).
    """

    def __init__(self, tool: AdkBaseTool, *, sessions: BaseSessionService | None = None) -> None:
        super().__init__(name=tool.name, description=tool.description, is_long_running=tool.is_long_running)
        self.adk_tool = tool
        self._sessions = sessions or InMemorySessionService()

    @property
    def needs_credentials(self) -> bool:
        """Whether the ADK tool is one of ADK's authenticated tools (it asks its user for a credential)."""
        return isinstance(self.adk_tool, AdkBaseAuthenticatedTool | AdkAuthenticatedFunctionTool)

    def _get_declaration(self) -> FunctionDeclaration | None:
        declaration = self.adk_tool._get_declaration()  # pyright: ignore[reportPrivateUsage] - ADK's declaration API
        return None if declaration is None else declaration_from_adk(declaration, name=self.adk_tool.name)

    def _unexpected_arguments(self, args: dict[str, Any]) -> dict[str, str] | None:
        """Arguments a google-adk `FunctionTool`'s function does not take, refused as our `FunctionTool` refuses them.

        google-adk drops them unseen, so a misspelt optional argument would silently take its default.
        """
        if not isinstance(self.adk_tool, AdkFunctionTool):
            return None
        try:
            parameters = inspect.signature(self.adk_tool.func).parameters
        except (TypeError, ValueError):
            return None
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            return None
        unexpected = {name: value for name, value in args.items() if name not in parameters}
        if not unexpected:
            return None
        declaration = self._get_declaration()
        schema = declaration.parameters_json_schema if declaration is not None else None
        known = cast("dict[str, Any]", (schema or {}).get("properties") or {})
        return unexpected_arguments_error(self.name, unexpected, known)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext | None) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Run the ADK tool with a real google-adk `ToolContext` over `tool_context`'s session and state."""
        context = ToolContext() if tool_context is None else tool_context
        if is_user_choice(self.adk_tool):
            return await ask_user_choice(args, context)  # the answer an ADK app would send later, asked now
        # Outside a live run google-adk runs a generator FunctionTool as a workflow node, which needs the event
        # queue only its Runner sets up (a private attribute); in a live run `run_async` hands the generator back
        # (ADK's live flow streams its yields to the model). Served, each yield is MCP progress, and the last
        # yield (a sync generator's return value) is the result: DESIGN's LongRunningFunctionTool mapping.
        streaming = isinstance(self.adk_tool, AdkFunctionTool)
        refusal = self._unexpected_arguments(args)
        if refusal is not None:
            return refusal
        adk_context = adk_tool_context(context, self._sessions, streaming=streaming)
        response = await _confirmation_gate(self.adk_tool, args, adk_context)
        if response is None:
            response = await self.adk_tool.run_async(args=args, tool_context=adk_context)
        if inspect.isasyncgen(response):
            response = await drain_async_generator(response, context)
        elif inspect.isgenerator(response):
            response = await drain_generator(response, context)
        if isinstance(self.adk_tool, AdkLoadArtifactsTool) and isinstance(response, dict):
            response = await _with_artifacts(cast("dict[str, Any]", response), adk_context)
        settle_in_gateway(adk_context, context)
        if isinstance(self.adk_tool, AdkMcpTool) and isinstance(response, dict):
            # google-adk's McpTool answers with the upstream's `CallToolResult` dumped as a dict; read as the result
            # it is, it follows the ADK convention (and the declared output schema) like every other tool.
            try:
                result = types.CallToolResult.model_validate(response)
            except pydantic.ValidationError:
                pass  # an `{"error": ...}` dict of its own
            else:
                # The upstream's action keys (ADK's McpTool leaves them in the dump) are its tool's actions.
                restore_actions(result, context)
                return mcp_result_to_response(result)
        if response is None:
            # ADK's flow answers the model `{"result": None}` (google-adk's `exit_loop` returns nothing): the same
            # response, not an empty result.
            return {"result": None}
        return adk_response(response)


class AdkToolset(BaseToolset):
    """A google-adk `BaseToolset` (google-adk's `McpToolset`, a `SkillToolset`, ...) as one of ours.

    Its tools are listed with a google-adk `ReadonlyContext` over the MCP session (so filters and header providers
    see that session's state), with the toolset's own filter and prefix, and served as `AdkTool`s.
    """

    def __init__(self, toolset: AdkBaseToolset) -> None:
        super().__init__()
        self.adk_toolset = toolset
        self.source_name = f"google-adk {type(toolset).__name__}"
        self._sessions = InMemorySessionService()
        # The same ADK tool object gets the same wrapper, so the server's catalog cache keeps working.
        self._wrapped: weakref.WeakKeyDictionary[AdkBaseTool, AdkTool] = weakref.WeakKeyDictionary()
        self._left_out: set[str] = set()

    def _wrap(self, tool: AdkBaseTool) -> AdkTool:
        try:
            wrapped = self._wrapped.get(tool)
        except TypeError:  # an unhashable tool class
            return AdkTool(tool, sessions=self._sessions)
        if wrapped is None or wrapped.name != tool.name:
            wrapped = self._wrapped[tool] = AdkTool(tool, sessions=self._sessions)
        return wrapped

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The ADK toolset's tools (filtered and prefixed by the ADK toolset itself)."""
        tools = await self.adk_toolset.get_tools_with_prefix(adk_readonly_context(readonly_context, self._sessions))
        return [self._wrap(tool) for tool in tools if self._servable(tool)]

    def _servable(self, tool: AdkBaseTool) -> bool:
        """Whether an MCP client could call `tool`: not a model-side tool such as `google_search` (said once)."""
        if tool._get_declaration() is not None:  # pyright: ignore[reportPrivateUsage] - ADK's declaration API
            return True
        if tool.name not in self._left_out:
            self._left_out.add(tool.name)
            logger.warning(
                "%s: %r (%s) is not served: %s.", self.source_name, tool.name, type(tool).__name__, MODEL_SIDE_HINT
            )
        return False

    async def close(self) -> None:
        """Close the ADK toolset (an ADK `McpToolset` ends its sessions and child processes)."""
        await self.adk_toolset.close()
