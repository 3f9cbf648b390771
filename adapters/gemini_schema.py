"""JSON Schema to the subset that Gemini-style function calling accepts.

Gemini's function declarations take an OpenAPI-3.0-like `Schema`: no references, no boolean schemas, no
`oneOf`/`allOf`, `nullable` instead of `null` types, string-only enums, a few formats. An MCP tool's
`inputSchema` may be any draft-07 or 2020-12 schema, so `to_gemini_schema` rewrites it keyword by keyword:

| Keyword | What happens |
|---|---|
| `$ref` | inlined (local pointers only); its siblings are merged over the target and win |
| `$ref` already on the path | `{"type": "object", "description": "Circular reference to <Name>."}` |
| `$ref` not found or remote | `{"type": "object", "description": "Unresolved reference <ref>."}` |
| `$defs`, `definitions` | dropped (after inlining) |
| `allOf` | merged: `properties` and `required` united, else the first key wins (the schema's own first) |
| `oneOf` | changed to `anyOf` (dropped if `anyOf` is there too) |
| `anyOf` | kept; a null branch becomes `nullable: true`; one branch left is merged into the parent |
| `type: [X, "null"]` | changed to `type: X, nullable: true` |
| `type: [X, Y, ...]` | changed to `anyOf`, one branch per type with that type's keywords and enum values |
| `type: "null"` | changed to `type: object, nullable: true` |
| no `type` | `object` with `properties`, `array` with `items`, `string` with an all-string `enum` |
| `const` | changed to a one-value `enum` |
| `enum` | for strings: other values `json.dumps`'d, `null` changed to `nullable: true`; else kept |
| `format` | kept for string `date-time`/`enum`, integer `int32`/`int64`, number `float`/`double` |
| `items` | kept; an array without it gets `{"type": "string"}` |
| `prefixItems`, array `items` | changed to `items`: the one schema if all are equal, else `anyOf` of them |
| `additionalItems` | joins the array-form `items` it follows, then as above |
| `properties` | kept, names unchanged |
| `required`, `propertyOrdering` | kept without names missing from `properties`; dropped when empty |
| `examples` | changed to `example` (the first one); an existing `example` wins |
| `title`, `description`, `pattern` | kept when strings |
| `default`, `example`, `nullable: true` | kept |
| `minimum`, `maximum` | kept when numbers |
| `minLength`, `maxItems`, ... (counts) | kept when non-negative integers (`2.0` read as `2`) |
| anything else | dropped: `additionalProperties`, `not`, `if`, `exclusiveMinimum`, `$schema`, ... |

Keywords of another type than the final one (`minLength` on an `integer`) are dropped. An empty result,
`true` and `false` become `{"type": "object"}`, as google-adk does. Nesting deeper than 64 levels is cut off
with a described object, so that a pathological schema cannot exhaust the stack.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, cast

from adapters._json_values import (
    as_count,
    as_list,
    as_mapping,
    dedupe,
    is_number,
    schema_dict,
    schemas_only,
    without,
)
from adapters._schema_expansion import Path, SchemaExpander, merge

__all__ = ["to_gemini_schema"]

_MAX_DEPTH = 64

_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
_FORMATS = frozenset(
    {
        ("string", "date-time"),
        ("string", "enum"),
        ("integer", "int32"),
        ("integer", "int64"),
        ("number", "float"),
        ("number", "double"),
    }
)
_STRING_KEYWORDS = frozenset({"format", "minLength", "maxLength", "pattern"})
_NUMBER_KEYWORDS = frozenset({"format", "minimum", "maximum"})
_TYPE_KEYWORDS: Mapping[str, frozenset[str]] = {
    "string": _STRING_KEYWORDS,
    "number": _NUMBER_KEYWORDS,
    "integer": _NUMBER_KEYWORDS,
    "boolean": frozenset(),
    "array": frozenset({"items", "prefixItems", "additionalItems", "minItems", "maxItems"}),
    "object": frozenset({"properties", "required", "propertyOrdering", "minProperties", "maxProperties"}),
}
# Keys a type-array split leaves on the parent rather than copying into every branch.
_ANNOTATIONS = frozenset({"title", "description", "default", "example", "examples", "nullable"})


def to_gemini_schema(json_schema: Mapping[str, Any] | bool) -> dict[str, Any]:
    """Convert a JSON Schema (draft-07 or 2020-12) into Gemini's function-calling `Schema` subset.

    Args:
        json_schema: Any valid JSON Schema, boolean schemas included. It is not modified.

    Returns:
        A new dict using only the keywords Gemini accepts, with every `$ref` inlined. Never raises on a
        valid JSON Schema, and converting the result again returns it unchanged.
    """
    root = schema_dict(json_schema)
    # The root is on the path from the start, so `"$ref": "#"` inside it is already circular.
    return _Converter(root).convert(root, frozenset({()}), 0)


class _Converter:
    """Converts the schemas of one document; `$ref` pointers resolve against its root."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self._expander = SchemaExpander(root, _MAX_DEPTH)

    def convert(self, node: object, path: Path, depth: int) -> dict[str, Any]:
        """Convert one schema; `path` holds the refs being expanded above it."""
        if depth > _MAX_DEPTH:
            return {"type": "object", "description": "Schema nested too deeply; truncated."}
        schema, path = self._expander.expand(schema_dict(node), path, depth)
        return self._convert_flat(schema, path, depth)

    # Conversion proper: one schema level, with its children converted recursively.

    def _convert_flat(self, schema: dict[str, Any], path: Path, depth: int) -> dict[str, Any]:
        if "const" in schema:
            schema = without(schema, "const") | {"enum": [schema["const"]]}
        types = _type_names(schema.get("type"))
        enum = as_list(schema.get("enum"))
        if not types and enum and all(value is None for value in enum):
            schema, types = without(schema, "enum"), ["null"]
        nullable = schema.get("nullable") is True or "null" in types
        non_null = [t for t in types if t != "null"] or (["object"] if types else [])
        if len(non_null) > 1 and "anyOf" not in schema:
            return self._convert_flat(_split_types(schema, non_null, nullable), path, depth)
        # Several types next to an `anyOf` are dropped: the anyOf already says what is allowed.
        type_ = non_null[0] if len(non_null) == 1 else _implied_type(schema, enum)
        return self._build(schema, type_, nullable, path, depth)

    def _build(
        self, schema: dict[str, Any], type_: str | None, nullable: bool, path: Path, depth: int
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if type_ is not None:
            out["type"] = type_
        fmt = schema.get("format")
        if isinstance(fmt, str) and (type_, fmt) in _FORMATS:
            out["format"] = fmt
        for key in ("title", "description"):
            if isinstance(schema.get(key), str):
                out[key] = schema[key]
        enum = as_list(schema.get("enum"))
        if type_ == "string" and enum:
            nullable = nullable or any(value is None for value in enum)
            enum = dedupe(_as_string(value) for value in enum if value is not None)
        if nullable:
            out["nullable"] = True
        if enum:
            out["enum"] = copy.deepcopy(enum)
        if "default" in schema:
            out["default"] = copy.deepcopy(schema["default"])
        examples = as_list(schema.get("examples"))
        if "example" in schema or examples:
            out["example"] = copy.deepcopy(schema["example"] if "example" in schema else examples[0])
        anyof = as_list(schema.get("anyOf"))
        if anyof:
            out["anyOf"] = [self.convert(branch, path, depth + 1) for branch in anyof]
        if type_ in (None, "object"):
            out |= self._object_keywords(schema, path, depth)
        if type_ == "array":
            out["items"] = self._items(schema, path, depth)
        if type_ in (None, "array"):
            out |= _counts(schema, "minItems", "maxItems")
        if type_ in (None, "string"):
            out |= _counts(schema, "minLength", "maxLength")
            if isinstance(schema.get("pattern"), str):
                out["pattern"] = schema["pattern"]
        if type_ in (None, "number", "integer"):
            out |= {key: schema[key] for key in ("minimum", "maximum") if is_number(schema.get(key))}
        # google-adk sends `{}` as an object; a lone `nullable` has no type of its own either.
        return out if out.keys() - {"nullable"} else {"type": "object", **out}

    def _object_keywords(self, schema: dict[str, Any], path: Path, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        properties = as_mapping(schema.get("properties"))
        if properties is not None:
            converted = {name: self.convert(sub, path, depth + 1) for name, sub in properties.items()}
            out["properties"] = converted
            required = dedupe(r for r in as_list(schema.get("required")) if _is_key(r, converted))
            if required:
                out["required"] = required
            ordering = dedupe(p for p in as_list(schema.get("propertyOrdering")) if _is_key(p, converted))
            if ordering:
                out["propertyOrdering"] = ordering
        return out | _counts(schema, "minProperties", "maxProperties")

    def _items(self, schema: dict[str, Any], path: Path, depth: int) -> dict[str, Any]:
        members: list[object] = []
        if isinstance(schema.get("prefixItems"), list):
            # 2020-12: `items` next to `prefixItems` describes the items after the tuple.
            members = [*schema["prefixItems"], *schemas_only([schema.get("items")])]
        elif isinstance(schema.get("items"), list):
            members = [*schema["items"], *schemas_only([schema.get("additionalItems")])]
        elif "items" in schema:
            return self.convert(schema["items"], path, depth + 1)
        converted = dedupe(self.convert(member, path, depth + 1) for member in members)
        if not converted:
            return {"type": "string"}
        return converted[0] if len(converted) == 1 else {"anyOf": converted}


def _split_types(schema: dict[str, Any], types: list[str], nullable: bool) -> dict[str, Any]:
    """Turn a multi-type schema into an `anyOf` of one-type branches, each with its own keywords."""
    parent = {key: value for key, value in schema.items() if key in _ANNOTATIONS}
    if nullable:
        parent["nullable"] = True
    enum = schema.get("enum")
    branches: list[dict[str, Any]] = []
    for type_ in types:
        branch = {"type": type_} | {k: v for k, v in schema.items() if k in _TYPE_KEYWORDS[type_]}
        if isinstance(enum, list):
            values = [value for value in cast(list[Any], enum) if _has_type(value, type_)]
            if not values:
                continue  # no allowed value has this type, so the branch could never match
            branch["enum"] = values
        branches.append(branch)
    if not branches:
        # The enum alone says what is allowed; convert it as an untyped enum.
        return without(schema, "type") | parent
    if len(branches) == 1:
        return merge([parent, branches[0]])
    return parent | {"anyOf": branches}


def _implied_type(schema: Mapping[str, Any], enum: list[Any]) -> str | None:
    if isinstance(schema.get("properties"), Mapping):
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if enum and all(isinstance(value, str) or value is None for value in enum):
        return "string"
    return None


def _type_names(value: object) -> list[str]:
    """The known type names in a `type` keyword, in order and without repeats."""
    names = [value] if isinstance(value, str) else as_list(value)
    return dedupe(name for name in names if isinstance(name, str) and name in _TYPES)


def _has_type(value: object, type_: str) -> bool:
    """Whether a JSON value is an instance of a JSON Schema type."""
    match type_:
        case "string":
            return isinstance(value, str)
        case "integer":
            return as_count(value) is not None or (isinstance(value, int) and not isinstance(value, bool))
        case "number":
            return is_number(value)
        case "boolean":
            return isinstance(value, bool)
        case "array":
            return isinstance(value, list)
        case _:
            return isinstance(value, Mapping)


def _counts(schema: Mapping[str, Any], *keys: str) -> dict[str, int]:
    """The given count keywords whose values are non-negative integers (`2.0` counts as `2`)."""
    out: dict[str, int] = {}
    for key in keys:
        count = as_count(schema.get(key))
        if count is not None:
            out[key] = count
    return out


def _is_key(value: object, mapping: Mapping[str, Any]) -> bool:
    return isinstance(value, str) and value in mapping


def _as_string(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
