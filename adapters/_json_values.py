"""Typed reads of untyped JSON values: a schema arrives as `Any`, and every keyword may hold the wrong kind."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, cast

__all__ = [
    "as_count",
    "as_list",
    "as_mapping",
    "dedupe",
    "is_number",
    "is_schema",
    "schema_dict",
    "schemas_only",
    "without",
]

_T = TypeVar("_T")


def as_mapping(value: object) -> Mapping[str, Any] | None:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else None


def as_list(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def as_count(value: object) -> int | None:
    """A non-negative integer, with `2.0` read as `2` (2020-12 treats them as equal); else None."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_schema(value: object) -> bool:
    return isinstance(value, Mapping | bool)


def schema_dict(node: object) -> dict[str, Any]:
    """A shallow copy of a schema object; booleans and junk count as the empty schema."""
    mapping = as_mapping(node)
    return dict(mapping) if mapping is not None else {}


def schemas_only(values: list[object]) -> list[Mapping[str, Any]]:
    return [mapping for mapping in map(as_mapping, values) if mapping is not None]


def without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def dedupe(values: Iterable[_T]) -> list[_T]:
    """The values in order, each once (by equality, so unhashable values work)."""
    out: list[_T] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out
