"""What a failed connection to an upstream says: its innermost cause, and a sentence naming the upstream and what to
check."""

from __future__ import annotations

from typing import cast

import httpx2

from gateway.client.connection import ConnectionParams, StdioConnectionParams
from gateway.client.sessions.transport import CommandNotFoundError

__all__ = ["explain", "innermost", "reason", "unreachable"]


def reason(exc: BaseException) -> str:
    """The kind and text of the innermost single cause."""
    inner = innermost(exc)
    # First line only: httpx2's status errors append a documentation link.
    text, kind = str(inner).strip().split("\n", 1)[0].rstrip("."), type(inner).__name__
    return f"{kind}: {text}" if text else kind


def innermost(exc: BaseException) -> BaseException:
    """The innermost single cause (task groups wrap errors in groups of one)."""
    inner = exc
    while isinstance(inner, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", inner)
        if len(group.exceptions) != 1:
            break
        inner = group.exceptions[0]
    return cast("BaseException", inner)


def unreachable(exc: BaseException, http_error: int | None) -> bool:
    """Whether a failed attempt never reached an MCP peer (so another protocol era cannot help)."""
    return http_error is not None or isinstance(innermost(exc), OSError | httpx2.TransportError)


def explain(params: ConnectionParams, exc: BaseException, http_error: int | None) -> str:
    """Why a connection failed and what to check, in one sentence naming the upstream."""
    why = reason(exc)
    status = http_error
    if status is not None and f"{status}" not in why:
        why = f"HTTP {status} ({why})"
    if isinstance(params, StdioConnectionParams) and isinstance(innermost(exc), CommandNotFoundError):
        return f"Cannot start upstream {params.describe()}: {innermost(exc)}."
    if isinstance(params, StdioConnectionParams):
        hint = "Check the command and its arguments, and run it by hand to see its error output."
    elif status == 401:
        hint = "The server wants credentials: check the token (bearer_token, headers or auth)."
    elif status == 403:
        hint = "The server refused the request: check the token and its scopes, and that the server accepts this host."
    else:
        hint = "Check the URL, that the server is running, and that it speaks MCP at that path."
    return f"Cannot connect to upstream {params.describe()}: {why}. {hint}"
