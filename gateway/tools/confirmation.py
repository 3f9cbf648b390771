"""The confirmation gate every kind of tool passes before it runs (ADK's flow puts the same gate before each tool),
and the form a confirmation is asked with over MCP.

Our `FunctionTool`, an upstream's `McpTool` and a served google-adk tool each decide *whether* a call needs a human's
confirmation their own way (a policy, a predicate, ADK's `check_require_confirmation`); what happens then is the same
for all three and lives here: without a confirmation yet, one is requested on the call's context (with the tool's
hint) and the call answers that it awaits one; a rejected confirmation refuses the call; a given one lets it run.

Over MCP a confirmation is an elicitation form (`confirmation_form`): a `confirm` box, and the confirmation's
payload for the user to fill or edit, as ADK's `ToolConfirmation.payload` is; the tool then receives the edited
payload (`confirmed_payload`). MCP forms are flat (strings, numbers, integers, booleans), so a payload that is a
flat object of such values gives one field per key, prefilled with its value; any other payload (nested objects,
lists, None among the values, a scalar, a key named `confirm`) is one `payload` text field holding its JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final, Protocol, cast

__all__ = [
    "CONFIRMATION_REJECTED",
    "CONFIRMATION_REQUIRED",
    "CONFIRM_FIELD",
    "PAYLOAD_FIELD",
    "ConfirmingContext",
    "confirmation_form",
    "confirmation_gate",
    "confirmed_payload",
    "default_confirmation_hint",
    "is_confirmation_form",
]

CONFIRMATION_REQUIRED: Final = "This tool call requires confirmation, please approve or reject."
CONFIRMATION_REJECTED: Final = "This tool call is rejected."
CONFIRM_FIELD: Final = "confirm"
"""The form's yes/no box."""
PAYLOAD_FIELD: Final = "payload"
"""The form's JSON text field, for a payload no flat form can hold."""

_CONFIRM_BOX: Final = {
    "type": "boolean",
    "title": "Allow this tool call",
    "description": "Tick to run the tool, leave unticked to refuse.",
    "default": False,
}


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


def _field_type(value: object) -> str | None:
    """The form field type that holds `value` as it is, if any (a bool is no integer; NaN is no number)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else None
    return "string" if isinstance(value, str) else None


def _flat_fields(payload: object) -> dict[str, dict[str, Any]] | None:
    """One form field per key of a flat payload, prefilled with its value; None if a flat form cannot hold it."""
    if not isinstance(payload, dict) or not payload:
        return None
    fields: dict[str, dict[str, Any]] = {}
    for key, value in cast("dict[Any, Any]", payload).items():
        kind = _field_type(value)
        if not isinstance(key, str) or key == CONFIRM_FIELD or kind is None:
            return None
        fields[key] = {"type": kind, "title": key, "default": value}
    return fields


def confirmation_form(payload: Any = None) -> dict[str, Any]:
    """The elicitation schema that asks for a confirmation with `payload` (see the module docstring)."""
    properties: dict[str, Any] = {CONFIRM_FIELD: dict(_CONFIRM_BOX)}
    if payload is not None:
        fields = _flat_fields(payload)
        if fields is None:
            fields = {
                PAYLOAD_FIELD: {
                    "type": "string",
                    "title": "Details (JSON)",
                    "description": "What the tool will do; edit the JSON to change it.",
                    "default": json.dumps(payload, ensure_ascii=False, default=str),
                }
            }
        properties.update(fields)
    return {"type": "object", "properties": properties, "required": [CONFIRM_FIELD]}


def is_confirmation_form(schema: dict[str, Any]) -> bool:
    """Whether an elicitation schema is a confirmation form (`confirmation_form`'s required yes/no box)."""
    properties = schema.get("properties")
    box = cast("dict[str, Any]", properties).get(CONFIRM_FIELD) if isinstance(properties, dict) else None
    return (
        isinstance(box, dict)
        and cast("dict[str, Any]", box).get("type") == "boolean"
        and schema.get("required") == [CONFIRM_FIELD]
    )


def _edited(key: str, kind: str, value: object) -> Any:
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "number" and _field_type(value) == "integer":
        return value
    if _field_type(value) != kind:
        raise ValueError(f"The field {key!r} must be {'an' if kind == 'integer' else 'a'} {kind}, not {value!r}.")
    return value


def confirmed_payload(payload: Any, content: dict[str, Any]) -> Any:
    """The payload as the user left it in the form `confirmation_form(payload)` (fields left out keep their value).

    Raises:
        ValueError: a field holds a value of another type, or the JSON field is not valid JSON (says which).
    """
    if payload is None:
        return None
    fields = _flat_fields(payload)
    if fields is None:
        text = content.get(PAYLOAD_FIELD)
        if text is None:
            return payload
        if not isinstance(text, str):
            raise ValueError(f"The field {PAYLOAD_FIELD!r} must be JSON text, not {text!r}.")
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"The field {PAYLOAD_FIELD!r} is not valid JSON: {exc}.") from None
    edited = dict(cast("dict[str, Any]", payload))
    for key, field in fields.items():
        if key in content:
            edited[key] = _edited(key, field["type"], content[key])
    return edited
