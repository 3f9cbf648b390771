"""`parse_message`: the one reading of a POSTed JSON-RPC body, for the fast lane and the general path alike.

JSON-RPC over HTTP is UTF-8 JSON (RFC 8259 §8.1), and the gateway must be able to send on whatever it accepts.
Python's `json` reads more than that: UTF-16 and UTF-32 bodies, `NaN` and `Infinity`, and an escaped lone surrogate
(`"\\ud800"`) as a `str` no UTF-8 writer can encode (a stdio upstream's writer failed on one and so ended an
upstream session every client shared). pydantic's parser, the SDK's, refuses all of these but `NaN` and
`Infinity`, and it reads a number past a double's range as infinity; each of those would reach an upstream as
`null`. So a body is read here with pydantic's parser, without `NaN` and `Infinity`, and a number past a double's
range is refused too: -32700 Parse error. A body that is JSON but not one JSON-RPC message — a batch (an array; MCP
dropped batches in 2025-06-18) or a scalar — is -32600 Invalid Request.

`MalformedIdGuard` (`gateway.server._request_ids`) reads every POST body of `/mcp` and `/messages/` with it, answers
what it refuses, and leaves the message in the request's scope (`parsed_message`) so the fast lane parses nothing
again.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final, cast

import pydantic_core
from mcp import types
from starlette.types import Scope

__all__ = ["InvalidBodyError", "parse_message", "parsed_message", "remember_message"]

_SCOPE_KEY: Final = "adk_mcp_gateway.message"
_HUGE_NUMBER: Final = re.compile(rb"[eE]\+?0*[1-9]\d{2}|\d{300}")
"""What a number past a double's range (about 1.8e308) must contain: an exponent of 100 or more, or 300 digits.
Only a body that has one is searched for infinities (most bodies have none, and the search is a walk)."""


class InvalidBodyError(ValueError):
    """A POST body that is not one JSON-RPC message the gateway accepts; `error` is the JSON-RPC answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def error(self) -> dict[str, Any]:
        """The JSON-RPC error response (its id null: the request's id could not be read)."""
        return {"jsonrpc": "2.0", "id": None, "error": {"code": self.code, "message": self.message}}


def parse_message(body: bytes) -> dict[str, Any]:
    """The JSON-RPC message of a POST body: strict UTF-8 JSON (see the module docstring), one object.

    Raises:
        InvalidBodyError: -32700 for a body that is not such JSON, -32600 for a batch or a value that is no object.
    """
    try:
        message: Any = pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        raise InvalidBodyError(types.PARSE_ERROR, f"Parse error: {exc}") from None
    if _HUGE_NUMBER.search(body) is not None and _holds_infinity(message):
        raise InvalidBodyError(
            types.PARSE_ERROR, "Parse error: a number is past the range of a double (JSON-RPC carries finite numbers)"
        )
    if isinstance(message, list):
        raise InvalidBodyError(
            types.INVALID_REQUEST,
            "Invalid Request: a JSON-RPC batch (an array) is not accepted; send each message in a request of its own.",
        )
    if not isinstance(message, dict):
        raise InvalidBodyError(
            types.INVALID_REQUEST, "Invalid Request: the body must be a JSON-RPC message (an object)."
        )
    return cast("dict[str, Any]", message)


def _holds_infinity(value: object) -> bool:
    if isinstance(value, float):
        return math.isinf(value)
    if isinstance(value, dict):
        return any(_holds_infinity(item) for item in cast("dict[str, Any]", value).values())
    if isinstance(value, list):
        return any(_holds_infinity(item) for item in cast("list[Any]", value))
    return False


def remember_message(scope: Scope, message: dict[str, Any]) -> None:
    """Leave a request's parsed message in its scope, for `parsed_message`."""
    scope[_SCOPE_KEY] = message


def parsed_message(scope: Scope) -> dict[str, Any] | None:
    """The message `remember_message` left in a request's scope (None: its body was not read whole)."""
    return scope.get(_SCOPE_KEY)
