"""EventActions across MCP: the actions a tool call set, as documented `_meta` keys of its result, and back.

Only what a caller's agent acts on crosses: `transfer_to_agent` (with `transfer_reason`), `escalate`,
`skip_summarization` and `artifact_delta` (keys in `adapters.meta_keys`). State stays with the server that keeps it,
and confirmation and credential requests travel as MCP elicitation. A key is written only when the tool set it, so
a result that asks for nothing carries none; a value of the wrong type is ignored when read back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeGuard, cast

from adapters.meta_keys import (
    ARTIFACT_DELTA_META_KEY,
    ESCALATE_META_KEY,
    SKIP_SUMMARIZATION_META_KEY,
    TRANSFER_REASON_META_KEY,
    TRANSFER_TO_AGENT_META_KEY,
)

__all__ = ["CARRIED_ACTIONS", "actions_from_meta", "actions_to_meta"]

_Kind = Literal["flag", "name", "delta"]

_CARRIED: Final[tuple[tuple[str, str, _Kind], ...]] = (
    (ESCALATE_META_KEY, "escalate", "flag"),
    (SKIP_SUMMARIZATION_META_KEY, "skip_summarization", "flag"),
    (TRANSFER_TO_AGENT_META_KEY, "transfer_to_agent", "name"),
    (TRANSFER_REASON_META_KEY, "transfer_reason", "name"),
    (ARTIFACT_DELTA_META_KEY, "artifact_delta", "delta"),
)
"""Each carried action: its `_meta` key, its `EventActions` field, and what a value of it must be."""

CARRIED_ACTIONS: Final = frozenset(field for _key, field, _kind in _CARRIED)
"""The `EventActions` fields (snake_case) that cross MCP."""


def actions_to_meta(actions: Mapping[str, Any]) -> dict[str, Any]:
    """The `_meta` entries for the carried fields of `actions` (ADK's `EventActions` fields, snake_case) that are set.

    A flag is written only when true, a name only when non-empty, `artifact_delta` only when it names a file.
    """
    return _carried(actions, ((field, key, kind) for key, field, kind in _CARRIED))


def actions_from_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `EventActions` fields (snake_case) a result's `_meta` carries; missing or malformed entries are left out."""
    if not meta:
        return {}
    return _carried(meta, _CARRIED)


def _carried(source: Mapping[str, Any], renames: Iterable[tuple[str, str, _Kind]]) -> dict[str, Any]:
    """The entries of `source` that are set and well formed, each under its new name."""
    found: dict[str, Any] = {}
    for name, renamed, kind in renames:
        value = source.get(name)
        if kind == "flag" and value is True:
            found[renamed] = True
        elif kind == "name" and isinstance(value, str) and value:
            found[renamed] = value
        elif kind == "delta" and _is_artifact_delta(value) and value:
            found[renamed] = dict(value)
    return found


def _is_artifact_delta(value: Any) -> TypeGuard[Mapping[str, int]]:
    if not isinstance(value, Mapping):
        return False
    items = cast("Mapping[Any, Any]", value)
    return all(
        isinstance(name, str) and isinstance(version, int) and not isinstance(version, bool)
        for name, version in items.items()
    )
