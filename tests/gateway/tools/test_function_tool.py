from __future__ import annotations

import functools
import threading
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, Literal, Optional, Union

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from gateway.errors import ToolDefinitionError
from gateway.tools import FunctionTool, ToolConfirmation, ToolContext


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


MISSING_TEMPLATE = (
    "Invoking `{name}()` failed as the following mandatory input parameters are not present:\n{missing}\n"
    "You could retry calling this tool, but it is IMPORTANT for you to provide all the mandatory parameters."
)
CONFIRMATION_REQUIRED = {"error": "This tool call requires confirmation, please approve or reject."}
CONFIRMATION_REJECTED = {"error": "This tool call is rejected."}
ADK_HINT = (
    "Please approve or reject the tool call {name}() by responding with a FunctionResponse with an expected "
    "ToolConfirmation payload."
)


class Calls:
    """Records the arguments of every call, so a test can assert that a function was (not) called."""

    def __init__(self) -> None:
        self.args: list[dict[str, Any]] = []

    def record(self, **kwargs: Any) -> None:
        self.args.append(kwargs)


def schema(tool: FunctionTool) -> dict[str, Any]:
    declaration = tool.get_declaration()
    assert declaration.parameters_json_schema is not None
    return declaration.parameters_json_schema


def properties(tool: FunctionTool) -> dict[str, Any]:
    return schema(tool)["properties"]


class Priority(Enum):
    LOW = "low"
    HIGH = "high"


class Item(BaseModel):
    name: str
    quantity: int = 1


@dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


class LegacyMovie(typing.TypedDict):
    """pydantic refuses `typing.TypedDict` before Python 3.12."""

    title: str


# -- name and description ---------------------------------------------------------------------------------


def google_style(city: str, days: int = 3) -> str:
    """Forecast the weather.

    Looks the city up and averages the models.

    Args:
        city: The city to forecast, e.g. "Paris".
        days: How many days ahead.

    Returns:
        The forecast as text.
    """
    return f"{city}:{days}"


def numpy_style(city: str, days: int = 3) -> str:
    """Forecast the weather.

    Looks the city up and averages the models.

    Parameters
    ----------
    city : str
        The city to forecast, e.g. "Paris".
    days : int
        How many days ahead.
    """
    return f"{city}:{days}"


def rest_style(city: str, days: int = 3) -> str:
    """Forecast the weather.

    Looks the city up and averages the models.

    :param city: The city to forecast, e.g. "Paris".
    :param days: How many days ahead.
    """
    return f"{city}:{days}"


@pytest.mark.parametrize("func", [google_style, numpy_style, rest_style], ids=["google", "numpy", "rest"])
def test_the_description_is_the_docstring_without_the_parameter_section(
    func: Callable[..., str],
) -> None:
    tool = FunctionTool(func)

    body = "Forecast the weather.\n\nLooks the city up and averages the models."
    returns = "\n\nReturns:\n    The forecast as text." if func is google_style else ""
    assert tool.description == body + returns
    assert tool.get_declaration().description == tool.description


@pytest.mark.parametrize("func", [google_style, numpy_style, rest_style], ids=["google", "numpy", "rest"])
def test_each_documented_parameter_gets_its_docstring_text_as_description(func: Callable[..., str]) -> None:
    props = properties(FunctionTool(func))

    assert props["city"]["description"] == 'The city to forecast, e.g. "Paris".'
    assert props["days"]["description"] == "How many days ahead."


def test_the_tool_is_named_after_the_function() -> None:
    assert FunctionTool(google_style).name == "google_style"
    assert FunctionTool(google_style).get_declaration().name == "google_style"


def test_a_function_without_docstring_has_an_empty_description() -> None:
    def bare(x: int) -> int:
        return x

    assert FunctionTool(bare).description == ""


# -- parameters schema ------------------------------------------------------------------------------------


