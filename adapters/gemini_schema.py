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
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, cast
from urllib.parse import unquote

__all__ = ["to_gemini_schema"]

_Pointer = tuple[str, ...]
_Path = frozenset[_Pointer]
_T = TypeVar("_T")

_MAX_DEPTH = 64
_MISSING: Any = object()

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
    root = _schema_dict(json_schema)
    # The root is on the path from the start, so `"$ref": "#"` inside it is already circular.
    return _Converter(root).convert(root, frozenset({()}), 0)


class _Converter:
    """Converts the schemas of one document; `$ref` pointers resolve against its root."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self._root = root
        root_id = root.get("$id")
        self._base = root_id.partition("#")[0] if isinstance(root_id, str) else None

    def convert(self, node: object, path: _Path, depth: int) -> dict[str, Any]:
        """Convert one schema; `path` holds the refs being expanded above it."""
        if depth > _MAX_DEPTH:
            return {"type": "object", "description": "Schema nested too deeply; truncated."}
        schema, path = self._expand(_schema_dict(node), path, depth)
        return self._convert_flat(schema, path, depth)

    # Expansion works on raw JSON Schema: it leaves a schema with no `$ref`, `allOf`, `oneOf` or null
    # `anyOf` branch at its top level, so that every later rule sees the keywords it merged in.

    def _expand(self, schema: dict[str, Any], path: _Path, depth: int) -> tuple[dict[str, Any], _Path]:
        if depth > _MAX_DEPTH:
            return {}, path
        while True:
            if "oneOf" in schema:
                schema = _without(schema, "oneOf") | {"anyOf": schema.get("anyOf", schema["oneOf"])}
            if "$ref" in schema:
                schema, path = self._inline_ref(schema, path)
            elif "allOf" in schema:
                schema, path = self._merge_all_of(schema, path, depth)
            elif any(self._is_null(branch, path) for branch in _as_list(schema.get("anyOf"))):
                schema, path = self._fold_null_branches(schema, path, depth)
            else:
                return schema, path

    def _inline_ref(self, schema: dict[str, Any], path: _Path) -> tuple[dict[str, Any], _Path]:
        ref = schema["$ref"]
        pointer = self._pointer(ref)
        target = _MISSING if pointer is None else self._lookup(pointer)
        if pointer is None or not _is_schema(target):
            resolved: dict[str, Any] = {"type": "object", "description": f"Unresolved reference {ref}."}
        elif pointer in path:
            resolved = {"type": "object", "description": f"Circular reference to {self._name(pointer)}."}
        else:
            resolved = _schema_dict(target)
            path = path | {pointer}
        return _merge([_without(schema, "$ref"), resolved]), path

    def _merge_all_of(self, schema: dict[str, Any], path: _Path, depth: int) -> tuple[dict[str, Any], _Path]:
        parts = [_without(schema, "allOf")]
        merged_path = path
        for branch in _as_list(schema["allOf"]):
            expanded, branch_path = self._expand(_schema_dict(branch), path, depth + 1)
            parts.append(expanded)
            merged_path |= branch_path
        return _merge(parts), merged_path

    def _fold_null_branches(self, schema: dict[str, Any], path: _Path, depth: int) -> tuple[dict[str, Any], _Path]:
        branches = [b for b in _as_list(schema["anyOf"]) if not self._is_null(b, path)]
        parent = _without(schema, "anyOf") | {"nullable": True}
        if len(branches) == 1:
            branch, path = self._expand(_schema_dict(branches[0]), path, depth + 1)
            return _merge([parent, branch]), path
        return (parent | {"anyOf": branches} if branches else parent), path

    def _is_null(self, node: object, path: _Path) -> bool:
        """Whether `node` is a `{"type": "null"}` schema, following refs but nothing else."""
        seen = set(path)
        schema = _as_mapping(node)
        while schema is not None and "$ref" in schema and "type" not in schema:
            pointer = self._pointer(schema["$ref"])
            if pointer is None or pointer in seen:
                return False
            seen.add(pointer)
            schema = _as_mapping(self._lookup(pointer))
        return schema is not None and schema.get("type") in ("null", ["null"])

    def _pointer(self, ref: object) -> _Pointer | None:
        """The JSON pointer of a local ref, or None for anything this document cannot resolve."""
        if not isinstance(ref, str):
            return None
        base, hash_, fragment = ref.partition("#")
        if not hash_ or (base and base != self._base):
            return None
        fragment = unquote(fragment)
        if not fragment:
            return ()
        if not fragment.startswith("/"):
            return None  # a plain-name fragment points at an `$anchor`, which is not supported
        return tuple(token.replace("~1", "/").replace("~0", "~") for token in fragment[1:].split("/"))

    def _lookup(self, pointer: _Pointer) -> object:
        node: object = self._root
        for token in pointer:
            mapping = _as_mapping(node)
            if mapping is not None:
                node = mapping.get(token, _MISSING)
            elif isinstance(node, list) and token.isascii() and token.isdecimal():
                items = cast(list[Any], node)
                index = int(token)
                node = items[index] if index < len(items) else _MISSING
            else:
                return _MISSING
        return node

    def _name(self, pointer: _Pointer) -> str:
        if pointer:
            return pointer[-1]
        title = self._root.get("title")
        return title if isinstance(title, str) else "the root schema"

    # Conversion proper: one schema level, with its children converted recursively.

    def _convert_flat(self, schema: dict[str, Any], path: _Path, depth: int) -> dict[str, Any]:
        if "const" in schema:
            schema = _without(schema, "const") | {"enum": [schema["const"]]}
        types = _type_names(schema.get("type"))
        enum = _as_list(schema.get("enum"))
        if not types and enum and all(value is None for value in enum):
            schema, types = _without(schema, "enum"), ["null"]
        nullable = schema.get("nullable") is True or "null" in types
        non_null = [t for t in types if t != "null"] or (["object"] if types else [])
        if len(non_null) > 1 and "anyOf" not in schema:
            return self._convert_flat(_split_types(schema, non_null, nullable), path, depth)
        # Several types next to an `anyOf` are dropped: the anyOf already says what is allowed.
        type_ = non_null[0] if len(non_null) == 1 else _implied_type(schema, enum)
        return self._build(schema, type_, nullable, path, depth)

    def _build(
        self, schema: dict[str, Any], type_: str | None, nullable: bool, path: _Path, depth: int
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
        enum = _as_list(schema.get("enum"))
        if type_ == "string" and enum:
            nullable = nullable or any(value is None for value in enum)
            enum = _dedupe(_as_string(value) for value in enum if value is not None)
        if nullable:
            out["nullable"] = True
        if enum:
            out["enum"] = copy.deepcopy(enum)
        if "default" in schema:
            out["default"] = copy.deepcopy(schema["default"])
        examples = _as_list(schema.get("examples"))
        if "example" in schema or examples:
            out["example"] = copy.deepcopy(schema["example"] if "example" in schema else examples[0])
        anyof = _as_list(schema.get("anyOf"))
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
            out |= {key: schema[key] for key in ("minimum", "maximum") if _is_number(schema.get(key))}
        # google-adk sends `{}` as an object; a lone `nullable` has no type of its own either.
        return out if out.keys() - {"nullable"} else {"type": "object", **out}

    def _object_keywords(self, schema: dict[str, Any], path: _Path, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        properties = _as_mapping(schema.get("properties"))
        if properties is not None:
            converted = {name: self.convert(sub, path, depth + 1) for name, sub in properties.items()}
            out["properties"] = converted
            required = _dedupe(r for r in _as_list(schema.get("required")) if _is_key(r, converted))
            if required:
                out["required"] = required
            ordering = _dedupe(p for p in _as_list(schema.get("propertyOrdering")) if _is_key(p, converted))
            if ordering:
                out["propertyOrdering"] = ordering
        return out | _counts(schema, "minProperties", "maxProperties")

    def _items(self, schema: dict[str, Any], path: _Path, depth: int) -> dict[str, Any]:
        members: list[object] = []
        if isinstance(schema.get("prefixItems"), list):
            # 2020-12: `items` next to `prefixItems` describes the items after the tuple.
            members = [*schema["prefixItems"], *_schemas_only([schema.get("items")])]
        elif isinstance(schema.get("items"), list):
            members = [*schema["items"], *_schemas_only([schema.get("additionalItems")])]
        elif "items" in schema:
            return self.convert(schema["items"], path, depth + 1)
        converted = _dedupe(self.convert(member, path, depth + 1) for member in members)
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
        return _without(schema, "type") | parent
    if len(branches) == 1:
        return _merge([parent, branches[0]])
    return parent | {"anyOf": branches}


def _merge(schemas: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Merge raw schemas as `allOf` does here: properties and required united, else the first key wins."""
    merged: dict[str, Any] = {}
    properties: dict[str, list[Any]] = {}
    required: list[Any] = []
    for schema in schemas:
        for key, value in schema.items():
            if key == "properties" and isinstance(value, Mapping):
                for name, sub in cast(Mapping[str, Any], value).items():
                    properties.setdefault(name, []).append(sub)
            elif key == "required" and isinstance(value, list):
                required.extend(cast(list[Any], value))
            else:
                merged.setdefault(key, value)
    if properties:
        # A property defined twice must satisfy both definitions, which is an allOf of them.
        merged["properties"] = {
            name: subs[0] if len(subs) == 1 else {"allOf": subs} for name, subs in properties.items()
        }
    if required:
        merged["required"] = _dedupe(required)
    return merged


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
    names = [value] if isinstance(value, str) else _as_list(value)
    return _dedupe(name for name in names if isinstance(name, str) and name in _TYPES)


