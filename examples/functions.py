"""A few everyday functions to publish as MCP tools.

adk-mcp-gateway tools --tools examples/functions.py
"""

from __future__ import annotations

import datetime as dt
from enum import Enum
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from gateway import LongRunningFunctionTool, ToolContext


class Unit(Enum):
    """Temperature units."""

    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Reading(BaseModel):
    """One temperature reading."""

    value: float
    unit: Unit


def convert_temperature(value: float, to: Unit = Unit.CELSIUS) -> Reading:
    """Convert a temperature between Celsius and Fahrenheit.

    Args:
        value: the temperature in the other unit.
        to: the unit to convert to.
    """
    converted = (value - 32) * 5 / 9 if to is Unit.CELSIUS else value * 9 / 5 + 32
    return Reading(value=round(converted, 2), unit=to)


def days_between(
    start: dt.date, end: dt.date, count: Annotated[Literal["calendar", "weekdays"], Field()] = "calendar"
) -> int:
    """Count the days from start to end.

    Args:
        start: first day (ISO date).
        end: last day (ISO date), not counted.
        count: "weekdays" skips Saturdays and Sundays.
    """
    days = (end - start).days
    if count == "calendar":
        return days
    return sum(1 for i in range(days) if (start + dt.timedelta(days=i)).weekday() < 5)


def remember(note: str, tool_context: ToolContext) -> dict[str, list[str]]:
    """Remember a note for the rest of this session and return every note so far.

    Args:
        note: what to remember.
    """
    notes: list[str] = tool_context.state.setdefault("notes", [])
    notes.append(note)
    return {"notes": notes}


def count_words(text: str):
    """Count the words of a text, reporting progress every 1000 words.

    Args:
        text: any text.
    """
    words = text.split()
    for done in range(0, len(words), 1000):
        yield f"{done} of {len(words)} words"
    return {"words": len(words)}


count_words_tool = LongRunningFunctionTool(count_words)


__all__ = ["convert_temperature", "count_words_tool", "days_between", "remember"]
