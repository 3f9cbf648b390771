"""Python callables → FunctionDeclaration."""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import AsyncIterator, Generator
from typing import Annotated, Any, Literal, Optional, Union

import pydantic
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from adapters import function_to_declaration, parameters_model


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Item(BaseModel):
    name: str = Field(description="what it is")
    qty: int = 1


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Options(TypedDict):
    verbose: bool


class Ctx:
    """Stands in for a runtime-injected context type."""


class Opaque:
    """A type pydantic has no schema for."""


def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    The body says more.

    Args:
        a: the first number.
        b: the second number.

    Returns:
        The sum.
    """
    return a + b


def test_name_and_description_come_from_the_function_without_the_args_block_but_with_its_returns() -> None:
    declaration = function_to_declaration(add)
    assert declaration.name == "add"
    assert declaration.description == "Add two numbers.\n\nThe body says more.\n\nReturns:\n    The sum."


def lookup_order_status(order_id: str) -> dict[str, Any]:
    """Fetches the current status of a customer's order using its ID.

    Use this tool ONLY when a user explicitly asks for the status of a specific order.

    Args:
        order_id: The unique identifier of the order to look up.
          It is printed on the receipt.

    Returns:
        A dictionary indicating the outcome. On success, status is 'success' and includes an 'order' dictionary.
        Example error: {'status': 'error', 'error_message': 'Order ID not found.'}

    Raises:
        ConnectionError: the order service is down.
    """
    return {"status": "success", "order": {"id": order_id}}


def test_the_returns_and_raises_sections_stay_in_the_description_word_for_word() -> None:
    description = function_to_declaration(lookup_order_status).description

    assert description == (
        "Fetches the current status of a customer's order using its ID.\n\n"
        "Use this tool ONLY when a user explicitly asks for the status of a specific order.\n\n"
        "Returns:\n"
        "    A dictionary indicating the outcome. On success, status is 'success' and includes an 'order' dictionary.\n"
        "    Example error: {'status': 'error', 'error_message': 'Order ID not found.'}\n\n"
        "Raises:\n"
        "    ConnectionError: the order service is down."
    )


def test_a_section_that_gives_no_parameter_descriptions_stays_in_the_description() -> None:
    def scale(a: int, factor: int = 2) -> int:
        """Scale a number.

        Args:
            a: the number.

        Keyword Args:
            factor: how much.
        """
        return a * factor

    declaration = function_to_declaration(scale)

    assert declaration.description == "Scale a number.\n\nKeyword Args:\n    factor: how much."
    assert declaration.parameters_json_schema is not None
    assert declaration.parameters_json_schema["properties"]["a"]["description"] == "the number."


def test_numpy_and_rest_docstrings_keep_their_returns_sections_too() -> None:
    def numpy_style(a: int) -> int:
        """Do a thing.

        Parameters
        ----------
        a : int
            how many times

        Returns
        -------
        int
            the count
        """
        return a

    def rest_style(a: int) -> int:
        """Do a thing.

        :param a: how many times
            (at most ten)
        :returns: the count
        """
        return a

    assert function_to_declaration(numpy_style).description == "Do a thing.\n\nReturns\n-------\nint\n    the count"
    assert function_to_declaration(rest_style).description == "Do a thing.\n\n:returns: the count"


def test_each_args_entry_becomes_its_parameter_description() -> None:
    schema = function_to_declaration(add).parameters_json_schema
    assert schema is not None
    assert schema["properties"]["a"] == {"type": "integer", "title": "A", "description": "the first number."}
    assert schema["properties"]["b"]["description"] == "the second number."


def test_parameters_have_adk_shape_with_defaults_and_required() -> None:
    schema = function_to_declaration(add).parameters_json_schema
    assert schema is not None
    assert schema["title"] == "addParams"
    assert schema["type"] == "object"
    assert schema["required"] == ["a"]
    assert schema["properties"]["b"]["default"] == 2


def test_numpy_and_rest_docstrings_give_parameter_descriptions_too() -> None:
    def numpy_style(a: int) -> None:
        """Do a thing.

        Parameters
        ----------
        a : int
            how many times
        """

    def rest_style(a: int) -> None:
        """Do a thing.

        :param a: how many times
        """

    for func in (numpy_style, rest_style):
        declaration = function_to_declaration(func)
        assert declaration.description == "Do a thing."
        assert declaration.parameters_json_schema is not None
        assert declaration.parameters_json_schema["properties"]["a"]["description"] == "how many times"


def test_an_annotated_field_description_wins_over_the_docstring() -> None:
    def f(a: Annotated[str, Field(description="from Field")]) -> None:
        """F.

        Args:
            a: from the docstring
        """

    schema = function_to_declaration(f).parameters_json_schema
    assert schema is not None
    assert schema["properties"]["a"]["description"] == "from Field"


def test_rich_types_map_to_json_schema() -> None:
    def rich(
        text: str,
        ratio: float,
        flag: bool,
        maybe: Optional[int],  # noqa: UP045 - the spelling under test
        either: Union[int, str],  # noqa: UP007 - the spelling under test
        mode: Literal["any", "all"],
        color: Color,
        level: Level,
        tags: list[str],
        counts: dict[str, int],
        pair: tuple[int, str],
        unique: set[int],
        options: Options,
        point: Point,
        items: list[Item],
        untyped,
    ) -> None:
        """Rich."""

    schema = function_to_declaration(rich).parameters_json_schema
    assert schema is not None
    props = schema["properties"]
    assert props["text"]["type"] == "string"
    assert props["ratio"]["type"] == "number"
    assert props["flag"]["type"] == "boolean"
    assert props["maybe"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert "maybe" in schema["required"]  # Optional without a default is still required, as in ADK
    assert props["either"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert props["mode"] == {"enum": ["any", "all"], "title": "Mode", "type": "string"}
    assert props["color"] == {"$ref": "#/$defs/Color"}
    assert schema["$defs"]["Color"]["enum"] == ["red", "green"]
    assert schema["$defs"]["Level"]["type"] == "integer"
    assert props["tags"] == {"items": {"type": "string"}, "title": "Tags", "type": "array"}
    assert props["counts"]["additionalProperties"] == {"type": "integer"}
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["unique"]["uniqueItems"] is True
    assert schema["$defs"]["Options"]["properties"]["verbose"]["type"] == "boolean"
    assert schema["$defs"]["Point"]["required"] == ["x", "y"]
    assert schema["$defs"]["Item"]["properties"]["name"]["description"] == "what it is"
    assert props["untyped"] == {"title": "Untyped"}


def test_the_tool_context_parameter_and_var_args_are_hidden() -> None:
    def f(a: int, *args: int, tool_context: object = None, **kwargs: int) -> None:
        """F."""

    schema = function_to_declaration(f).parameters_json_schema
    assert schema is not None
    assert list(schema["properties"]) == ["a"]


def test_a_parameter_of_a_context_type_is_hidden_whatever_its_name() -> None:
    def f(a: int, ctx: Ctx) -> None:
        """F."""

    schema = function_to_declaration(f, context_types=(Ctx,)).parameters_json_schema
    assert schema is not None
    assert list(schema["properties"]) == ["a"]


def test_a_function_without_arguments_has_no_parameters_schema() -> None:
    def now() -> str:
        """Now."""
        return ""

    assert function_to_declaration(now).parameters_json_schema is None


def test_parameter_names_that_shadow_pydantic_attributes_still_work() -> None:
    def f(schema: str, json: int = 1, model_config: str = "x") -> None:
        """F."""

    params = parameters_model(f)
    declaration = function_to_declaration(f)
    assert declaration.parameters_json_schema is not None
    assert list(declaration.parameters_json_schema["properties"]) == ["schema", "json", "model_config"]
    assert declaration.parameters_json_schema["properties"]["schema"]["title"] == "Schema"
    assert params.validate({"schema": "s", "json": "2"}) == {"schema": "s", "json": 2}


def test_return_annotations_give_the_response_schema() -> None:
    def returns_int() -> int:
        return 1

    def returns_model() -> Item:
        return Item(name="x")

    def returns_nothing() -> None:
        return None

    def unannotated():
        return 1

    assert function_to_declaration(returns_int).response_json_schema == {"type": "integer"}
    model_schema = function_to_declaration(returns_model).response_json_schema
    assert model_schema["type"] == "object"
    assert function_to_declaration(returns_nothing).response_json_schema is None
    assert function_to_declaration(unannotated).response_json_schema is None


def test_generators_are_described_by_their_final_result() -> None:
    def sync_gen() -> Generator[str, None, int]:
        yield "working"
        return 1

    def yields_only() -> Generator[str, None, None]:
        yield "x"

    async def async_gen() -> AsyncIterator[float]:
        yield 1.0

    assert function_to_declaration(sync_gen).response_json_schema == {"type": "integer"}
    assert function_to_declaration(yields_only).response_json_schema == {"type": "string"}
    assert function_to_declaration(async_gen).response_json_schema == {"type": "number"}


def test_bound_methods_callable_objects_and_partials_are_described() -> None:
    class Calculator:
        def multiply(self, a: int, b: int) -> int:
            """Multiply."""
            return a * b

        def __call__(self, x: float) -> float:
            """Square a number."""
            return x * x

    calc = Calculator()
    method = function_to_declaration(calc.multiply)
    assert method.name == "multiply"
    assert method.parameters_json_schema is not None
    assert list(method.parameters_json_schema["properties"]) == ["a", "b"]

    obj = function_to_declaration(calc)
    assert obj.name == "Calculator"
    assert obj.description == "Square a number."
    assert obj.parameters_json_schema is not None
    assert list(obj.parameters_json_schema["properties"]) == ["x"]

    partial = function_to_declaration(functools.partial(add, b=5))
    assert partial.name == "add"
    assert partial.parameters_json_schema is not None
    assert partial.parameters_json_schema["properties"]["b"]["default"] == 5


def test_validation_converts_dicts_into_models_and_dataclasses() -> None:
    def f(item: Item, point: Point, items: list[Item]) -> None:
        """F."""

    validated = parameters_model(f).validate(
        {"item": {"name": "a"}, "point": {"x": 1, "y": "2"}, "items": [{"name": "b", "qty": 3}]}
    )
    assert validated == {"item": Item(name="a"), "point": Point(1, 2), "items": [Item(name="b", qty=3)]}


def test_validation_names_every_bad_field() -> None:
    def f(a: int, item: Item) -> None:
        """F."""

    with pytest.raises(pydantic.ValidationError) as caught:
        parameters_model(f).validate({"a": "x", "item": {"qty": "many"}})
    locations = {tuple(error["loc"]) for error in caught.value.errors()}
    assert locations == {("a",), ("item", "name"), ("item", "qty")}


def test_an_unresolvable_type_hint_is_a_clear_type_error() -> None:
    def f(a: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
        """F."""

    with pytest.raises(TypeError, match=r"Cannot resolve the type hints of f\(\)"):
        function_to_declaration(f)


def test_a_type_without_a_schema_is_a_clear_type_error() -> None:
    def f(a: Opaque) -> None:
        """F."""

    with pytest.raises(TypeError, match=r"Cannot build the argument schema of f\(\)"):
        function_to_declaration(f)


def test_a_return_type_without_a_schema_only_drops_the_response_schema() -> None:
    def f() -> Opaque:
        return Opaque()

    assert function_to_declaration(f).response_json_schema is None


def test_any_parameter_accepts_anything() -> None:
    def f(value: Any) -> None:
        """F."""

    assert parameters_model(f).validate({"value": {"nested": [1]}}) == {"value": {"nested": [1]}}


def test_a_callable_object_without_a_call_docstring_is_described_by_its_class() -> None:
    class Greeter:
        """Greet someone by name."""

        def __call__(self, name: str) -> str:
            return f"hi {name}"

    assert function_to_declaration(Greeter()).description == "Greet someone by name."
