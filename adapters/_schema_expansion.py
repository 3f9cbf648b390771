"""Expansion of a raw JSON Schema level: `$ref` inlined, `allOf` merged, `oneOf` renamed, null branches folded.

Expansion leaves a schema with no `$ref`, `allOf`, `oneOf` or null `anyOf` branch at its top level, so that every
later conversion rule sees the keywords it merged in. Only local references resolve (`#/...` pointers, against the
document's root or its `$id`); a `$ref` already being expanded on the path is circular.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast
from urllib.parse import unquote

from adapters._json_values import as_list, as_mapping, dedupe, is_schema, schema_dict, without

__all__ = ["Path", "SchemaExpander", "merge"]

_Pointer = tuple[str, ...]
Path = frozenset[_Pointer]
"""The JSON pointers of the `$ref`s being expanded above a schema."""

_MISSING: Any = object()


class SchemaExpander:
    """Expands the schemas of one document; `$ref` pointers resolve against its root."""

    def __init__(self, root: Mapping[str, Any], max_depth: int) -> None:
        self._root = root
        self._max_depth = max_depth
        root_id = root.get("$id")
        self._base = root_id.partition("#")[0] if isinstance(root_id, str) else None

    def expand(self, schema: dict[str, Any], path: Path, depth: int) -> tuple[dict[str, Any], Path]:
        """The schema with its top level expanded, and the path with the refs that expansion followed."""
        if depth > self._max_depth:
            return {}, path
        while True:
            if "oneOf" in schema:
                schema = without(schema, "oneOf") | {"anyOf": schema.get("anyOf", schema["oneOf"])}
            if "$ref" in schema:
                schema, path = self._inline_ref(schema, path)
            elif "allOf" in schema:
                schema, path = self._merge_all_of(schema, path, depth)
            elif any(self._is_null(branch, path) for branch in as_list(schema.get("anyOf"))):
                schema, path = self._fold_null_branches(schema, path, depth)
            else:
                return schema, path

    def _inline_ref(self, schema: dict[str, Any], path: Path) -> tuple[dict[str, Any], Path]:
        ref = schema["$ref"]
        pointer = self._pointer(ref)
        target = _MISSING if pointer is None else self._lookup(pointer)
        if pointer is None or not is_schema(target):
            resolved: dict[str, Any] = {"type": "object", "description": f"Unresolved reference {ref}."}
        elif pointer in path:
            resolved = {"type": "object", "description": f"Circular reference to {self._name(pointer)}."}
        else:
            resolved = schema_dict(target)
            path = path | {pointer}
        return merge([without(schema, "$ref"), resolved]), path

    def _merge_all_of(self, schema: dict[str, Any], path: Path, depth: int) -> tuple[dict[str, Any], Path]:
        parts = [without(schema, "allOf")]
        merged_path = path
        for branch in as_list(schema["allOf"]):
            expanded, branch_path = self.expand(schema_dict(branch), path, depth + 1)
            parts.append(expanded)
            merged_path |= branch_path
        return merge(parts), merged_path

    def _fold_null_branches(self, schema: dict[str, Any], path: Path, depth: int) -> tuple[dict[str, Any], Path]:
        branches = [b for b in as_list(schema["anyOf"]) if not self._is_null(b, path)]
        parent = without(schema, "anyOf") | {"nullable": True}
        if len(branches) == 1:
            branch, path = self.expand(schema_dict(branches[0]), path, depth + 1)
            return merge([parent, branch]), path
        return (parent | {"anyOf": branches} if branches else parent), path

    def _is_null(self, node: object, path: Path) -> bool:
        """Whether `node` is a `{"type": "null"}` schema, following refs but nothing else."""
        seen = set(path)
        schema = as_mapping(node)
        while schema is not None and "$ref" in schema and "type" not in schema:
            pointer = self._pointer(schema["$ref"])
            if pointer is None or pointer in seen:
                return False
            seen.add(pointer)
            schema = as_mapping(self._lookup(pointer))
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
            mapping = as_mapping(node)
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


def merge(schemas: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
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
        merged["required"] = dedupe(required)
    return merged
