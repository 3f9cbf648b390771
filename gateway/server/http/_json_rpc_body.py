"""`parse_message`: the one reading of a POSTed JSON-RPC body, for the fast lane and the general path alike.

The body is read as the gateway reads all JSON-RPC text (`gateway._strict_json`: UTF-8 only, no `NaN` or
`Infinity`, no lone surrogate, no number past a double's range); what is not such JSON is -32700 Parse error. A
body that is JSON but not one JSON-RPC message — a batch (an array; MCP dropped batches in 2025-06-18) or a
scalar — is -32600 Invalid Request.

`MalformedIdGuard` (`gateway.server.http._request_ids`) reads every POST body of `/mcp` and `/messages/` with it,
answers what it refuses, and leaves the message in the request's scope (`parsed_message`) so the fast lane parses
nothing again.
"""

from __future__ import annotations

from typing import Any, Final, cast

from mcp import types
from starlette.types import Scope

from gateway._strict_json import parse_strict_json

__all__ = ["InvalidBodyError", "parse_message", "parsed_message", "remember_message"]

_SCOPE_KEY: Final = "adk_mcp_gateway.message"


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
        message: Any = parse_strict_json(body)
    except ValueError as exc:
        raise InvalidBodyError(types.PARSE_ERROR, f"Parse error: {exc}") from None
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


def remember_message(scope: Scope, message: dict[str, Any]) -> None:
    """Leave a request's parsed message in its scope, for `parsed_message`."""
    scope[_SCOPE_KEY] = message


def parsed_message(scope: Scope) -> dict[str, Any] | None:
    """The message `remember_message` left in a request's scope (None: its body was not read whole)."""
    return scope.get(_SCOPE_KEY)
