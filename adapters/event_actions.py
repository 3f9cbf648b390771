"""EventActions across MCP: the actions a tool call set, as documented `_meta` keys of its result, and back.

Only what a caller's agent acts on crosses: `transfer_to_agent` (with `transfer_reason`), `escalate`,
`skip_summarization` and `artifact_delta` (keys in `adapters.meta_keys`). State stays with the server that keeps it,
and confirmation and credential requests travel as MCP elicitation. A key is written only when the tool set it, so
a result that asks for nothing carries none; a value of the wrong type is ignored when read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeGuard, cast

from adapters.meta_keys import (
    ARTIFACT_DELTA_META_KEY,
    ESCALATE_META_KEY,
    SKIP_SUMMARIZATION_META_KEY,
    TRANSFER_REASON_META_KEY,
    TRANSFER_TO_AGENT_META_KEY,
)

__all__ = ["CARRIED_ACTIONS", "actions_from_meta", "actions_to_meta"]

_FLAGS: Final = {ESCALATE_META_KEY: "escalate", SKIP_SUMMARIZATION_META_KEY: "skip_summarization"}
_NAMES: Final = {TRANSFER_TO_AGENT_META_KEY: "transfer_to_agent", TRANSFER_REASON_META_KEY: "transfer_reason"}

CARRIED_ACTIONS: Final = frozenset([*_FLAGS.values(), *_NAMES.values(), "artifact_delta"])
"""The `EventActions` fields (snake_case) that cross MCP."""


def actions_to_meta(actions: Mapping[str, Any]) -> dict[str, Any]:
    """The `_meta` entries for the carried fields of `actions` (ADK's `EventActions` fields, snake_case) that are set.

    A flag is written only when true, a name only when non-empty, `artifact_delta` only when it names a file.
    """
    meta: dict[str, Any] = {}
    for key, field in _FLAGS.items():
        if actions.get(field) is True:
            meta[key] = True
    for key, field in _NAMES.items():
        value = actions.get(field)
        if isinstance(value, str) and value:
            meta[key] = value
    delta = actions.get("artifact_delta")
    if _is_artifact_delta(delta) and delta:
        meta[ARTIFACT_DELTA_META_KEY] = dict(delta)
    return meta


def actions_from_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `EventActions` fields (snake_case) a result's `_meta` carries; missing or malformed entries are left out."""
    if not meta:
        return {}
    found: dict[str, Any] = {}
    for key, field in _FLAGS.items():
        if meta.get(key) is True:
            found[field] = True
    for key, field in _NAMES.items():
        value = meta.get(key)
        if isinstance(value, str) and value:
            found[field] = value
    delta = meta.get(ARTIFACT_DELTA_META_KEY)
    if _is_artifact_delta(delta) and delta:
        found["artifact_delta"] = dict(delta)
    return found


def _is_artifact_delta(value: Any) -> TypeGuard[Mapping[str, int]]:
    if not isinstance(value, Mapping):
        return False
    items = cast("Mapping[Any, Any]", value)
    return all(
        isinstance(name, str) and isinstance(version, int) and not isinstance(version, bool)
        for name, version in items.items()
    )
