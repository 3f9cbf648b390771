"""Numbers and booleans are distinct JSON types: a FunctionTool refuses one for the other, and non-finite numbers.

Lax coercion stays only for numeric strings (`"12"` for an `int`), which models often quote; see
`FunctionTool`'s docstring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from gateway.tools import FunctionTool, ToolContext
from gateway.tools._json_kinds import kind_mismatches

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class Calls:
    def __init__(self) -> None:
        self.args: list[dict[str, Any]] = []


class Box(BaseModel):
    width: float
    count: int = 1


@dataclass
class Point:
    x: float
    y: float


async def _run(tool: FunctionTool, args: dict[str, Any]) -> Any:
    return await tool.run_async(args=args, tool_context=ToolContext())


def _numeric_tool(calls: Calls) -> FunctionTool:
    def measure(
        ratio: float = 1.0,
        count: int = 0,
        maybe: int | None = None,
        counts: list[int] | None = None,
        ratios: list[float] | None = None,
        box: Box | None = None,
        point: Point | None = None,
        flag: bool = False,
    ) -> None:
        calls.args.append(
            {
                "ratio": ratio,
                "count": count,
                "maybe": maybe,
                "counts": counts,
                "ratios": ratios,
                "box": box,
                "point": point,
                "flag": flag,
            }
        )

    return FunctionTool(measure)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "NaN", "inf", "-Infinity", "1e999"])
async def test_a_non_finite_number_for_a_float_parameter_is_refused_naming_it_and_nothing_runs(value: object) -> None:
    calls = Calls()

    result = await _run(_numeric_tool(calls), {"ratio": value})

    assert calls.args == []
    assert set(result) == {"error"}
    assert "\nParameter 'ratio': Input should be a finite number" in result["error"]


@pytest.mark.parametrize(
    ("args", "where"),
    [({"point": {"x": math.nan, "y": 0}}, "point.x"), ({"ratios": [1.5, math.inf]}, "ratios.1")],
)
async def test_a_non_finite_number_inside_a_dataclass_or_list_argument_is_refused(
    args: dict[str, Any], where: str
) -> None:
    calls = Calls()

    result = await _run(_numeric_tool(calls), args)

    assert calls.args == []
    assert f"\nParameter '{where}': Input should be a finite number" in result["error"]


async def test_a_parameter_that_allows_non_finite_numbers_receives_them() -> None:
    received: list[float] = []

    def clamp(limit: Annotated[float, Field(allow_inf_nan=True)]) -> None:
        received.append(limit)

    await _run(FunctionTool(clamp), {"limit": math.inf})
    await _run(FunctionTool(clamp), {"limit": "NaN"})

    assert received[0] == math.inf
    assert math.isnan(received[1])


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ({"count": True}, "count"),
        ({"ratio": False}, "ratio"),
        ({"maybe": True}, "maybe"),
        ({"counts": [1, True]}, "counts.1"),
        ({"box": {"width": 2.0, "count": True}}, "box.count"),
        ({"point": {"x": True, "y": 0}}, "point.x"),
    ],
)
async def test_a_boolean_for_a_numeric_parameter_is_refused_naming_it_and_nothing_runs(
    args: dict[str, Any], where: str
) -> None:
    calls = Calls()

    result = await _run(_numeric_tool(calls), args)

    assert calls.args == []
    assert set(result) == {"error"}
    lines = result["error"].split("\n")
    assert lines[0] == "Invoking `measure()` failed due to argument validation errors:"
    assert any(line.startswith(f"Parameter '{where}': ") and "boolean" in line for line in lines), lines


async def test_adding_true_and_two_is_refused_rather_than_giving_three() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    result = await _run(FunctionTool(add), {"a": True, "b": 2})

    assert result != {"result": 3}
    assert "\nParameter 'a': " in result["error"]


@pytest.mark.parametrize("value", [1, 0, 1.0])
async def test_a_number_for_a_boolean_parameter_is_refused(value: object) -> None:
    calls = Calls()

    result = await _run(_numeric_tool(calls), {"flag": value})

    assert calls.args == []
    assert "\nParameter 'flag': " in result["error"]


async def test_booleans_still_reach_boolean_and_any_parameters_and_numeric_strings_still_become_numbers() -> None:
    received: list[tuple[Any, ...]] = []

    def mixed(flag: bool, anything: Any, either: int | bool, count: int, ratio: float) -> None:
        received.append((flag, anything, either, count, ratio))

    await _run(FunctionTool(mixed), {"flag": True, "anything": False, "either": True, "count": "12", "ratio": "2.5"})

    assert received == [(True, False, True, 12, 2.5)]
    assert received[0][2] is True


@given(values=st.lists(st.one_of(st.integers(), st.booleans()), max_size=20))
def test_every_boolean_in_a_list_of_ints_is_found_at_its_index_and_nothing_else(values: list[int | bool]) -> None:
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}}

    found = kind_mismatches(schema, {"xs": values})

    assert [m.loc for m in found] == [("xs", i) for i, v in enumerate(values) if isinstance(v, bool)]
