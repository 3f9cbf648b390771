"""Progress of a call an ADK agent makes, as ADK surfaces a long-running tool's intermediate updates.

ADK's documented contract for a long-running tool is that each intermediate update reaches the app as a function
response for the call before the final one. A tool lent to ADK (`to_adk`) reports progress through its
`ToolContext`'s progress sink: our generator tools' yields, and the `notifications/progress` an upstream MCP server
sends while its tool runs. Each update becomes a *partial* ADK event holding a `FunctionResponse` for the call with
`will_continue=True`: the Runner streams it to the app as it happens (like partial model output), and, being partial,
it is not stored in the session, so the model's history holds the call's final response only (a second response to
one call id would break ADK's pairing of calls and responses). Outside a Runner (no event queue) updates are only
kept.
"""

from __future__ import annotations

from typing import Any, cast

from google.adk.events import Event
from google.adk.tools.tool_context import ToolContext as AdkToolContext
from google.genai import types as genai_types

from gateway.tools import ProgressLog

__all__ = ["AdkProgress"]


def _response(update: Any) -> dict[str, Any]:
    # ADK's own rule for a tool's value: a dict as it is, anything else under "result".
    return cast("dict[str, Any]", update) if isinstance(update, dict) else {"result": update}


class AdkProgress(ProgressLog):
    """A progress sink that streams each update to the ADK app as an intermediate function response (and keeps it)."""

    def __init__(self, tool_name: str, adk_context: AdkToolContext) -> None:
        super().__init__()
        self._tool_name = tool_name
        self._adk_context = adk_context

    async def __call__(self, update: Any, /) -> None:
        await super().__call__(update)
        invocation = self._adk_context._invocation_context  # pyright: ignore[reportPrivateUsage] - ADK's context API
        if invocation._event_queue is None:  # pyright: ignore[reportPrivateUsage] - only a Runner's run streams
            return
        response = genai_types.FunctionResponse(
            id=self._adk_context.function_call_id,
            name=self._tool_name,
            response=_response(update),
            will_continue=True,
        )
        agent = invocation.agent
        event = Event(
            invocation_id=invocation.invocation_id,
            author=agent.name if agent is not None else self._tool_name,
            branch=invocation.branch,
            partial=True,
            content=genai_types.Content(role="user", parts=[genai_types.Part(function_response=response)]),
        )
        await invocation._enqueue_event(event)  # pyright: ignore[reportPrivateUsage] - how ADK's own flows emit
