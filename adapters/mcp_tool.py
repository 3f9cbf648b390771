"""`FunctionDeclaration` ⇄ `mcp.types.Tool`, with nothing lost either way.

MCP wants an object as a tool's `outputSchema` (before 2026-07-28) and as its structured content, while a Python
function may return anything. A non-object response schema `S` is therefore published wrapped:
`{"type": "object", "properties": {"result": S}, "required": ["result"]}` (with `S`'s `$defs` lifted to the
root so its `$ref`s still resolve), and the server sends `{"result": value}` as structured content. The reverse
direction unwraps exactly that shape, so both round trips are the identity.
"""

from __future__ import annotations

import copy
from typing import Any, Final, cast

from mcp import types

from adapters.declaration import FunctionDeclaration
from adapters.meta_keys import LONG_RUNNING_META_KEY, RAW_OUTPUT_META_KEY

__all__ = [
    "LONG_RUNNING_META_KEY",
    "declaration_to_mcp_tool",
    "is_wrapped_output_schema",
    "mcp_tool_to_declaration",
]

_EMPTY_PARAMETERS: Final[dict[str, Any]] = {"type": "object", "properties": {}}
_WRAPPER_KEYS: Final = frozenset({"type", "properties", "required", "$defs"})
_ANNOTATION_HINTS: Final = {
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
}


def _is_object_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and cast("dict[str, Any]", schema).get("type") == "object"


def _wrap_output_schema(schema: Any) -> dict[str, Any]:
    inner: Any = copy.deepcopy(schema)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
    if isinstance(inner, dict) and "$defs" in inner:
        wrapped["$defs"] = cast("dict[str, Any]", inner).pop("$defs")
    return wrapped


def is_wrapped_output_schema(schema: Any) -> bool:
    """Whether `schema` is the `{"result": ...}` wrapper this module puts around a non-object response schema."""
    if not isinstance(schema, dict) or set(schema) - _WRAPPER_KEYS:  # pyright: ignore[reportUnknownArgumentType]
        return False
    properties = schema.get("properties")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if schema.get("type") != "object" or schema.get("required") != ["result"]:  # pyright: ignore[reportUnknownMemberType]
        return False
    if not isinstance(properties, dict) or list(properties) != ["result"]:  # pyright: ignore[reportUnknownArgumentType]
        return False
    inner = properties["result"]  # pyright: ignore[reportUnknownVariableType]
    if _is_object_schema(inner):
        return False
    # Lifted `$defs` can only go back into a dict schema that has none of its own.
    return "$defs" not in schema or (isinstance(inner, dict) and "$defs" not in inner)


def _unwrap_output_schema(schema: dict[str, Any]) -> Any:
    inner = copy.deepcopy(schema["properties"]["result"])
    if "$defs" in schema:
        inner["$defs"] = copy.deepcopy(schema["$defs"])
    return inner


def declaration_to_mcp_tool(
    declaration: FunctionDeclaration,
    *,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    long_running: bool = False,
    meta: dict[str, Any] | None = None,
) -> types.Tool:
    """Publish a declaration as an MCP tool.

    Args:
        declaration: the tool as a model sees it.
        title: display title; overrides the declaration's.
        read_only: `readOnlyHint`; overrides the declaration's annotation when given.
        destructive: `destructiveHint` (set it for tools that require confirmation).
        idempotent: `idempotentHint`.
        open_world: `openWorldHint`.
        long_running: mark the tool as long-running in `_meta`.
        meta: extra `_meta` entries.

    Returns:
        The tool, with `inputSchema` an object schema (`{"type": "object", "properties": {}}` when the tool takes
        no arguments) and `outputSchema` an object schema wrapping non-object responses as `{"result": ...}`.
    """
    input_schema = copy.deepcopy(declaration.parameters_json_schema)
    if input_schema is None:
        input_schema = copy.deepcopy(_EMPTY_PARAMETERS)
    elif "type" not in input_schema:
        input_schema = {"type": "object", **input_schema}

    tool_meta: dict[str, Any] | None = copy.deepcopy(declaration.meta)
    raw_output = bool(tool_meta and tool_meta.pop(RAW_OUTPUT_META_KEY, False))
    if tool_meta == {} and raw_output:
        tool_meta = None
    response = declaration.response_json_schema
    if response is None:
        output_schema = None
    elif raw_output or _is_object_schema(response):
        output_schema = copy.deepcopy(response)
    else:
        output_schema = _wrap_output_schema(response)
    if long_running or meta:
        tool_meta = {
            **(tool_meta or {}),
            **({LONG_RUNNING_META_KEY: True} if long_running else {}),
            **(meta or {}),
        }

    hints = {
        "read_only": read_only,
        "destructive": destructive,
        "idempotent": idempotent,
        "open_world": open_world,
    }
    given = {_ANNOTATION_HINTS[hint]: value for hint, value in hints.items() if value is not None}
    annotations = (
        None if declaration.annotations is None and not given else {**(declaration.annotations or {}), **given}
    )

    return types.Tool(
        name=declaration.name,
        title=title if title is not None else declaration.title,
        description=declaration.description,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=None if annotations is None else types.ToolAnnotations.model_validate(annotations),
        meta=tool_meta,  # pyright: ignore[reportCallIssue] - the SDK spells this field's alias `_meta` by hand
    )


def mcp_tool_to_declaration(tool: types.Tool) -> FunctionDeclaration:
    """Describe an MCP tool as a declaration, keeping its raw schemas, annotations and `_meta` (as ADK does)."""
    parameters: dict[str, Any] | None = copy.deepcopy(tool.input_schema)
    if parameters == _EMPTY_PARAMETERS:
        parameters = None
    meta: dict[str, Any] | None = copy.deepcopy(tool.meta)
    output = tool.output_schema
    response: Any
    if output is None:
        response = None
    elif is_wrapped_output_schema(output):
        response = _unwrap_output_schema(output)
    else:
        response = copy.deepcopy(output)
        if not _is_object_schema(output):
            meta = {**(meta or {}), RAW_OUTPUT_META_KEY: True}
    annotations = None if tool.annotations is None else tool.annotations.model_dump(by_alias=True, exclude_none=True)
    return FunctionDeclaration(
        name=tool.name,
        description=tool.description,
        parameters_json_schema=parameters,
        response_json_schema=response,
        title=tool.title,
        annotations=annotations,
        meta=meta,
    )