def _has_type(value: object, type_: str) -> bool:
    """Whether a JSON value is an instance of a JSON Schema type."""
    match type_:
        case "string":
            return isinstance(value, str)
        case "integer":
            return _as_count(value) is not None or (isinstance(value, int) and not isinstance(value, bool))
        case "number":
            return _is_number(value)
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
        count = _as_count(schema.get(key))
        if count is not None:
            out[key] = count
    return out


def _as_count(value: object) -> int | None:
    """A non-negative integer, with `2.0` read as `2` (2020-12 treats them as equal); else None."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _is_schema(value: object) -> bool:
    return isinstance(value, Mapping | bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_key(value: object, mapping: Mapping[str, Any]) -> bool:
    return isinstance(value, str) and value in mapping


def _as_string(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _schema_dict(node: object) -> dict[str, Any]:
    """A shallow copy of a schema object; booleans and junk count as the empty schema."""
    mapping = _as_mapping(node)
    return dict(mapping) if mapping is not None else {}


def _as_mapping(value: object) -> Mapping[str, Any] | None:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else None


def _schemas_only(values: list[object]) -> list[Mapping[str, Any]]:
    return [mapping for mapping in map(_as_mapping, values) if mapping is not None]


def _as_list(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def _without(schema: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != key}


def _dedupe(values: Iterable[_T]) -> list[_T]:
    """The values in order, each once (by equality, so unhashable values work)."""
    out: list[_T] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out
