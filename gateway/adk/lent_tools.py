"""Our tools and toolsets lent to google-adk agents: `LentTool` and `LentToolset` (what `to_adk` returns).

A `LentTool` is a google-adk `BaseTool` around one of ours. ADK sees a Gemini-safe declaration; a call runs our tool
with our `ToolContext` over the ADK session's state and copies back what it asked for (state writes, confirmation
requests), so ADK's flow acts on them. A question the tool's MCP server asks during the call (a confirmation
through elicitation) becomes ADK's `tool_context.request_confirmation`: the call ends asking for it, ADK emits its
`adk_request_confirmation` event, and when the user answers ADK runs the call again, which answers the server's
question with the user's confirmation. Results are ADK function responses (`mcp_result_to_response`), with image
and audio parts as genai `Part`s so that ADK's flow hands them to the model as media.

A tool of an `McpToolset(enable_tasks=True)` is long-running, as ADK's `LongRunningFunctionTool`: a call its upstream
answers with a task (SEP-2663) responds with the task's pending status at once, and `LentToolset.finished` gives the
final response for the app to send back when the task has ended.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import weakref
from typing import Any, Unpack, cast

from google.adk.agents.readonly_context import ReadonlyContext as AdkReadonlyContext
from google.adk.auth.auth_credential import AuthCredential as AdkAuthCredential
from google.adk.auth.auth_tool import AuthConfig as AdkAuthConfig
from google.adk.tools.base_tool import BaseTool as AdkBaseTool
from google.adk.tools.base_toolset import BaseToolset as AdkBaseToolset
from google.adk.tools.tool_context import ToolContext as AdkToolContext
from google.genai import types as genai_types
from mcp import MCPError, types

from adapters import Media, mcp_result_to_response
from gateway.adk._forwarding import ForwardToAdk
from gateway.adk._progress import AdkProgress
from gateway.adk.auth import auth_config_to_adk
from gateway.adk.context import gateway_readonly_context, gateway_tool_context, settle_in_adk
from gateway.adk.declarations import declaration_to_adk
from gateway.client import McpToolset
from gateway.client.credentials.adk_scheme import UserSignIn
from gateway.client.mcp_tool import McpTool
from gateway.errors import ServiceNotConfiguredError, UpstreamUnavailableError
from gateway.tools import AuthConfig, BaseTool, BaseToolset, ToolContext
from gateway.tools.confirmation import CONFIRM_FIELD, CONFIRMATION_REQUIRED, is_confirmation_form
from gateway.tools.context import SamplingOptions

__all__ = ["LentTool", "LentToolset"]

_logger = logging.getLogger(__name__)


def _form_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    properties = cast("dict[str, Any]", schema.get("properties") or {})
    return {
        name: cast("dict[str, Any]", field)["default"]
        for name, field in properties.items()
        if isinstance(field, dict) and "default" in field
    }


def _form_answer(schema: dict[str, Any], payload: Any) -> dict[str, Any]:
    """The form content a confirmation answers with.

    A yes/no form (one boolean field) is answered by the confirmation itself; any other form takes its values from
    the confirmation's payload (which starts as the form's defaults).
    """
    properties = cast("dict[str, Any]", schema.get("properties") or {})
    content = dict(cast("dict[str, Any]", payload)) if isinstance(payload, dict) else _form_defaults(schema)
    if is_confirmation_form(schema):
        # A server's confirmation form: its payload is what ADK's user saw and perhaps edited; the answer is yes.
        return {**content, CONFIRM_FIELD: True}
    if len(properties) == 1:
        ((name, field),) = properties.items()
        if isinstance(field, dict) and cast("dict[str, Any]", field).get("type") == "boolean":
            content[name] = True
    return content


class _AdkUser:
    """The `ClientFeatures` of a call an ADK agent makes: a server's questions become ADK confirmations."""

    def __init__(self) -> None:
        self.context: ToolContext | None = None
        self.asked = False

    def _context(self) -> ToolContext:
        assert self.context is not None, "the context is set before the tool runs"
        return self.context

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        # ADK has no progress channel to its user; the toolset's own progress_callback still hears it.
        del progress, total, message

    async def log(self, level: types.LoggingLevel, data: Any, logger: str | None = None) -> None:
        _logger.info("%s (%s): %s", logger or "tool", level, data)

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> types.ElicitResult:
        context = self._context()
        confirmation = context.tool_confirmation
        if confirmation is None:
            # Not yet asked: ask ADK's user, and withdraw from the server's question (the tool does not run).
            self.asked = True
            asked = _form_defaults(requested_schema)
            if is_confirmation_form(requested_schema):
                asked.pop(CONFIRM_FIELD, None)  # ADK's own confirmation says yes or no
            context.request_confirmation(hint=message, payload=asked or None)
            return types.ElicitResult(action="cancel")
        if not confirmation.confirmed:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=_form_answer(requested_schema, confirmation.payload))

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> types.ElicitResult:
        del elicitation_id
        context = self._context()
        confirmation = context.tool_confirmation
        if confirmation is None:
            self.asked = True
            context.request_confirmation(hint=f"{message}\n\n{url}", payload={"url": url})
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(action="accept" if confirmation.confirmed else "decline")

    async def sample(
        self, messages: list[types.SamplingMessage], **options: Unpack[SamplingOptions]
    ) -> types.CreateMessageResult:
        del messages, options
        raise ServiceNotConfiguredError(
            "Sampling is not available to a tool an ADK agent calls: google-adk lends its model to no tool. Give the "
            "McpToolset a sampling_callback and do not hand it to to_adk(), or serve the tool elsewhere."
        )


