"""Tests for `adapters.gemini_schema.to_gemini_schema`."""

from __future__ import annotations

import copy
import enum
import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from adapters.gemini_schema import to_gemini_schema

KEPT = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "items",
        "properties",
        "required",
        "anyOf",
        "default",
        "example",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "pattern",
        "propertyOrdering",
    }
)
GEMINI_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object"})
COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def schema_levels(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every schema in a converted schema: itself, its properties, items and anyOf members."""
    yield schema
    for sub in schema.get("properties", {}).values():
        yield from schema_levels(sub)
    if "items" in schema:
        yield from schema_levels(schema["items"])
    for sub in schema.get("anyOf", []):
        yield from schema_levels(sub)


def assert_gemini_shaped(schema: dict[str, Any]) -> None:
    for level in schema_levels(schema):
        assert isinstance(level, dict)
        assert level, "an empty schema should have become an object"
        assert level.keys() <= KEPT, level.keys() - KEPT
        assert level.get("type", "string") in GEMINI_TYPES
        assert level.get("nullable", True) is True
        if level.get("type") == "array":
            assert "items" in level
        if "required" in level:
            assert level["required"]
            assert set(level["required"]) <= level.get("properties", {}).keys()
        if level.get("type") == "string" and "enum" in level:
            assert all(isinstance(value, str) for value in level["enum"])
        for key in COUNTS:
            if key in level:
                assert type(level[key]) is int


# Rule 1: $ref.


def test_a_ref_into_defs_is_inlined() -> None:
    schema = {
        "type": "object",
        "properties": {"pet": {"$ref": "#/$defs/Pet"}},
        "$defs": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}},
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {"pet": {"type": "object", "properties": {"name": {"type": "string"}}}},
    }


def test_a_ref_into_draft07_definitions_is_inlined() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"size": {"$ref": "#/definitions/Size"}},
        "definitions": {"Size": {"type": "integer", "minimum": 1}},
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {"size": {"type": "integer", "minimum": 1}},
    }


def test_escaped_and_percent_encoded_pointers_resolve() -> None:
    schema = {
        "properties": {
            "slash": {"$ref": "#/$defs/a~1b"},
            "tilde": {"$ref": "#/$defs/c~0d"},
            "space": {"$ref": "#/$defs/e%20f"},
            "nested": {"$ref": "#/$defs/Outer/properties/inner"},
            "indexed": {"$ref": "#/$defs/Outer/properties/pair/prefixItems/1"},
        },
        "$defs": {
            "a/b": {"type": "string"},
            "c~d": {"type": "boolean"},
            "e f": {"type": "number"},
            "Outer": {
                "properties": {
                    "inner": {"type": "integer"},
                    "pair": {"prefixItems": [{"type": "string"}, {"type": "boolean"}]},
                }
            },
        },
    }

    assert to_gemini_schema(schema)["properties"] == {
        "slash": {"type": "string"},
        "tilde": {"type": "boolean"},
        "space": {"type": "number"},
        "nested": {"type": "integer"},
        "indexed": {"type": "boolean"},
    }


def test_a_ref_relative_to_the_root_id_resolves() -> None:
    schema = {
        "$id": "https://example.com/tool.json",
        "properties": {"a": {"$ref": "https://example.com/tool.json#/$defs/A"}},
        "$defs": {"A": {"type": "string"}},
    }

    assert to_gemini_schema(schema)["properties"] == {"a": {"type": "string"}}


def test_sibling_keywords_win_over_the_referenced_schema() -> None:
    schema = {
        "properties": {
            "when": {
                "$ref": "#/$defs/Stamp",
                "description": "Local description.",
                "title": "When",
                "default": "2024-01-01T00:00:00Z",
            }
        },
        "$defs": {
            "Stamp": {
                "type": "string",
                "format": "date-time",
                "description": "Shared description.",
                "title": "Stamp",
            }
        },
    }

    assert to_gemini_schema(schema)["properties"]["when"] == {
        "type": "string",
        "format": "date-time",
        "title": "When",
        "description": "Local description.",
        "default": "2024-01-01T00:00:00Z",
    }


def test_sibling_properties_are_united_with_the_referenced_ones() -> None:
    schema = {
        "$ref": "#/$defs/Base",
        "properties": {"extra": {"type": "boolean"}},
        "required": ["extra"],
        "$defs": {"Base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {"extra": {"type": "boolean"}, "id": {"type": "integer"}},
        "required": ["extra", "id"],
    }


def test_a_recursive_ref_becomes_a_described_object() -> None:
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/$defs/Node"}, "label": {"type": "string"}},
            }
        },
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "next": {"type": "object", "description": "Circular reference to Node."},
            "label": {"type": "string"},
        },
    }


def test_a_recursive_ref_keeps_its_local_description() -> None:
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {"Node": {"properties": {"parent": {"$ref": "#/$defs/Node", "description": "The parent node."}}}},
    }

    assert to_gemini_schema(schema)["properties"]["parent"] == {
        "type": "object",
        "description": "The parent node.",
    }


def test_a_ref_to_the_root_is_circular_inside_the_root() -> None:
    schema = {"title": "Folder", "properties": {"sub": {"$ref": "#"}}}

    assert to_gemini_schema(schema)["properties"]["sub"] == {
        "type": "object",
        "description": "Circular reference to Folder.",
    }


def test_mutually_recursive_refs_stop_at_the_first_repeat() -> None:
    schema = {
        "$ref": "#/$defs/A",
        "$defs": {
            "A": {"properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"properties": {"a": {"$ref": "#/$defs/A"}}},
        },
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "b": {
                "type": "object",
                "properties": {"a": {"type": "object", "description": "Circular reference to A."}},
            }
        },
    }


def test_a_ref_used_in_two_sibling_places_is_inlined_in_both() -> None:
    schema = {
        "properties": {"home": {"$ref": "#/$defs/Address"}, "work": {"$ref": "#/$defs/Address"}},
        "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }

    out = to_gemini_schema(schema)

    address = {"type": "object", "properties": {"city": {"type": "string"}}}
    assert out["properties"] == {"home": address, "work": address}


@pytest.mark.parametrize(
    "ref",
    [
        "https://example.com/schemas/pet.json",
        "other.json#/$defs/Pet",
        "#/$defs/Missing",
        "#/definitions/Missing",
        "#anchor",
        "#/$defs/List/7",
    ],
)
def test_an_unresolvable_ref_becomes_a_described_object(ref: str) -> None:
    schema = {"properties": {"pet": {"$ref": ref}}, "$defs": {"List": {"type": "array"}}}

    assert to_gemini_schema(schema)["properties"]["pet"] == {
        "type": "object",
        "description": f"Unresolved reference {ref}.",
    }


def test_defs_and_definitions_are_removed() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "$defs": {"A": {"type": "string"}},
        "definitions": {"B": {"type": "integer"}},
    }

    assert to_gemini_schema(schema) == {"type": "object", "properties": {"a": {"type": "string"}}}


# Rule 2: nullability.


def test_an_anyof_with_a_null_branch_becomes_nullable() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}

    assert to_gemini_schema(schema) == {
        "nullable": True,
        "anyOf": [{"type": "string"}, {"type": "integer"}],
    }


def test_a_single_remaining_branch_is_merged_into_the_parent_keeping_its_annotations() -> None:
    schema = {
        "anyOf": [{"$ref": "#/$defs/Name"}, {"type": "null"}],
        "title": "Nickname",
        "description": "What friends call you.",
        "default": None,
        "$defs": {"Name": {"type": "string", "title": "Name", "description": "A name.", "maxLength": 20}},
    }

    assert to_gemini_schema(schema) == {
        "type": "string",
        "title": "Nickname",
        "description": "What friends call you.",
        "nullable": True,
        "default": None,
        "maxLength": 20,
    }


def test_oneof_with_a_null_branch_is_treated_like_anyof() -> None:
    schema = {"oneOf": [{"type": "null"}, {"type": "boolean"}]}

    assert to_gemini_schema(schema) == {"type": "boolean", "nullable": True}


def test_a_null_branch_behind_a_ref_counts_as_null() -> None:
    schema = {
        "anyOf": [{"type": "integer"}, {"$ref": "#/$defs/Nothing"}],
        "$defs": {"Nothing": {"type": "null"}},
    }

    assert to_gemini_schema(schema) == {"type": "integer", "nullable": True}


def test_a_type_array_with_null_becomes_a_nullable_type() -> None:
    assert to_gemini_schema({"type": ["string", "null"], "minLength": 1}) == {
        "type": "string",
        "nullable": True,
        "minLength": 1,
    }


def test_a_type_array_with_several_types_becomes_anyof() -> None:
    schema = {"type": ["string", "integer", "null"], "description": "An id.", "maxLength": 8, "minimum": 0}

    assert to_gemini_schema(schema) == {
        "description": "An id.",
        "nullable": True,
        "anyOf": [{"type": "string", "maxLength": 8}, {"type": "integer", "minimum": 0}],
    }


def test_a_type_array_with_an_enum_keeps_only_branches_with_values() -> None:
    schema = {"type": ["string", "integer", "boolean"], "enum": ["auto", 1, 2]}

    assert to_gemini_schema(schema) == {
        "anyOf": [{"type": "string", "enum": ["auto"]}, {"type": "integer", "enum": [1, 2]}]
    }


def test_type_null_alone_becomes_a_nullable_object() -> None:
    assert to_gemini_schema({"type": "null", "description": "Always null."}) == {
        "type": "object",
        "description": "Always null.",
        "nullable": True,
    }


# Rule 3: oneOf, allOf, const, examples.


def test_oneof_becomes_anyof() -> None:
    schema = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]}

    assert to_gemini_schema(schema) == {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}}]}


def test_allof_is_merged_into_one_schema() -> None:
    schema = {
        "description": "Own description.",
        "allOf": [
            {"$ref": "#/$defs/Named"},
            {
                "type": "object",
                "description": "Second description.",
                "properties": {"age": {"type": "integer"}},
                "required": ["age", "name"],
            },
        ],
        "$defs": {
            "Named": {
                "type": "object",
                "title": "Named",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
            }
        },
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "title": "Named",
        "description": "Own description.",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    }


def test_a_property_defined_in_two_allof_branches_is_merged_too() -> None:
    schema = {
        "allOf": [
            {"properties": {"tag": {"type": "string", "description": "A tag."}}},
            {"properties": {"tag": {"maxLength": 10, "description": "Ignored."}}},
        ]
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {"tag": {"type": "string", "description": "A tag.", "maxLength": 10}},
    }


def test_const_becomes_a_one_value_enum() -> None:
    assert to_gemini_schema({"const": "fixed", "type": "string"}) == {"type": "string", "enum": ["fixed"]}
    assert to_gemini_schema({"const": 3}) == {"enum": [3]}


def test_examples_become_the_first_example() -> None:
    assert to_gemini_schema({"type": "string", "examples": ["first", "second"]}) == {
        "type": "string",
        "example": "first",
    }


def test_an_existing_example_wins_over_examples() -> None:
    assert to_gemini_schema({"type": "integer", "example": 1, "examples": [2]}) == {
        "type": "integer",
        "example": 1,
    }


# Rule 4: enum.


def test_a_string_enum_stringifies_other_values_and_turns_null_into_nullable() -> None:
    schema = {"type": "string", "enum": ["a", 1, True, None, {"k": [1]}, 1.5]}

    assert to_gemini_schema(schema) == {
        "type": "string",
        "nullable": True,
        "enum": ["a", "1", "true", '{"k": [1]}', "1.5"],
    }


def test_an_untyped_all_string_enum_becomes_a_string_enum() -> None:
    assert to_gemini_schema({"enum": ["red", "green", None]}) == {
        "type": "string",
        "nullable": True,
        "enum": ["red", "green"],
    }


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "enum": [1, 2, 3]},
        {"type": "number", "enum": [0.5, 1]},
        {"type": "boolean", "enum": [True]},
        {"enum": ["a", 1, None]},
    ],
)
def test_enums_of_other_types_are_kept_as_they_are(schema: dict[str, Any]) -> None:
    assert to_gemini_schema(schema) == schema


# Rule 5: format.


@pytest.mark.parametrize(
    ("type_", "fmt", "kept"),
    [
        ("string", "date-time", True),
        ("string", "enum", True),
        ("integer", "int32", True),
        ("integer", "int64", True),
        ("number", "float", True),
        ("number", "double", True),
        ("string", "email", False),
        ("string", "uri", False),
        ("string", "date", False),
        ("string", "int32", False),
        ("number", "int64", False),
        ("integer", "double", False),
    ],
)
def test_only_formats_gemini_knows_are_kept(type_: str, fmt: str, kept: bool) -> None:
    out = to_gemini_schema({"type": type_, "format": fmt})

    assert out == ({"type": type_, "format": fmt} if kept else {"type": type_})


# Rule 6: arrays.


def test_an_array_without_items_gets_string_items() -> None:
    assert to_gemini_schema({"type": "array"}) == {"type": "array", "items": {"type": "string"}}


def test_prefix_items_with_equal_schemas_become_one_items_schema() -> None:
    schema = {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "minItems": 2}

    assert to_gemini_schema(schema) == {"type": "array", "items": {"type": "number"}, "minItems": 2}


def test_prefix_items_with_different_schemas_become_anyof_items() -> None:
    schema = {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "integer"}, {"type": "string"}],
        "items": {"type": "boolean"},
    }

    assert to_gemini_schema(schema) == {
        "type": "array",
        "items": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}]},
    }


def test_draft07_array_items_are_treated_like_prefix_items() -> None:
    schema = {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False}

    assert to_gemini_schema(schema) == {
        "type": "array",
        "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    }


# Rule 7: required and property names.


def test_required_names_missing_from_properties_are_dropped() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "ghost", "a"]}

    assert to_gemini_schema(schema)["required"] == ["a"]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": []},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["ghost"]},
        {"type": "object", "required": ["a"]},
    ],
)
def test_an_empty_required_is_removed(schema: dict[str, Any]) -> None:
    assert "required" not in to_gemini_schema(schema)


def test_property_names_are_never_changed() -> None:
    names = ["$ref", "type", "snake_case", "camelCase", "with space", "ünïcode", "a/b", "~0"]
    schema = {"type": "object", "properties": {name: {"type": "string"} for name in names}, "required": names}

    out = to_gemini_schema(schema)

    assert list(out["properties"]) == names
    assert out["required"] == names


def test_property_ordering_keeps_only_known_names() -> None:
    schema = {
        "type": "object",
        "properties": {"b": {"type": "string"}, "a": {"type": "string"}},
        "propertyOrdering": ["b", "zzz", "a"],
    }

    assert to_gemini_schema(schema)["propertyOrdering"] == ["b", "a"]


# Rule 8: empty schemas and implied types.


@pytest.mark.parametrize("schema", [{}, True, False, {"$comment": "anything", "not": {}}])
def test_an_empty_or_boolean_schema_becomes_an_object(schema: dict[str, Any] | bool) -> None:
    assert to_gemini_schema(schema) == {"type": "object"}


def test_a_schema_with_properties_but_no_type_is_an_object() -> None:
    assert to_gemini_schema({"properties": {"x": {"type": "number"}}}) == {
        "type": "object",
        "properties": {"x": {"type": "number"}},
    }


def test_a_schema_with_items_but_no_type_is_an_array() -> None:
    assert to_gemini_schema({"items": {"type": "integer"}}) == {
        "type": "array",
        "items": {"type": "integer"},
    }


def test_a_typeless_schema_with_only_annotations_stays_typeless() -> None:
    assert to_gemini_schema({"description": "Anything at all."}) == {"description": "Anything at all."}


# Rule 9: the kept keywords.


def test_every_kept_keyword_survives() -> None:
    string = {
        "type": "string",
        "format": "date-time",
        "title": "T",
        "description": "D",
        "nullable": True,
        "default": "2024-01-01T00:00:00Z",
        "example": "2024-01-02T00:00:00Z",
        "minLength": 1,
        "maxLength": 30,
        "pattern": "^2",
    }
    schema = {
        "type": "object",
        "properties": {
            "s": string,
            "e": {"type": "string", "enum": ["x", "y"]},
            "n": {"type": "number", "minimum": 0.5, "maximum": 9},
            "a": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
            "u": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["s"],
        "minProperties": 1,
        "maxProperties": 5,
        "propertyOrdering": ["s", "e", "n", "a", "u"],
    }

    assert to_gemini_schema(schema) == schema


def test_unsupported_keywords_are_dropped() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://example.com/s.json",
        "$comment": "c",
        "$anchor": "top",
        "type": "object",
        "properties": {
            "n": {
                "type": "number",
                "exclusiveMinimum": 0,
                "exclusiveMaximum": 10,
                "multipleOf": 2,
                "readOnly": True,
                "writeOnly": False,
                "deprecated": True,
            },
            "s": {"type": "string", "contentEncoding": "base64", "contentMediaType": "image/png"},
            "l": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "contains": {}},
        },
        "additionalProperties": False,
        "patternProperties": {"^x": {}},
        "unevaluatedProperties": False,
        "propertyNames": {"maxLength": 3},
        "not": {"required": ["x"]},
        "if": {"required": ["n"]},
        "then": {"required": ["s"]},
        "else": {},
        "dependentSchemas": {"n": {}},
        "dependentRequired": {"n": ["s"]},
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "n": {"type": "number"},
            "s": {"type": "string"},
            "l": {"type": "array", "items": {"type": "string"}},
        },
    }


@pytest.mark.parametrize("value", [1.5, "3", True, -1, None])
def test_a_count_that_is_not_a_non_negative_integer_is_dropped(value: object) -> None:
    assert to_gemini_schema({"type": "string", "minLength": value}) == {"type": "string"}


def test_an_integral_float_count_becomes_an_int() -> None:
    out = to_gemini_schema({"type": "array", "items": {}, "maxItems": 3.0})

    assert out["maxItems"] == 3
    assert type(out["maxItems"]) is int


def test_keywords_of_another_type_are_dropped() -> None:
    schema = {"type": "integer", "minLength": 1, "items": {}, "properties": {}, "minimum": 2}

    assert to_gemini_schema(schema) == {"type": "integer", "minimum": 2}


# Rule 10: recursion and junk.


def test_nested_schemas_are_converted_recursively() -> None:
    schema = {
        "type": "object",
        "properties": {
            "matrix": {
                "type": "array",
                "items": {"type": "array", "items": {"type": ["number", "null"], "exclusiveMinimum": 0}},
            },
            "choice": {"oneOf": [{"const": "a"}, {"properties": {"x": {"type": "null"}}}]},
        },
    }

    assert to_gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "matrix": {
                "type": "array",
                "items": {"type": "array", "items": {"type": "number", "nullable": True}},
            },
            "choice": {
                "anyOf": [
                    {"type": "string", "enum": ["a"]},
                    {"type": "object", "properties": {"x": {"type": "object", "nullable": True}}},
                ]
            },
        },
    }


def test_non_dict_junk_in_schema_positions_is_treated_as_empty() -> None:
    schema = {
        "type": "object",
        "properties": {"a": 42, "b": None, "c": True, "d": "string"},
        "anyOf": [[1, 2], "x"],
    }

    object_ = {"type": "object"}
    assert to_gemini_schema(schema) == {
        "type": "object",
        "anyOf": [object_, object_],
        "properties": {"a": object_, "b": object_, "c": object_, "d": object_},
    }
    assert to_gemini_schema({"type": "array", "items": 7}) == {"type": "array", "items": object_}


def test_a_very_deep_schema_is_cut_off_instead_of_raising() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(2000):
        schema = {"type": "array", "items": schema}

    out = to_gemini_schema(schema)

    deepest = list(schema_levels(out))[-1]
    assert deepest["type"] == "object"
    assert "too deeply" in deepest["description"]


def test_the_input_is_not_mutated_and_the_output_shares_nothing_with_it() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "default": ["a"], "items": {"$ref": "#/$defs/Tag"}}},
        "$defs": {"Tag": {"type": "string", "enum": ["a", 1]}},
    }
    before = copy.deepcopy(schema)

    out = to_gemini_schema(schema)
    out["properties"]["tags"]["default"].append("b")
    out["properties"]["tags"]["items"]["enum"].append("c")

    assert schema == before


# Real schemas from pydantic.


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(BaseModel):
    """Where someone lives."""

    street: str
    postcode: str | None = None


class Person(BaseModel):
    """A person."""

    name: str = Field(description="Full name.")
    favourite: Color
    priority: Priority = Priority.LOW
    home: Address
    work: Address | None = None
    nickname: str | None = None
    mode: Literal["fast", "slow"] = "fast"
    kind: Literal["person"] = "person"
    scores: dict[str, int] = Field(default_factory=dict)


class Tree(BaseModel):
    value: int
    children: list[Tree] = Field(default_factory=list)


def test_a_pydantic_model_converts_with_no_ref_left() -> None:
    out = to_gemini_schema(Person.model_json_schema())

    assert_gemini_shaped(out)
    assert "$ref" not in json.dumps(out)
    properties = out["properties"]
    assert out["required"] == ["name", "favourite", "home"]
    assert properties["name"] == {"type": "string", "title": "Name", "description": "Full name."}
    assert properties["favourite"] == {"type": "string", "title": "Color", "enum": ["red", "green"]}
    assert properties["priority"] == {"type": "integer", "title": "Priority", "enum": [1, 2], "default": 1}
    address = {
        "type": "object",
        "title": "Address",
        "description": "Where someone lives.",
        "properties": {
            "street": {"type": "string", "title": "Street"},
            "postcode": {"type": "string", "title": "Postcode", "nullable": True, "default": None},
        },
        "required": ["street"],
    }
    assert properties["home"] == address
    assert properties["work"] == address | {"nullable": True, "default": None}
    assert properties["nickname"] == {
        "type": "string",
        "title": "Nickname",
        "nullable": True,
        "default": None,
    }
    assert properties["mode"] == {
        "type": "string",
        "title": "Mode",
        "enum": ["fast", "slow"],
        "default": "fast",
    }
    assert properties["kind"] == {"type": "string", "title": "Kind", "enum": ["person"], "default": "person"}
    assert properties["scores"] == {"type": "object", "title": "Scores"}


def test_a_recursive_pydantic_model_converts_with_a_circular_placeholder() -> None:
    out = to_gemini_schema(Tree.model_json_schema())

    assert_gemini_shaped(out)
    assert out == {
        "type": "object",
        "title": "Tree",
        "properties": {
            "value": {"type": "integer", "title": "Value"},
            "children": {
                "type": "array",
                "title": "Children",
                "items": {"type": "object", "description": "Circular reference to Tree."},
            },
        },
        "required": ["value"],
    }


def test_a_pydantic_model_nested_in_a_list_of_a_recursive_model_converts() -> None:
    class Forest(BaseModel):
        trees: list[Tree]
        biggest: Tree | None = None

    out = to_gemini_schema(Forest.model_json_schema())

    assert_gemini_shaped(out)
    tree = out["properties"]["trees"]["items"]
    assert tree["properties"]["children"]["items"] == {
        "type": "object",
        "description": "Circular reference to Tree.",
    }
    assert out["properties"]["biggest"]["nullable"] is True
    assert out["properties"]["biggest"]["properties"] == tree["properties"]


# Property-based tests.

TYPES = ["string", "number", "integer", "boolean", "array", "object", "null"]
PROPERTY_NAMES = st.sampled_from(["a", "b", "c", "$ref", "type", "items"])
DEF_NAMES = ["A", "B", "Missing"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=4),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=4,
)
extras = st.fixed_dictionaries(
    {},
    optional={
        "title": st.text(max_size=4),
        "description": st.text(max_size=4),
        "default": json_values,
        "examples": st.lists(json_values, max_size=2),
        "format": st.sampled_from(["date-time", "email", "int32", "int64", "double", "enum"]),
        "minLength": st.integers(0, 3) | st.floats(0, 3),
        "maxItems": st.integers(0, 3),
        "minimum": st.integers(-3, 3) | st.floats(-3, 3),
        "pattern": st.just("^a"),
        "nullable": st.booleans(),
        "additionalProperties": st.booleans(),
        "exclusiveMinimum": st.integers(-3, 3),
        "uniqueItems": st.booleans(),
        "$comment": st.text(max_size=3),
    },
)


def with_extras(base: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda schema, more: {**more, **schema}, base, extras)


leaf_schemas = st.one_of(
    st.booleans(),
    st.just({}),
    with_extras(st.builds(lambda t: {"type": t}, st.sampled_from(TYPES))),
    with_extras(
        st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True))
    ),
    with_extras(st.builds(lambda value: {"const": value}, json_values)),
    with_extras(
        st.builds(
            lambda values, typed: {"enum": values, **({"type": "string"} if typed else {})},
            st.lists(json_values, min_size=1, max_size=4),
            st.booleans(),
        )
    ),
    with_extras(st.builds(lambda name: {"$ref": f"#/$defs/{name}"}, st.sampled_from(DEF_NAMES))),
    st.sampled_from([{"$ref": "#"}, {"$ref": "#/definitions/Old"}, {"$ref": "https://example.com/x.json"}]),
)


def compound_schemas(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    branches = st.lists(children, min_size=1, max_size=3)
    return st.one_of(
        with_extras(
            st.builds(
                lambda props, required: {"type": "object", "properties": props, "required": required},
                st.dictionaries(PROPERTY_NAMES, children, max_size=3),
                st.lists(PROPERTY_NAMES, max_size=3),
            )
        ),
        st.builds(lambda props: {"properties": props}, st.dictionaries(PROPERTY_NAMES, children, max_size=3)),
        with_extras(st.builds(lambda item: {"type": "array", "items": item}, children)),
        st.builds(lambda items: {"items": items}, branches),
        st.builds(lambda items, rest: {"prefixItems": items, "items": rest}, branches, children),
        st.builds(
            lambda options, null: {"anyOf": options + ([{"type": "null"}] if null else [])},
            branches,
            st.booleans(),
        ),
        st.builds(lambda options: {"oneOf": [*options, {"type": "null"}]}, branches),
        with_extras(st.builds(lambda options: {"oneOf": options}, branches)),
        with_extras(st.builds(lambda parts: {"allOf": parts}, branches)),
        with_extras(
            st.builds(
                lambda target, sub: {"$ref": f"#/$defs/{target}", "properties": {"extra": sub}},
                st.sampled_from(DEF_NAMES),
                children,
            )
        ),
        st.builds(lambda sub: {"not": sub, "if": sub, "additionalProperties": sub}, children),
    )


schemas = st.recursive(leaf_schemas, compound_schemas, max_leaves=8)
root_schemas = st.one_of(
    st.booleans(),
    st.builds(
        lambda body, defs, old: {
            **(body if isinstance(body, dict) else {"allOf": [body]}),
            "$defs": defs,
            "definitions": old,
        },
        schemas,
        st.dictionaries(st.sampled_from(["A", "B"]), schemas, max_size=2),
        st.dictionaries(st.just("Old"), schemas, max_size=1),
    ),
)
FAST = settings(max_examples=200, deadline=None)


@FAST
@given(root_schemas)
def test_any_schema_converts_to_the_gemini_subset_without_raising(schema: dict[str, Any] | bool) -> None:
    out = to_gemini_schema(schema)

    assert_gemini_shaped(out)
    json.dumps(out)


@FAST
@given(root_schemas)
def test_converting_never_mutates_the_input(schema: dict[str, Any] | bool) -> None:
    before = copy.deepcopy(schema)

    to_gemini_schema(schema)

    assert schema == before


@FAST
@given(root_schemas)
def test_converting_twice_changes_nothing(schema: dict[str, Any] | bool) -> None:
    once = to_gemini_schema(schema)

    assert to_gemini_schema(once) == once
