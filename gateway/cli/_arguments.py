"""A tool call's arguments typed on a command line: `key=value` pairs converted to what the tool's schema asks for.

`count=3` is the integer 3 for an `integer` property and the string "3" for a `string` one; booleans accept
true/false, yes/no, on/off, 1/0; arrays and objects take JSON (`tags=["a","b"]`); a property whose schema says
nothing takes JSON if the value parses, else the text. `--args JSON` gives a base the pairs add to.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from gateway.errors import GatewayError
from gateway.tools.function_tool import no_such_argument

__all__ = ["call_arguments", "convert_value"]

_INTEGER = re.compile(r"[+-]?\d+")
_TRUE = frozenset({"true", "yes", "y", "on", "1"})
_FALSE = frozenset({"false", "no", "n", "off", "0"})
_ORDER = ("integer", "number", "boolean", "null", "array", "object", "string")
"""The order in which a value is tried against a property's types (text last: "3" is 3 where both fit)."""


def _types(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types a property accepts (`type`, or the types of its `anyOf`/`oneOf` branches)."""
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(kind) for kind in cast("list[Any]", declared)}
    found: set[str] = set()
    for key in ("anyOf", "oneOf"):
        for branch in cast("list[Any]", schema.get(key) or []):
            if isinstance(branch, dict):
                found |= _types(cast("dict[str, Any]", branch))
    if "enum" in schema and not found:
        found = {type_name for value in cast("list[Any]", schema["enum"]) if (type_name := _json_type(value))}
    return found


def _json_type(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else None


_NO_MATCH = object()


def _as(kind: str, text: str) -> Any:
    """`text` as a value of JSON type `kind`, or `_NO_MATCH`."""
    lowered = text.strip().lower()
    if kind == "integer":
        return int(text) if _INTEGER.fullmatch(text.strip()) else _NO_MATCH
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return _NO_MATCH
        if not math.isfinite(number):
            return _NO_MATCH
        return int(text) if _INTEGER.fullmatch(text.strip()) else number
    if kind == "boolean":
        return True if lowered in _TRUE else False if lowered in _FALSE else _NO_MATCH
    if kind == "null":
        return None if lowered in ("null", "none") else _NO_MATCH
    if kind in ("array", "object"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return _NO_MATCH
        return value if _json_type(value) == kind else _NO_MATCH
    return text if kind == "string" else _NO_MATCH


def convert_value(name: str, text: str, schema: Mapping[str, Any] | None) -> Any:
    """`text` converted to a value `schema` accepts.

    Raises:
        GatewayError: no type of the schema fits; the message names the argument, the value and what is expected.
    """
    kinds = _types(schema or {})
    if not kinds:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    for kind in sorted(kinds, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER)):
        value = _as(kind, text)
        if value is _NO_MATCH:
            continue
        choices = cast("list[Any] | None", (schema or {}).get("enum"))
        if choices is not None and value not in choices:
            continue
        return value
    choices = cast("list[Any] | None", (schema or {}).get("enum"))
    expected = (
        f"one of {', '.join(json.dumps(choice) for choice in choices)}"
        if choices is not None
        else " or ".join(sorted(kinds, key=lambda k: _ORDER.index(k) if k in _ORDER else len(_ORDER)))
    )
    hint = ' (JSON, e.g. [1, 2] or {"a": 1})' if kinds & {"array", "object"} else ""
    # Worded as a tool's own argument errors are: `Parameter 'x': <what is wrong> (got <value>)`.
    raise GatewayError(f"Parameter {name!r}: expected {expected}{hint} (got {text!r}).")


def call_arguments(pairs: Sequence[str], args_json: str | None, input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a call: the `--args` JSON object, then each `key=value` pair converted per the schema.

    Raises:
        GatewayError: `--args` is not a JSON object, a pair has no `=`, names no argument of the tool, or has a
            value its type cannot take; the message says which and what to write.
    """
    arguments: dict[str, Any] = {}
    if args_json is not None:
        try:
            parsed = json.loads(args_json)
        except json.JSONDecodeError as exc:
            raise GatewayError(f"--args is not valid JSON ({exc.msg} at column {exc.colno}): {args_json}") from exc
        if not isinstance(parsed, dict):
            raise GatewayError(f"--args must be a JSON object such as '{{\"a\": 1}}', got {args_json}")
        arguments.update(cast("dict[str, Any]", parsed))
    properties = cast("dict[str, Any]", input_schema.get("properties") or {})
    closed = input_schema.get("additionalProperties") is False
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise GatewayError(f"{pair!r} is not an argument: write KEY=VALUE (or pass --args JSON).")
        if name not in properties and (closed or properties):
            raise GatewayError(f"Parameter {name!r}: {no_such_argument(properties)}.")
        arguments[name] = convert_value(name, text, _resolved(properties.get(name), input_schema))
    return arguments


def _resolved(schema: Any, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A property's schema with a local `$ref` (`#/$defs/Unit`, as pydantic writes enums) followed."""
    if not isinstance(schema, dict):
        return None
    found = cast("dict[str, Any]", schema)
    for _ in range(8):
        reference = found.get("$ref")
        if not isinstance(reference, str) or not reference.startswith("#/"):
            break
        target: Any = root
        for part in reference[2:].split("/"):
            target = cast("dict[str, Any]", target).get(part) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            break
        found = {**cast("dict[str, Any]", target), **{k: v for k, v in found.items() if k != "$ref"}}
    return found