def _adk_part(part: Any) -> Any:
    """A typed image or audio part as a genai `Part` (which ADK's flow passes to the model as media)."""
    if isinstance(part, Media):
        return genai_types.Part.from_bytes(data=part.data, mime_type=part.mime_type)
    if isinstance(part, dict):
        fields = cast("dict[str, Any]", part)
        if fields.get("type") in ("image", "audio") and isinstance(fields.get("data"), str):
            data = base64.b64decode(fields["data"])
            return genai_types.Part.from_bytes(data=data, mime_type=str(fields.get("mime_type") or ""))
    return cast("Any", part)


def adk_media(response: Any) -> Any:
    """Our function response with its media as genai `Part`s."""
    if isinstance(response, Media):
        return _adk_part(response)
    if not isinstance(response, dict):
        return response
    fields = dict(cast("dict[str, Any]", response))
    if isinstance(fields.get("result"), Media | list):
        result = fields["result"]
        fields["result"] = (
            [_adk_part(item) for item in cast("list[Any]", result)] if isinstance(result, list) else _adk_part(result)
        )
    if isinstance(fields.get("parts"), list):
        fields["parts"] = [_adk_part(part) for part in cast("list[Any]", fields["parts"])]
    return fields


def sign_in_config(toolset: object) -> AuthConfig | None:
    """The auth config of an `McpToolset` whose every user signs in (OAuth2 authorization code), else None.

    Only such a toolset needs ADK's help: every other credential (API key, bearer, client credentials) our toolset
    applies itself, without asking the user.
    """
    if isinstance(toolset, McpToolset) and isinstance(toolset.credential, UserSignIn):
        return toolset.get_auth_config()
    return None


def _credential_keys(config: AuthConfig | None) -> tuple[str, ...]:
    return (config.credential_key,) if config is not None and config.credential_key else ()


async def _take_auth_response(tool_context: AdkToolContext, config: AdkAuthConfig) -> None:
    """Exchange the user's answer to `adk_request_credential` for this call, if there is one, and keep it.

    ADK resumes a call once its user answered the call's credential request; the answer (the redirect the sign-in
    landed on) is in the session state. ADK's `get_auth_response` exchanges it for a token (written back to the
    state, where the call's context finds it), and the Runner's credential service, if any, keeps it for later
    turns, replacing the credential the upstream refused.
    """
    answer = tool_context.state.get(f"temp:{config.credential_key}") if config.credential_key else None
    if not isinstance(answer, dict | AdkAuthCredential):
        return
    exchanged = tool_context.get_auth_response(config)
    if exchanged is None or exchanged.oauth2 is None or not exchanged.oauth2.access_token:
        return
    kept = config.model_copy(deep=True)
    kept.exchanged_auth_credential = exchanged
    # Without a credential service (ValueError), the token lasts for this invocation (and in the toolset, for the user).
    with contextlib.suppress(ValueError):
        await tool_context.save_credential(kept)


