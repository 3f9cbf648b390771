"""FunctionDeclaration ⇄ mcp.types.Tool, including the round trips the adapters guarantee."""

from __future__ import annotations

import dataclasses
import enum
import inspect
import keyword
from typing import Any, Literal, Optional

from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import types
from pydantic import BaseModel

from adapters import (
    FunctionDeclaration,
    declaration_to_mcp_tool,
    function_to_declaration,
    mcp_tool_to_declaration,
)
from adapters.mcp_tool import LONG_RUNNING_META_KEY, is_wrapped_output_schema


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Item(BaseModel):
    name: str
    qty: int = 1


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_a_tool_without_arguments_gets_an_empty_object_schema_not_an_empty_dict() -> None:
    tool = declaration_to_mcp_tool(FunctionDeclaration(name="now", description="Now."))
    assert tool.input_schema == {"type": "object", "properties": {}}


def test_a_non_object_response_is_published_wrapped_as_result() -> None:
    tool = declaration_to_mcp_tool(FunctionDeclaration(name="f", response_json_schema={"type": "integer"}))
    assert tool.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }


def test_an_object_response_is_published_as_it_is() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    tool = declaration_to_mcp_tool(FunctionDeclaration(name="f", response_json_schema=schema))
    assert tool.output_schema == schema


def test_wrapping_lifts_defs_to_the_root_so_refs_still_resolve() -> None:
    def items() -> list[Item]:
        return []

    tool = declaration_to_mcp_tool(function_to_declaration(items))
    assert tool.output_schema is not None
    assert tool.output_schema["properties"]["result"] == {
        "items": {"$ref": "#/$defs/Item"},
        "type": "array",
    }
    assert "Item" in tool.output_schema["$defs"]


def test_hints_become_annotations_and_meta() -> None:
    declaration = FunctionDeclaration(name="wipe", description="Wipe.")
    tool = declaration_to_mcp_tool(
        declaration, title="Wipe it", destructive=True, read_only=False, idempotent=True, long_running=True
    )
    assert tool.title == "Wipe it"
    assert tool.annotations == types.ToolAnnotations(destructive_hint=True, read_only_hint=False, idempotent_hint=True)
    assert tool.meta == {LONG_RUNNING_META_KEY: True}
    wire = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert wire["annotations"] == {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True}
    assert wire["_meta"] == {LONG_RUNNING_META_KEY: True}


def test_a_hint_overrides_the_declarations_own_annotation() -> None:
    declaration = FunctionDeclaration(name="f", annotations={"readOnlyHint": True, "openWorldHint": False})
    tool = declaration_to_mcp_tool(declaration, read_only=False)
    assert tool.annotations == types.ToolAnnotations(read_only_hint=False, open_world_hint=False)


def test_an_mcp_tool_keeps_its_raw_schema_in_the_declaration() -> None:
    raw = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"when": {"type": ["string", "null"], "format": "date-time"}, "k": {"const": 3}},
        "additionalProperties": False,
        "$defs": {"Unused": {"type": "string"}},
    }
    declaration = mcp_tool_to_declaration(types.Tool(name="t", input_schema=raw))
    assert declaration.parameters_json_schema == raw


def test_a_non_object_output_schema_of_a_modern_upstream_survives_the_round_trip() -> None:
    tool = types.Tool(name="t", input_schema={"type": "object"}, output_schema={"type": "array"})
    declaration = mcp_tool_to_declaration(tool)
    assert declaration.response_json_schema == {"type": "array"}
    assert declaration_to_mcp_tool(declaration) == tool


def test_an_upstream_result_wrapper_around_an_object_is_not_unwrapped() -> None:
    wrapped_object = {
        "type": "object",
        "properties": {"result": {"type": "object", "properties": {}}},
        "required": ["result"],
    }
    assert not is_wrapped_output_schema(wrapped_object)
    tool = types.Tool(name="t", input_schema={"type": "object"}, output_schema=wrapped_object)
    assert mcp_tool_to_declaration(tool).response_json_schema == wrapped_object


# --- round trips --------------------------------------------------------------------------------------------

PARAMETER_TYPES: list[Any] = [
    int,
    str,
    float,
    bool,
    list[int],
    dict[str, str],
    Optional[int],  # noqa: UP045 - the spelling under test
    Literal["a", "b"],
    Color,
    Item,
    Point,
    tuple[int, str],
    set[str],
]
RETURN_TYPES: list[Any] = [
    inspect.Signature.empty,
    int,
    str,
    list[Item],
    Item,
    dict[str, int],
    Optional[Item],  # noqa: UP045 - the spelling under test
    Point,
]