def test_scalar_parameters_become_json_schema_types_and_defaults_make_them_optional() -> None:
    def scalars(text: str, count: int, ratio: float, flag: bool = False, limit: int = 10) -> None:
        del text, count, ratio, flag, limit

    result = schema(FunctionTool(scalars))

    assert {name: prop.get("type") for name, prop in result["properties"].items()} == {
        "text": "string",
        "count": "integer",
        "ratio": "number",
        "flag": "boolean",
        "limit": "integer",
    }
    assert result["required"] == ["text", "count", "ratio"]
    assert result["properties"]["flag"]["default"] is False
    assert result["properties"]["limit"]["default"] == 10


def test_optional_union_literal_and_enum_parameters_follow_adk_schema_shapes() -> None:
    def shapes(
        maybe: Optional[str] = None,  # noqa: UP045 - the typing spelling is what is tested
        either: Union[int, str] = 0,  # noqa: UP007 - the typing spelling is what is tested
        mode: Literal["any", "all"] = "any",
        priority: Priority = Priority.LOW,
        nullable: int | None = None,
    ) -> None:
        del maybe, either, mode, priority, nullable

    result = schema(FunctionTool(shapes))
    props = result["properties"]

    assert props["maybe"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert props["maybe"]["default"] is None
    assert props["either"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert props["mode"]["enum"] == ["any", "all"]
    assert props["mode"]["type"] == "string"
    assert props["priority"]["$ref"] == "#/$defs/Priority"
    assert result["$defs"]["Priority"]["enum"] == ["low", "high"]
    assert props["nullable"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert "required" not in result


def test_containers_become_arrays_and_objects() -> None:
    def containers(
        names: list[str], scores: dict[str, float], pair: tuple[int, str], tags: set[str], anything: dict[str, Any]
    ) -> None:
        del names, scores, pair, tags, anything

    props = properties(FunctionTool(containers))

    assert props["names"] == {"items": {"type": "string"}, "title": "Names", "type": "array"}
    assert props["scores"]["type"] == "object"
    assert props["scores"]["additionalProperties"] == {"type": "number"}
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["tags"]["uniqueItems"] is True
    assert props["anything"] == {"additionalProperties": True, "title": "Anything", "type": "object"}


def test_models_dataclasses_and_typed_dicts_are_described_in_defs() -> None:
    def structured(item: Item, point: Point, movie: Movie) -> None:
        del item, point, movie

    result = schema(FunctionTool(structured))

    assert {name: prop["$ref"] for name, prop in result["properties"].items()} == {
        "item": "#/$defs/Item",
        "point": "#/$defs/Point",
        "movie": "#/$defs/Movie",
    }
    assert result["$defs"]["Item"]["required"] == ["name"]
    assert result["$defs"]["Point"]["properties"]["x"]["type"] == "integer"
    assert result["$defs"]["Movie"]["required"] == ["title", "year"]


def test_a_typing_typed_dict_on_python_3_11_is_refused_with_a_tool_definition_error() -> None:
    def takes_legacy(movie: LegacyMovie) -> None:
        del movie

    with pytest.raises(ToolDefinitionError, match="typing_extensions"):
        FunctionTool(takes_legacy)


def test_field_descriptions_from_annotated_or_a_default_are_kept() -> None:
    def described(
        city: Annotated[str, Field(description="The city.")],
        days: int = Field(3, description="Days ahead."),
    ) -> None:
        del city, days

    result = schema(FunctionTool(described))

    assert result["properties"]["city"]["description"] == "The city."
    assert result["properties"]["days"]["description"] == "Days ahead."
    assert result["properties"]["days"]["default"] == 3
    assert result["required"] == ["city"]


def test_the_return_annotation_gives_the_response_schema() -> None:
    def returns_items() -> list[Item]:
        return []

    def returns_nothing() -> None:
        return None

    response = FunctionTool(returns_items).get_declaration().response_json_schema

    assert response == {
        "$defs": {"Item": Item.model_json_schema()},
        "items": {"$ref": "#/$defs/Item"},
        "type": "array",
    }
    assert FunctionTool(returns_nothing).get_declaration().response_json_schema is None


def test_a_function_without_parameters_declares_no_parameters_schema() -> None:
    def nothing() -> int:
        return 1

    assert FunctionTool(nothing).get_declaration().parameters_json_schema is None


def test_the_context_parameter_is_hidden_whether_named_tool_context_or_typed_tool_context() -> None:
    def by_name(query: str, tool_context: Any) -> None:
        del query, tool_context

    def by_type(query: str, ctx: ToolContext) -> None:
        del query, ctx

    def by_optional_type(query: str, ctx: ToolContext | None = None) -> None:
        del query, ctx

    for func in (by_name, by_type, by_optional_type):
        result = schema(FunctionTool(func))
        assert list(result["properties"]) == ["query"], func.__name__
        assert result["required"] == ["query"], func.__name__


# -- kinds of callables -----------------------------------------------------------------------------------


class Counter:
    def __init__(self) -> None:
        self.total = 0

    def add(self, amount: int) -> int:
        """Add to the running total."""
        self.total += amount
        return self.total


class Doubler:
    def __call__(self, x: int) -> int:
        """Double a number."""
        return 2 * x


class AsyncDoubler:
    async def __call__(self, x: int) -> int:
        """Double a number, asynchronously."""
        return 2 * x


@pytest.mark.anyio
async def test_a_bound_method_is_a_tool_without_self_and_keeps_its_instance() -> None:
    counter = Counter()
    tool = FunctionTool(counter.add)

    assert tool.name == "add"
    assert tool.description == "Add to the running total."
    assert list(properties(tool)) == ["amount"]
    assert await tool.run_async(args={"amount": 2}, tool_context=ToolContext()) == {"result": 2}
    assert await tool.run_async(args={"amount": 3}, tool_context=ToolContext()) == {"result": 5}
    assert counter.total == 5


@pytest.mark.anyio
@pytest.mark.parametrize("instance", [Doubler(), AsyncDoubler()], ids=["sync", "async"])
async def test_a_callable_object_is_named_after_its_class_and_described_by_its_call(instance: object) -> None:
    assert callable(instance)
    tool = FunctionTool(instance)

    assert tool.name == type(instance).__name__
    assert tool.description.startswith("Double a number")
    assert list(properties(tool)) == ["x"]
    assert await tool.run_async(args={"x": 21}, tool_context=ToolContext()) == {"result": 42}


@pytest.mark.anyio
async def test_a_partial_takes_the_wrapped_functions_name_and_its_bound_keywords_become_defaults() -> None:
    def power(base: int, exponent: int) -> int:
        return base**exponent

    tool = FunctionTool(functools.partial(power, exponent=2))

    assert tool.name == "power"
    assert schema(tool)["required"] == ["base"]
    assert properties(tool)["exponent"]["default"] == 2
    assert await tool.run_async(args={"base": 7}, tool_context=ToolContext()) == {"result": 49}


@pytest.mark.anyio
async def test_positional_only_parameters_are_passed_by_position() -> None:
    calls = Calls()

    def scale(value: float, factor: float = 2.0, /, *, offset: float = 0.0) -> float:
        calls.record(value=value, factor=factor, offset=offset)
        return value * factor + offset

    tool = FunctionTool(scale)
    context = ToolContext()

    assert await tool.run_async(args={"value": 3, "offset": 1}, tool_context=context) == {"result": 7.0}
    assert await tool.run_async(args={"value": 3, "factor": 3}, tool_context=context) == {"result": 9.0}
    assert calls.args == [{"value": 3, "factor": 2.0, "offset": 1}, {"value": 3, "factor": 3, "offset": 0.0}]


@pytest.mark.parametrize("name", ["transfer_to_agent", "adk_request_confirmation", "set_model_response"])
def test_a_function_named_like_an_adk_reserved_call_is_refused(name: str) -> None:
    def reserved(x: int) -> int:
        return x

    reserved.__name__ = name

    with pytest.raises(ToolDefinitionError, match=f"'{name}' is reserved by ADK"):
        FunctionTool(reserved)


def test_something_that_is_not_callable_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="needs a callable, got int"):
        FunctionTool(42)  # type: ignore[arg-type]


# -- running ----------------------------------------------------------------------------------------------


def add(a: int, b: int) -> int:
    return a + b


@pytest.mark.anyio
@given(a=st.integers(), b=st.integers())
async def test_any_int_pair_through_an_add_tool_gives_their_sum_as_result(a: int, b: int) -> None:
    tool = FunctionTool(add)

    assert await tool.run_async(args={"a": a, "b": b}, tool_context=ToolContext()) == {"result": a + b}


@pytest.mark.anyio
async def test_an_async_function_is_awaited_and_its_value_wrapped() -> None:
    async def greet(name: str) -> str:
        return f"hello {name}"

    result = await FunctionTool(greet).run_async(args={"name": "ada"}, tool_context=ToolContext())

    assert result == {"result": "hello ada"}


@pytest.mark.anyio
@pytest.mark.parametrize("value", [None, [1, 2], "text", 3.5])
async def test_a_non_dict_return_value_is_wrapped_as_result(value: object) -> None:
    def give() -> Any:
        return value

    assert await FunctionTool(give).run_async(args={}, tool_context=ToolContext()) == {"result": value}


@pytest.mark.anyio
async def test_a_dict_return_value_is_returned_as_is() -> None:
    payload = {"status": "ok", "count": 2}

    def give() -> dict[str, Any]:
        return payload

    assert await FunctionTool(give).run_async(args={}, tool_context=ToolContext()) is payload


@pytest.mark.anyio
async def test_a_sync_function_runs_in_a_worker_thread_not_on_the_event_loop() -> None:
    threads: list[int] = []

    def where() -> None:
        threads.append(threading.get_ident())

    await FunctionTool(where).run_async(args={}, tool_context=ToolContext())

    assert len(threads) == 1
    assert threads[0] != threading.get_ident()


@pytest.mark.anyio
async def test_a_sync_wrapper_returning_a_coroutine_has_the_coroutine_awaited() -> None:
    async def inner(x: int) -> int:
        return x + 1

    def wrapper(x: int) -> Awaitable[int]:
        return inner(x)

    assert await FunctionTool(wrapper).run_async(args={"x": 1}, tool_context=ToolContext()) == {"result": 2}


@pytest.mark.anyio
async def test_an_exception_raised_by_the_function_propagates_to_the_caller() -> None:
    def divide(a: int, b: int) -> float:
        return a / b

    with pytest.raises(ZeroDivisionError):
        await FunctionTool(divide).run_async(args={"a": 1, "b": 0}, tool_context=ToolContext())


@pytest.mark.anyio
async def test_a_missing_mandatory_argument_gives_adks_error_and_the_function_is_not_called() -> None:
    calls = Calls()

    def add_recorded(a: int, b: int, c: int = 0) -> int:
        calls.record(a=a, b=b, c=c)
        return a + b + c

    result = await FunctionTool(add_recorded).run_async(args={"b": 1}, tool_context=ToolContext())

    assert result == {"error": MISSING_TEMPLATE.format(name="add_recorded", missing="a")}
    assert calls.args == []


@pytest.mark.anyio
async def test_every_missing_argument_is_listed_on_its_own_line() -> None:
    calls = Calls()

    def three(first: str, second: str, third: str | None) -> None:
        calls.record(first=first, second=second, third=third)

    result = await FunctionTool(three).run_async(args={"second": "x"}, tool_context=ToolContext())

    assert result == {"error": MISSING_TEMPLATE.format(name="three", missing="first\nthird")}
    assert calls.args == []


@pytest.mark.anyio
async def test_unknown_arguments_are_refused_naming_them() -> None:
    calls = Calls()

    def known(a: int) -> None:
        calls.record(a=a)

    response = await FunctionTool(known).run_async(args={"a": 1, "zzz": 2}, tool_context=ToolContext())

    assert calls.args == []
    assert "Parameter 'zzz': the tool takes no such argument (its arguments: a) (got 2)" in response["error"]


@pytest.mark.anyio
async def test_unknown_arguments_reach_a_function_that_takes_kwargs() -> None:
    calls = Calls()

    def flexible(a: int, **options: Any) -> None:
        calls.record(a=a, **options)

    await FunctionTool(flexible).run_async(args={"a": 1, "color": "red"}, tool_context=ToolContext())

    assert calls.args == [{"a": 1, "color": "red"}]


@pytest.mark.anyio
async def test_wrong_types_give_an_error_naming_every_bad_field_and_the_function_is_not_called() -> None:
    calls = Calls()

    def typed(count: int, mode: Literal["any", "all"], item: Item, ok: str = "") -> None:
        calls.record(count=count, mode=mode, item=item, ok=ok)

    result = await FunctionTool(typed).run_async(
        args={"count": "many", "mode": "some", "item": {"quantity": "x"}, "ok": "fine"},
        tool_context=ToolContext(),
    )

    assert calls.args == []
    lines = result["error"].split("\n")
    assert lines[0] == "Invoking `typed()` failed due to argument validation errors:"
    assert lines[-1] == "You could retry calling this tool with corrected argument types."
    assert [line.split(":")[0] for line in lines[1:-1]] == [
        "Parameter 'count'",
        "Parameter 'mode'",
        "Parameter 'item.name'",
        "Parameter 'item.quantity'",
    ]
    assert "(got 'many')" in lines[1]


_NOT_INTS = st.one_of(
    st.text().filter(lambda s: not s.strip().lstrip("+-").replace("_", "").isdigit()),
    st.floats().filter(lambda f: not f.is_integer()),
    st.lists(st.integers()),
    st.dictionaries(st.text(), st.integers()),
    st.none(),
)


@pytest.mark.anyio
@given(value=_NOT_INTS)
async def test_any_value_that_is_not_an_int_gives_an_error_naming_the_parameter_and_no_call(value: object) -> None:
    calls = Calls()

    def count_to(limit: int) -> None:
        calls.record(limit=limit)

    result = await FunctionTool(count_to).run_async(args={"limit": value}, tool_context=ToolContext())

    assert calls.args == []
    assert set(result) == {"error"}
    assert "\nParameter 'limit': " in result["error"]


@pytest.mark.anyio
async def test_numeric_strings_are_coerced_to_numbers_as_pydantic_lax_mode_does() -> None:
    calls = Calls()

    def count_to(limit: int) -> None:
        calls.record(limit=limit)

    await FunctionTool(count_to).run_async(args={"limit": "12"}, tool_context=ToolContext())

    assert calls.args == [{"limit": 12}]


@pytest.mark.anyio
async def test_dicts_are_converted_into_models_dataclasses_and_enums() -> None:
    calls = Calls()

    def build(
        item: Item, point: Point, items: list[Item], maybe: Item | None, priority: Priority, tags: set[str]
    ) -> None:
        calls.record(item=item, point=point, items=items, maybe=maybe, priority=priority, tags=tags)

    await FunctionTool(build).run_async(
        args={
            "item": {"name": "pen"},
            "point": {"x": 1, "y": 2},
            "items": [{"name": "a", "quantity": 2}],
            "maybe": {"name": "b"},
            "priority": "high",
            "tags": ["x", "x", "y"],
        },
        tool_context=ToolContext(),
    )

    assert calls.args == [
        {
            "item": Item(name="pen"),
            "point": Point(1, 2),
            "items": [Item(name="a", quantity=2)],
            "maybe": Item(name="b"),
            "priority": Priority.HIGH,
            "tags": {"x", "y"},
        }
    ]


@pytest.mark.anyio
async def test_omitted_arguments_take_their_defaults_including_a_field_default() -> None:
    calls = Calls()

    def defaults(
        a: int = 1,
        b: int = Field(5, description="b"),
        c: list[int] = Field(default_factory=list),  # noqa: B008 - a pydantic Field default is what is tested
    ) -> None:
        calls.record(a=a, b=b, c=c)

    await FunctionTool(defaults).run_async(args={}, tool_context=ToolContext())

    assert calls.args == [{"a": 1, "b": 5, "c": []}]


@pytest.mark.anyio
async def test_the_context_is_injected_by_name_or_by_type_and_cannot_be_supplied_by_the_model() -> None:
    seen: list[object] = []

    def by_name(tool_context: Any) -> None:
        seen.append(tool_context)

    async def by_type(ctx: ToolContext) -> None:
        seen.append(ctx)

    context = ToolContext()
    await FunctionTool(by_name).run_async(args={"tool_context": "forged"}, tool_context=context)
    await FunctionTool(by_type).run_async(args={"ctx": "forged"}, tool_context=context)

    assert seen == [context, context]


# -- confirmation -----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_call_needing_confirmation_is_not_run_and_records_adks_request() -> None:
    calls = Calls()

    def delete_file(path: str) -> str:
        calls.record(path=path)
        return "deleted"

    context = ToolContext(function_call_id="call-1")
    result = await FunctionTool(delete_file, require_confirmation=True).run_async(
        args={"path": "notes/x.txt"}, tool_context=context
    )

    assert result == CONFIRMATION_REQUIRED
    assert calls.args == []
    assert context.actions.requested_tool_confirmations == {
        "call-1": ToolConfirmation(hint=ADK_HINT.format(name="delete_file"), confirmed=False, payload=None)
    }
    assert context.actions.skip_summarization is True


@pytest.mark.anyio
async def test_a_rejected_confirmation_gives_adks_rejection_and_no_call() -> None:
    calls = Calls()

    def delete_file(path: str) -> None:
        calls.record(path=path)

    context = ToolContext(tool_confirmation=ToolConfirmation(confirmed=False))
    result = await FunctionTool(delete_file, require_confirmation=True).run_async(
        args={"path": "notes/x.txt"}, tool_context=context
    )

    assert result == CONFIRMATION_REJECTED
    assert calls.args == []
    assert context.actions.requested_tool_confirmations == {}


@pytest.mark.anyio
async def test_a_confirmed_call_runs_and_can_read_the_confirmation_payload() -> None:
    def delete_file(path: str, tool_context: ToolContext) -> dict[str, Any]:
        confirmation = tool_context.tool_confirmation
        assert confirmation is not None
        return {"path": path, "approved": confirmation.payload}

    context = ToolContext(tool_confirmation=ToolConfirmation(confirmed=True, payload={"user": "ada"}))
    result = await FunctionTool(delete_file, require_confirmation=True).run_async(
        args={"path": "notes/x.txt"}, tool_context=context
    )

    assert result == {"path": "notes/x.txt", "approved": {"user": "ada"}}
    assert context.actions.requested_tool_confirmations == {}
    assert context.actions.skip_summarization is None


@pytest.mark.anyio
@pytest.mark.parametrize(("amount", "needs_confirmation"), [(50, False), (500, True)])
async def test_a_predicate_over_the_arguments_decides_whether_confirmation_is_needed(
    amount: int, needs_confirmation: bool
) -> None:
    calls = Calls()
    asked: list[dict[str, Any]] = []

    def pay(amount: int, currency: str = "EUR") -> str:
        calls.record(amount=amount, currency=currency)
        return "paid"

    def over_limit(amount: int) -> bool:
        asked.append({"amount": amount})
        return amount > 100

    context = ToolContext()
    result = await FunctionTool(pay, require_confirmation=over_limit).run_async(
        args={"amount": amount}, tool_context=context
    )

    assert asked == [{"amount": amount}]
    if needs_confirmation:
        assert result == CONFIRMATION_REQUIRED
        assert calls.args == []
        assert list(context.actions.requested_tool_confirmations) == [context.function_call_id]
    else:
        assert result == {"result": "paid"}
        assert calls.args == [{"amount": amount, "currency": "EUR"}]
        assert context.actions.requested_tool_confirmations == {}


@pytest.mark.anyio
async def test_a_predicate_that_asks_for_the_context_receives_it_by_name_or_by_type() -> None:
    received: list[tuple[str, object]] = []

    def by_name(amount: int, tool_context: ToolContext) -> bool:
        received.append(("by_name", tool_context))
        return tool_context.state.get("user:trusted") is not True

    async def by_type(ctx: ToolContext) -> bool:
        received.append(("by_type", ctx))
        return False

    def pay(amount: int) -> int:
        return amount

    context = ToolContext(state={"user:trusted": True})
    first = await FunctionTool(pay, require_confirmation=by_name).run_async(args={"amount": 1}, tool_context=context)
    second = await FunctionTool(pay, require_confirmation=by_type).run_async(args={"amount": 2}, tool_context=context)

    assert received == [("by_name", context), ("by_type", context)]
    assert (first, second) == ({"result": 1}, {"result": 2})


@pytest.mark.anyio
async def test_a_predicate_with_kwargs_receives_every_argument_and_the_context() -> None:
    received: list[dict[str, Any]] = []

    def everything(**kwargs: Any) -> bool:
        received.append(kwargs)
        return True

    def pay(amount: int, note: str = "") -> int:
        return amount

    context = ToolContext()
    await FunctionTool(pay, require_confirmation=everything).run_async(
        args={"amount": 1, "note": "n"}, tool_context=context
    )

    assert received == [{"amount": 1, "note": "n", "tool_context": context}]


@pytest.mark.anyio
async def test_the_confirmation_gate_runs_after_the_missing_argument_check() -> None:
    def pay(amount: int) -> int:
        return amount

    context = ToolContext()
    result = await FunctionTool(pay, require_confirmation=True).run_async(args={}, tool_context=context)

    assert result == {"error": MISSING_TEMPLATE.format(name="pay", missing="amount")}
    assert context.actions.requested_tool_confirmations == {}


@pytest.mark.anyio
async def test_a_tool_can_request_confirmation_itself_with_a_payload() -> None:
    def transfer(amount: int, tool_context: ToolContext) -> dict[str, Any]:
        confirmation = tool_context.tool_confirmation
        if confirmation is None:
            tool_context.request_confirmation(hint="Approve the transfer?", payload={"max": amount})
            return {"status": "pending"}
        return {"status": "done", "max": confirmation.payload}

    tool = FunctionTool(transfer)
    first = ToolContext(function_call_id="fc-7")
    pending = await tool.run_async(args={"amount": 10}, tool_context=first)
    second = ToolContext(function_call_id="fc-7", tool_confirmation=ToolConfirmation(confirmed=True, payload=9))
    done = await tool.run_async(args={"amount": 10}, tool_context=second)

    assert pending == {"status": "pending"}
    assert first.actions.requested_tool_confirmations == {
        "fc-7": ToolConfirmation(hint="Approve the transfer?", payload={"max": 10})
    }
    assert done == {"status": "done", "max": 9}


@pytest.mark.anyio
async def test_check_require_confirmation_evaluates_the_policy() -> None:
    context = ToolContext()

    assert await FunctionTool(add).check_require_confirmation({"a": 1, "b": 2}, context) is False
    assert await FunctionTool(add, require_confirmation=True).check_require_confirmation({"a": 1}, context) is True

    def first_is_larger(a: int, b: int) -> bool:
        return a > b

    policy = FunctionTool(add, require_confirmation=first_is_larger)
    assert await policy.check_require_confirmation({"a": 2, "b": 1}, context) is True
    assert await policy.check_require_confirmation({"a": 1, "b": 2}, context) is False


class _Reading(pydantic.BaseModel):
    value: float


@pytest.mark.anyio
async def test_a_declared_model_return_is_the_response_itself_and_a_declared_scalar_is_wrapped() -> None:
    def reading() -> _Reading:
        """Read."""
        return _Reading(value=1.5)

    def maybe_mapping() -> dict[str, int] | None:
        """A dict that may be missing."""
        return {"a": 1}

    context = ToolContext()
    assert await FunctionTool(reading).run_async(args={}, tool_context=context) == {"value": 1.5}
    # The declared type is not an object, so the outputSchema is the {"result": ...} wrapper: even a dict is wrapped.
    assert await FunctionTool(maybe_mapping).run_async(args={}, tool_context=context) == {"result": {"a": 1}}