class LentTool(AdkBaseTool):
    """One of our tools as a google-adk `BaseTool` (see the module docstring)."""

    def __init__(self, tool: BaseTool) -> None:
        toolset = tool.toolset if isinstance(tool, McpTool) else None
        # A tool its upstream may answer with a task is long-running: its pending status first, its outcome later.
        tasked = isinstance(toolset, McpToolset) and toolset.runs_as_task(cast("McpTool", tool).raw_mcp_tool)
        super().__init__(name=tool.name, description=tool.description, is_long_running=tool.is_long_running or tasked)
        self.gateway_tool = tool
        self._tasked = tasked
        self._forward = ForwardToAdk(toolset)

    def _get_declaration(self) -> genai_types.FunctionDeclaration | None:
        declaration = self.gateway_tool.get_declaration()
        return None if declaration is None else declaration_to_adk(declaration)

    async def run_async(self, *, args: dict[str, Any], tool_context: AdkToolContext) -> Any:
        """Run our tool over the ADK session's state; a server's question becomes ADK's confirmation request."""
        await self._forward.ready()
        user = _AdkUser()
        toolset = self.gateway_tool.toolset if isinstance(self.gateway_tool, McpTool) else None
        config = sign_in_config(toolset)
        if config is not None:
            await _take_auth_response(tool_context, auth_config_to_adk(config))
        context = user.context = gateway_tool_context(tool_context, user, _credential_keys(config))
        context.progress_sink = AdkProgress(self.name, tool_context)
        tool = self.gateway_tool
        if self._tasked and isinstance(tool, McpTool):
            response = await tool.start_async(args=args, tool_context=context)
        else:
            response = await tool.run_async(args=args, tool_context=context)
        if user.asked:
            # The server's answer to our withdrawal is not the tool's: the call awaits the ADK user's confirmation.
            response = {"error": CONFIRMATION_REQUIRED}
            context.actions.skip_summarization = True
        settle_in_adk(context, tool_context)
        return adk_media(response)


class LentToolset(AdkBaseToolset):
    """One of our toolsets as a google-adk `BaseToolset`; an `McpToolset` sends its server's questions to ADK.

    An `McpToolset` without an `elicitation_callback` of its own is set to `forward_client_requests`, so that its
    server's elicitation reaches the call's context and becomes an ADK confirmation (sessions it opened before,
    used on its own, are ended first: `gateway.adk._forwarding`); one with an `elicitation_callback` keeps its
    callbacks.
    """

    def __init__(self, toolset: BaseToolset) -> None:
        super().__init__()
        self._forward = ForwardToAdk(toolset)
        self.gateway_toolset = toolset
        self._lent: weakref.WeakKeyDictionary[BaseTool, LentTool] = weakref.WeakKeyDictionary()
        self._adk_auth_config: AdkAuthConfig | None = None

    def _lend(self, tool: BaseTool) -> LentTool:
        try:
            lent = self._lent.get(tool)
        except TypeError:  # an unhashable tool class
            return LentTool(tool)
        if lent is None or lent.name != tool.name:
            lent = self._lent[tool] = LentTool(tool)
        return lent

    def get_auth_config(self) -> AdkAuthConfig | None:
        """For an `McpToolset` whose users sign in (OAuth2 authorization code): its auth config, as ADK's.

        ADK's flow then resolves the user's credential before listing the tools, as for its own `McpToolset`: a
        user without one gets ADK's `adk_request_credential` (the authorization URL in its auth config), and the
        client app's answer is exchanged for the token the listing and the calls use.
        """
        config = sign_in_config(self.gateway_toolset)
        if config is None:
            return None
        if self._adk_auth_config is None:
            self._adk_auth_config = auth_config_to_adk(config)
        return self._adk_auth_config

    async def get_tools(self, readonly_context: AdkReadonlyContext | None = None) -> list[AdkBaseTool]:
        """Our toolset's tools (its own filter and prefix applied) for the ADK session of `readonly_context`."""
        await self._forward.ready()
        keys = _credential_keys(sign_in_config(self.gateway_toolset))
        tools = await self.gateway_toolset.get_tools_with_prefix(gateway_readonly_context(readonly_context, keys))
        return [self._lend(tool) for tool in tools]

    async def finished(
        self, pending: genai_types.FunctionResponse, readonly_context: AdkReadonlyContext | None = None
    ) -> genai_types.FunctionResponse:
        """The final response of a call whose pending status was `pending` (an upstream's task, `task_id` in it).

        Waits until the task ended; send the answer to the Runner as the user's message (ADK's way to resume a
        long-running call), e.g. `Content(role="user", parts=[Part(function_response=answer)])`.
        """
        toolset = self.gateway_toolset
        task_id = (pending.response or {}).get("task_id")
        if not isinstance(toolset, McpToolset) or not isinstance(task_id, str):
            raise ValueError(f"{pending.name!r} did not start a task of this toolset's upstream.")
        try:
            result = await toolset.finish_task(task_id, gateway_readonly_context(readonly_context, ()))
            response: Any = adk_media(mcp_result_to_response(result))
        except MCPError as exc:
            response = {"error": f"MCP tool execution failed: {exc}"}
        except UpstreamUnavailableError as exc:
            response = {"error": str(exc)}
        return genai_types.FunctionResponse(id=pending.id, name=pending.name, response=response)

    async def close(self) -> None:
        """Close our toolset (an `McpToolset` ends its sessions and child processes)."""
        await self.gateway_toolset.close()
