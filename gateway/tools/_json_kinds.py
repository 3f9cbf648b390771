"""Where a JSON value's boolean/number kind contradicts the JSON Schema it is checked against.

pydantic's lax mode turns `true` into `1` for an `int` and `1` into `True` for a `bool`, so `add(true, 2)` would
give 3. JSON keeps booleans and numbers apart, and a model that sends one for the other has made a mistake worth
telling it about. This walk finds those places (and only those: every other check is pydantic's) by following
the tool's declared schema: `$ref`s into `$defs`, `anyOf`/`oneOf` (a value fits when one branch admits it),
`allOf`, object properties, array items and tuple prefixes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

__all__ = ["KindMismatch", "kind_mismatches"]

_NUMBER_TYPES = frozenset({"integer", "number"})
_REF_PREFIX = "#/$defs/"
_MAX_REF_HOPS = 32
"""A `$ref` chain longer than this is treated as unresolvable (a cycle of plain references)."""


@dataclass(frozen=True)
class KindMismatch:
    """A boolean where the schema admits no boolean, or a number where it admits a boolean but no number."""

    loc: tuple[str | int, ...]
    message: str
    value: Any


def kind_mismatches(schema: Mapping[str, Any], value: Any) -> list[KindMismatch]:
    """Every place in `value` where a boolean stands for a number or a number for a boolean."""
    found: list[KindMismatch] = []
    _walk(schema, value, (), schema.get("$defs") or {}, found)
    return found


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    seen = 0
    while isinstance(ref := schema.get("$ref"), str) and ref.startswith(_REF_PREFIX) and seen < _MAX_REF_HOPS:
        target = defs.get(ref[len(_REF_PREFIX) :])
        if not isinstance(target, Mapping):
            break
        schema = cast("Mapping[str, Any]", target)
        seen += 1
    return schema


def _types(schema: Mapping[str, Any]) -> frozenset[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list):
        return frozenset(str(t) for t in cast("list[Any]", declared))
    return frozenset()


def _declares(types: frozenset[str], value: Any) -> bool:
    """Whether a schema of `types` is meant for values of `value`'s JSON type (no `type` means any)."""
    if not types:
        return True
    if isinstance(value, bool):
        kind = "boolean"
    elif isinstance(value, int | float):
        return bool(types & _NUMBER_TYPES)
    elif isinstance(value, str):
        kind = "string"
    elif value is None:
        kind = "null"
    elif isinstance(value, dict):
        kind = "object"
    elif isinstance(value, list):
        kind = "array"
    else:
        return True
    return kind in types


def _mismatch_here(types: frozenset[str], value: Any) -> str | None:
    if not types:
        return None
    if isinstance(value, bool):
        return None if "boolean" in types else _message(types, "a boolean")
    if isinstance(value, int | float) and "boolean" in types and not types & _NUMBER_TYPES:
        return _message(types, "a number")
    return None


def _message(types: frozenset[str], got: str) -> str:
    return f"Input should be of JSON type {' or '.join(sorted(types))}, not {got}"


def _walk(
    schema: Mapping[str, Any],
    value: Any,
    loc: tuple[str | int, ...],
    defs: Mapping[str, Any],
    found: list[KindMismatch],
) -> None:
    schema = _resolve(schema, defs)
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            alternatives = [cast("Mapping[str, Any]", b) for b in cast("list[Any]", branches) if isinstance(b, Mapping)]
            # Judge the value by the branches meant for its JSON type (`[1, true]` by the array branch of
            # `list[int] | None`), or by all of them when none is (a numeric string, which pydantic coerces).
            meant = [b for b in alternatives if _declares(_types(_resolve(b, defs)), value)]
            alternatives = meant or alternatives
            outcomes: list[list[KindMismatch]] = []
            for branch in alternatives:
                branch_found: list[KindMismatch] = []
                _walk(branch, value, loc, defs, branch_found)
                if not branch_found:
                    return
                outcomes.append(branch_found)
            if outcomes:
                found.extend(_merged(alternatives, outcomes, loc, defs, value))
            return
    for branch in cast("list[Any]", schema.get("allOf") or []):
        if isinstance(branch, Mapping):
            _walk(cast("Mapping[str, Any]", branch), value, loc, defs, found)
    message = _mismatch_here(_types(schema), value)
    if message is not None:
        found.append(KindMismatch(loc, message, value))
        return
    if isinstance(value, dict):
        _walk_object(schema, cast("dict[str, Any]", value), loc, defs, found)
    elif isinstance(value, list):
        _walk_array(schema, cast("list[Any]", value), loc, defs, found)


def _merged(
    branches: list[Mapping[str, Any]],
    outcomes: list[list[KindMismatch]],
    loc: tuple[str | int, ...],
    defs: Mapping[str, Any],
    value: Any,
) -> list[KindMismatch]:
    """No branch admits the value: one mismatch naming every branch's type when each failed right here."""
    if not all(len(o) == 1 and o[0].loc == loc for o in outcomes):
        return outcomes[0]
    types = frozenset(t for branch in branches for t in _types(_resolve(branch, defs)))
    return [KindMismatch(loc, _message(types, "a boolean" if isinstance(value, bool) else "a number"), value)]


def _walk_object(
    schema: Mapping[str, Any],
    value: dict[str, Any],
    loc: tuple[str | int, ...],
    defs: Mapping[str, Any],
    found: list[KindMismatch],
) -> None:
    properties = cast("Mapping[str, Any]", schema.get("properties") or {})
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        sub = properties.get(key, additional)
        if isinstance(sub, Mapping):
            _walk(cast("Mapping[str, Any]", sub), item, (*loc, key), defs, found)


def _walk_array(
    schema: Mapping[str, Any],
    value: list[Any],
    loc: tuple[str | int, ...],
    defs: Mapping[str, Any],
    found: list[KindMismatch],
) -> None:
    prefix = cast("list[Any]", schema.get("prefixItems") or [])
    items = schema.get("items")
    for index, item in enumerate(value):
        sub = prefix[index] if index < len(prefix) else items
        if isinstance(sub, Mapping):
            _walk(cast("Mapping[str, Any]", sub), item, (*loc, index), defs, found)
