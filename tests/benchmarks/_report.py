# ruff: noqa: RUF001 - ratios are written with the multiplication sign on purpose
"""The table: one row per figure, its ratio to the baseline of its section, and its target (met or not)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    """One figure: a median over rounds, the baseline it is compared with, and a target with whether it is met."""

    section: str
    case: str
    metric: str
    value: float | None
    """None: not measured (see `note`)."""
    unit: str
    baseline: float | None = None
    target: str = ""
    met: bool | None = None
    note: str = ""


def goal(text: str, met: bool) -> dict[str, Any]:
    """A target and whether this run meets it, as `Row` keywords (shown in the table, never asserted)."""
    return {"target": text, "met": met}


def render(rows: Sequence[Row]) -> str:
    """The rows as a markdown table."""
    lines = [
        "| section | case | metric | median | × baseline | target | met |",
        "|---|---|---|---:|---:|---|:---:|",
    ]
    for row in rows:
        value = _number(row.value, row.unit) if row.value is not None else ""
        ratio = f"{row.value / row.baseline:.2f}×" if row.value is not None and row.baseline else ""
        met = "" if not row.target else ("—" if row.met is None else ("✓" if row.met else "✗"))
        shown = "; ".join(part for part in (value, row.note) if part)
        lines.append(f"| {row.section} | {row.case} | {row.metric} | {shown} | {ratio} | {row.target} | {met} |")
    return "\n".join(lines)


def _number(value: float, unit: str) -> str:
    if unit == "calls/s":
        return f"{value:,.0f} calls/s"
    if unit == "×":
        return f"{value:.1f}×"
    if unit in ("MiB", "MiB/s"):
        return f"{value:.1f} {unit}"
    return f"{value:.2f} {unit}" if value < 10 else f"{value:,.1f} {unit}"
