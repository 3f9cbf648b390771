"""`RelayedRound`: a round of a modern (2026-07-28) request relayed from a modern client to a modern upstream.

A relayed round (an upstream's `InputRequiredResult` handed to the downstream client as it is) is answered by the
downstream client, not by the gateway, so the upstream must see what that client can answer: its
`io.modelcontextprotocol/clientCapabilities`, not the gateway's. The SDK's `ClientSession` stamps its own
capabilities into every modern request's `_meta`; `stamp_declared` wraps that stamp so that, inside
`declaring(...)`, the request carries the given capabilities instead. The stamp runs synchronously in the task that
sends the request, so a context variable scopes the override to that one request.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, cast

from mcp import ClientSession, types
from mcp.types import CLIENT_CAPABILITIES_META_KEY

__all__ = ["RelayedRound", "declaring", "stamp_declared"]

_declared: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "adk_mcp_gateway_declared_capabilities", default=None
)


@dataclass(frozen=True)
class RelayedRound:
    """What the client sent for one round: its answers, the upstream's state, and what it can answer."""

    input_responses: types.InputResponses | None = None
    """The client's answers, under the upstream's own keys, as sent."""
    request_state: str | None = None
    """The upstream's `requestState` from the round before (None on a first round)."""
    capabilities: dict[str, Any] | None = None
    """The client's capabilities (wire form), declared to the upstream in its place."""


@contextlib.contextmanager
def declaring(capabilities: dict[str, Any] | None) -> Generator[None]:
    """Requests sent inside declare `capabilities` (wire form) as the client's; None keeps the session's own."""
    token = _declared.set(capabilities)
    try:
        yield
    finally:
        _declared.reset(token)


def stamp_declared(session: ClientSession) -> None:
    """Make `session`'s modern envelope honour `declaring` (call once, after the session negotiated its era).

    Only what the client declared: a gateway that declared the Tasks extension in its place would have the
    upstream make a task of a call whose progress the client follows (a task reports none).
    """
    original: Callable[[dict[str, Any], Any], None] = session._stamp  # pyright: ignore[reportPrivateUsage]

    def stamp(data: dict[str, Any], opts: Any) -> None:
        original(data, opts)
        capabilities = _declared.get()
        params: Any = data.get("params")
        meta: Any = cast("dict[str, Any]", params).get("_meta") if isinstance(params, dict) else None
        if capabilities is not None and isinstance(meta, dict) and CLIENT_CAPABILITIES_META_KEY in meta:
            cast("dict[str, Any]", meta)[CLIENT_CAPABILITIES_META_KEY] = capabilities

    session._stamp = stamp  # pyright: ignore[reportPrivateUsage]
