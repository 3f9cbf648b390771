"""The confirmation gate every kind of tool passes before it runs (ADK's flow puts the same gate before each tool).

Our `FunctionTool`, an upstream's `McpTool` and a served google-adk tool each decide *whether* a call needs a human's
confirmation their own way (a policy, a predicate, ADK's `check_require_confirmation`); what happens then is the same
for all three and lives here: without a confirmation yet, one is requested on the call's context (with the tool's
hint) and the call answers that it awaits one; a rejected confirmation refuses the call; a given one lets it run.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

__all__ = [
    "CONFIRMATION_REJECTED",
    "CONFIRMATION_REQUIRED",
    "ConfirmingContext",
    "confirmation_gate",
    "default_confirmation_hint",
]

CONFIRMATION_REQUIRED: Final = "This tool call requires confirmation, please approve or reject."
CONFIRMATION_REJECTED: Final = "This tool call is rejected."


class _Actions(Protocol):
    skip_summarization: bool | None


class _Confirmation(Protocol):
    @property
    def confirmed(self) -> bool: ...


class ConfirmingContext(Protocol):
    """What the gate needs of a call's context: ours (`gateway.tools.ToolContext`) or google-adk's."""

    @property
    def tool_confirmation(self) -> _Confirmation | None: ...

    @property
    def actions(self) -> Any: ...

    def request_confirmation(self, *, hint: str | None = None, payload: Any | None = None) -> None: ...


def default_confirmation_hint(tool_name: str) -> str:
    """ADK's hint for a call that needs a confirmation (addressed to a model, so a person is not shown it)."""
    return (
        f"Please approve or reject the tool call {tool_name}() by responding with a FunctionResponse "
        "with an expected ToolConfirmation payload."
    )


def confirmation_gate(
    tool_name: str,
    required: bool,
    context: ConfirmingContext,
    *,
    hint: str | None = None,
    skip_summarization: bool = True,
) -> str | None:
    """Why the call may not run (ADK's error text), or None when it may.

    Args:
        tool_name: the tool, named in the default hint.
        required: whether this call needs a confirmation (the tool's policy, evaluated for its arguments).
        context: the call's context; a confirmation is requested on it when the call has none yet.
        hint: what the person who confirms is told (default: ADK's hint).
        skip_summarization: set `actions.skip_summarization` when asking (as ADK does, so that the model does not
            answer the pending call in a loop).
    """
    if not required:
        return None
    confirmation = context.tool_confirmation
    if confirmation is None:
        context.request_confirmation(hint=hint if hint is not None else default_confirmation_hint(tool_name))
        if skip_summarization:
            actions: _Actions = context.actions
            actions.skip_summarization = True
        return CONFIRMATION_REQUIRED
    return None if confirmation.confirmed else CONFIRMATION_REJECTED