@st.composite
def python_functions(draw: st.DrawFn) -> Any:
    identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(lambda n: not keyword.iskeyword(n))
    names = draw(st.lists(identifiers, unique=True, max_size=5))
    parameters: list[inspect.Parameter] = []
    docs: list[str] = []
    for name in names:
        annotation = draw(st.sampled_from(PARAMETER_TYPES))
        default = inspect.Parameter.empty
        if annotation in (int, str, bool) and draw(st.booleans()):
            default = {int: 0, str: "", bool: False}[annotation]
        parameters.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
        )
        if draw(st.booleans()):
            docs.append(f"    {name}: {draw(st.text(alphabet='abc xyz', min_size=1, max_size=20)).strip() or 'x'}")
    returns = draw(st.sampled_from(RETURN_TYPES))

    def func(**kwargs: Any) -> Any:
        return kwargs

    func.__name__ = draw(st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True))
    func.__doc__ = "Summary line.\n\nArgs:\n" + "\n".join(docs) if docs else draw(st.sampled_from([None, "Doc."]))
    func.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
    func.__annotations__ = {p.name: p.annotation for p in parameters}
    if returns is not inspect.Signature.empty:
        func.__annotations__["return"] = returns
    return func


@settings(max_examples=150, deadline=None)
@given(python_functions())
def test_function_to_declaration_to_tool_to_declaration_is_the_identity(func: Any) -> None:
    declaration = function_to_declaration(func)
    tool = declaration_to_mcp_tool(declaration)
    assert tool.input_schema.get("type") == "object"
    assert tool.output_schema is None or tool.output_schema.get("type") == "object"
    assert mcp_tool_to_declaration(tool) == declaration


JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
SCHEMAS = st.recursive(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["string", "integer", "number", "boolean", "null"])},
        optional={"description": st.text(max_size=10), "default": JSON_SCALARS, "const": JSON_SCALARS},
    ),
    lambda inner: (
        st.fixed_dictionaries({"type": st.just("array"), "items": inner})
        | st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.dictionaries(st.text(max_size=6), inner, max_size=3),
            },
            optional={
                "required": st.lists(st.text(max_size=6), max_size=2),
                "additionalProperties": st.booleans(),
            },
        )
        | st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)})
    ),
    max_leaves=10,
)
OBJECT_SCHEMAS = st.builds(
    lambda props, extra: {"type": "object", "properties": props, **extra},
    st.dictionaries(st.text(max_size=6), SCHEMAS, max_size=4),
    st.fixed_dictionaries(
        {},
        optional={
            "$defs": st.dictionaries(st.text(min_size=1, max_size=5), SCHEMAS, max_size=2),
            "$schema": st.just("https://json-schema.org/draft/2020-12/schema"),
            "title": st.text(max_size=8),
        },
    ),
)
OUTPUT_SCHEMAS = (
    st.none()
    | OBJECT_SCHEMAS
    | SCHEMAS
    | SCHEMAS.map(lambda s: {"type": "object", "properties": {"result": s}, "required": ["result"]})
)
ANNOTATIONS = st.none() | st.builds(
    types.ToolAnnotations,
    title=st.none() | st.text(max_size=8),
    read_only_hint=st.none() | st.booleans(),
    destructive_hint=st.none() | st.booleans(),
    idempotent_hint=st.none() | st.booleans(),
    open_world_hint=st.none() | st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(
    name=st.from_regex(r"[A-Za-z0-9_.-]{1,20}", fullmatch=True),
    title=st.none() | st.text(max_size=10),
    description=st.none() | st.text(max_size=30),
    input_schema=OBJECT_SCHEMAS,
    output_schema=OUTPUT_SCHEMAS,
    annotations=ANNOTATIONS,
    meta=st.none() | st.dictionaries(st.text(min_size=1, max_size=8), JSON_VALUES, min_size=1, max_size=3),
)
def test_tool_to_declaration_to_tool_preserves_schemas_annotations_and_meta(
    name: str,
    title: str | None,
    description: str | None,
    input_schema: dict[str, Any],
    output_schema: dict[str, Any] | None,
    annotations: types.ToolAnnotations | None,
    meta: dict[str, Any] | None,
) -> None:
    tool = types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=annotations,
        meta=meta,
    )
    again = declaration_to_mcp_tool(mcp_tool_to_declaration(tool))
    assert again.input_schema == tool.input_schema
    assert again.output_schema == tool.output_schema
    assert again.annotations == tool.annotations
    assert again.meta == tool.meta
    assert (again.name, again.title, again.description) == (tool.name, tool.title, tool.description)
    wire = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert again.model_dump(by_alias=True, mode="json", exclude_none=True) == wire
