"""`McpTool`: one tool of an upstream MCP server, as an ADK-style `BaseTool`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mcp import MCPError, types

from adapters import FunctionDeclaration, mcp_result_to_response, mcp_tool_to_declaration
from adapters.event_actions import actions_from_meta
from adapters.meta_keys import LONG_RUNNING_META_KEY
from gateway.client.credentials.adk_scheme import SignInRequired
from gateway.client.relayed_round import RelayedRound
from gateway.client.tool_caller import ToolCaller
from gateway.client.upstream_tasks import UpstreamTasks
from gateway.errors import CredentialError, UpstreamUnavailableError
from gateway.tasks.wire import CreateTaskResult
from gateway.tools import BaseTool, ToolContext
from gateway.tools.confirmation import confirmation_gate
from gateway.tools.function_tool import ConfirmationPolicy, call_predicate

__all__ = ["PENDING_USER_AUTHORIZATION", "McpTool", "ToolCaller", "pending_task_response", "restore_actions"]

PENDING_USER_AUTHORIZATION = "Pending User Authorization."
"""What a call answers while the user's sign-in is requested (ADK's `BaseAuthenticatedTool` says the same)."""

logger = logging.getLogger(__name__)

_Result = TypeVar("_Result")


class McpTool(BaseTool):
    """A tool served by an upstream MCP server; calling it sends `tools/call` (never retried)."""

    def __init__(
        self, *, mcp_tool: types.Tool, toolset: ToolCaller, require_confirmation: ConfirmationPolicy = False
    ) -> None:
        meta = mcp_tool.meta or {}
        super().__init__(
            name=mcp_tool.name,
            description=mcp_tool.description or "",
            is_long_running=bool(meta.get(LONG_RUNNING_META_KEY)),
        )
        self._mcp_tool = mcp_tool
        self._toolset = toolset
        self._require_confirmation = require_confirmation
        self._declaration = mcp_tool_to_declaration(mcp_tool)

    @property
    def uses_state(self) -> bool:
        """No: an upstream call never reads or writes this server's state, so it never waits for other calls."""
        return False

    @property
    def raw_mcp_tool(self) -> types.Tool:
        """The tool as the upstream listed it (its name there is `raw_mcp_tool.name`)."""
        return self._mcp_tool

    def _get_declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def check_require_confirmation(self, args: dict[str, Any], tool_context: ToolContext) -> bool:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Evaluate the toolset's confirmation policy for these arguments."""
        policy = self._require_confirmation
        if callable(policy):
            return await call_predicate(policy, args, tool_context)
        return bool(policy)

    @property
    def never_confirmed(self) -> bool:
        """Whether no call of this tool ever asks for a confirmation first (its policy is plainly off)."""
        return self._require_confirmation is False

    @property
    def toolset(self) -> ToolCaller:
        """What calls the upstream (the `McpToolset` that listed this tool)."""
        return self._toolset

    async def _refusal(self, args: dict[str, Any], tool_context: ToolContext) -> str | None:
        """Why the call may not run yet under the confirmation policy (a confirmation is requested), if so."""
        return confirmation_gate(self.name, await self.check_require_confirmation(args, tool_context), tool_context)

    async def _guarded(
        self, args: dict[str, Any], tool_context: ToolContext, send: Callable[[], Awaitable[_Result]]
    ) -> _Result | types.CallToolResult:
        """`send()` unless the confirmation policy refuses the call or the user must sign in first.

        Either refusal is an `isError` result the model can read (a confirmation or credential is requested).
        """
        refusal = await self._refusal(args, tool_context)
        if refusal is not None:
            return _error_result(refusal)
        try:
            return await send()
        except SignInRequired as exc:
            return _error_result(_request_sign_in(exc, tool_context))

    async def call_mcp(self, args: dict[str, Any], tool_context: ToolContext) -> types.CallToolResult:
        """Call the upstream tool and return its `CallToolResult` as the upstream sent it (what a gateway forwards).

        The confirmation policy applies as in `run_async`: a call that must be confirmed first requests the
        confirmation on `tool_context` and returns an `isError` result saying so, without calling the upstream.

        Raises:
            MCPError: the upstream answered with a JSON-RPC error.
            UpstreamUnavailableError: the upstream cannot be reached.
        """
        return await self._guarded(
            args, tool_context, lambda: self._toolset.call_tool(self._mcp_tool.name, args, tool_context)
        )

    async def call_mcp_round(
        self, args: dict[str, Any], tool_context: ToolContext, answer: RelayedRound
    ) -> types.CallToolResult | types.InputRequiredResult | CreateTaskResult:
        """`call_mcp` for one round relayed from a modern client to a modern upstream session (`RelayedRound`).

        The confirmation policy applies as in `call_mcp`; the upstream's `InputRequiredResult` is returned as sent,
        and so is its task for a client that declared the Tasks extension (the gateway hands it out).

        Raises:
            MCPError: the upstream answered with a JSON-RPC error.
            UpstreamUnavailableError: the upstream cannot be reached.
        """
        return await self._guarded(
            args, tool_context, lambda: self._toolset.call_tool_round(self._mcp_tool.name, args, tool_context, answer)
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext | None) -> dict[str, Any]:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Call the upstream tool and return ADK's function response (`{"error": ...}` on any failure).

        The actions the server's tool set (its result's documented `_meta` keys) are set on `tool_context.actions`.

        `tool_context=None` (as ADK's documented MCP-server recipe passes) runs it with a fresh context: progress
        is kept in its `ProgressLog`, and questions from the upstream are declined.
        """
        return await self._respond(args, tool_context, self._toolset.call_tool)

    async def start_async(self, *, args: dict[str, Any], tool_context: ToolContext | None) -> dict[str, Any]:
        """`run_async` in the form of ADK's long-running tools: a task the upstream answers with (SEP-2663, with
        `enable_tasks`) is not waited for; the response is its pending status (`pending_task_response`), and the
        toolset's `finish_task` gives its outcome later."""
        toolset = self._toolset
        return await self._respond(
            args, tool_context, toolset.start_tool if isinstance(toolset, UpstreamTasks) else toolset.call_tool
        )

    async def _respond(
        self,
        args: dict[str, Any],
        tool_context: ToolContext | None,
        send: Callable[[str, dict[str, Any], ToolContext], Awaitable[types.CallToolResult | CreateTaskResult]],
    ) -> dict[str, Any]:
        if tool_context is None:
            tool_context = ToolContext()
        refusal = await self._refusal(args, tool_context)
        if refusal is not None:
            return {"error": refusal}
        try:
            result = await send(self._mcp_tool.name, args, tool_context)
            if isinstance(result, CreateTaskResult):
                return pending_task_response(result)
        except MCPError as exc:
            return {"error": f"MCP tool execution failed: {exc}"}
        except SignInRequired as exc:
            text = _request_sign_in(exc, tool_context)
            return {"error": text} if text != PENDING_USER_AUTHORIZATION else {"result": text}
        except (UpstreamUnavailableError, CredentialError) as exc:
            return {"error": str(exc)}
        except Exception as exc:
            # The boundary to the model: whatever else went wrong becomes ADK's error dict, as in ADK.
            logger.exception("Calling the upstream tool %r failed", self._mcp_tool.name)
            return {"error": f"Unexpected error during MCP tool execution: {exc}"}
        restore_actions(result, tool_context)
        return mcp_result_to_response(result)


def pending_task_response(task: CreateTaskResult) -> dict[str, Any]:
    """ADK's function response for a call the upstream answered with a task: its status and id (the long-running
    tool's pending status; the task's outcome follows as the call's final response)."""
    response: dict[str, Any] = {"status": task.status, "task_id": task.task_id}
    if task.status_message:
        response["message"] = task.status_message
    return response


def restore_actions(result: types.CallToolResult, tool_context: ToolContext) -> None:
    """Set on `tool_context.actions` what the server's tool asked of its caller's agent (the result's `_meta` keys,
    `adapters.event_actions`): a transfer, an escalation, a skipped summarization, saved artifacts."""
    carried = actions_from_meta(result.meta)
    actions = tool_context.actions
    for field, value in carried.items():
        if field == "artifact_delta":
            actions.artifact_delta.update(value)
        else:
            setattr(actions, field, value)


def _request_sign_in(required: SignInRequired, tool_context: ToolContext) -> str:
    """Ask for the calling user's credential through the tool context (ADK's `request_credential`)."""
    try:
        tool_context.request_credential(required.auth_config)
    except ValueError:
        return f"{required} It cannot be asked for here: the call has no function_call_id."
    return PENDING_USER_AUTHORIZATION


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
