"""`parse_strict_json`: the gateway's one reading of JSON-RPC text, from a client or from an upstream.

JSON-RPC's JSON is UTF-8 (RFC 8259 §8.1), and the gateway must be able to send on whatever it reads. Python's `json`
reads more than that: UTF-16 and UTF-32 bytes, `NaN` and `Infinity`, and an escaped lone surrogate (`"\\ud800"`) as
a `str` that no UTF-8 writer can encode (a stdio upstream's writer failed on one and so ended an upstream session
every client shared). pydantic's parser, the SDK's, refuses all of these but `NaN` and `Infinity`, and it reads a
number past a double's range as infinity; each of those would be sent on as `null`. So text is read here with
pydantic's parser, without `NaN` and `Infinity`, and a number past a double's range is refused too.
"""

from __future__ import annotations

import math
from typing import Any, Final, cast

import pydantic_core

__all__ = ["parse_strict_json"]

_DIGITS_AS_ZERO: Final = bytes.maketrans(b"123456789", b"000000000")
_HUGE_MARKS: Final = (b"0" * 210, b"e000", b"E000", b"e+000", b"E+000")
"""What a number past a double's range (about 1.8e308) must contain once its digits are written as zeros: an exponent
of three digits, or else (an exponent of at most 99, and n digits before the point make at most 10**(n + 99)) 210
digits in a row. Only text with one of them is searched for infinities (most has none, and the search is a walk);
the test is a few scans at C speed, linear in the text's length."""


def parse_strict_json(data: bytes | str) -> Any:
    """The JSON value of `data`: UTF-8, no `NaN` or `Infinity`, no lone surrogate, every number a finite double or
    an integer.

    Raises:
        ValueError: `data` is not such JSON (the message says where or what).
    """
    # A `str` is encoded here, so that one holding a lone surrogate fails as the bytes of one do (ValueError).
    raw = data.encode() if isinstance(data, str) else data
    value: Any = pydantic_core.from_json(raw, allow_inf_nan=False)
    if _may_hold_huge_number(raw) and _holds_infinity(value):
        raise ValueError("a number is past the range of a double (JSON-RPC carries finite numbers)")
    return value


def _may_hold_huge_number(data: bytes) -> bool:
    zeroed = data.translate(_DIGITS_AS_ZERO)
    return any(mark in zeroed for mark in _HUGE_MARKS)


def _holds_infinity(value: object) -> bool:
    if isinstance(value, float):
        return math.isinf(value)
    if isinstance(value, dict):
        return any(_holds_infinity(item) for item in cast("dict[str, Any]", value).values())
    if isinstance(value, list):
        return any(_holds_infinity(item) for item in cast("list[Any]", value))
    return False
