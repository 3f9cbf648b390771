"""`CheckedWriteStream`: an MCP transport's write side that hands on only messages it can serialise.

The SDK's transports serialise a message in the task that writes to the connection (a stdio pipe, an SSE stream, an
HTTP POST); a message that cannot be serialised (a string with a lone surrogate, which UTF-8 cannot carry: a file
name read with `os.fsdecode`, say) raises there and ends the transport, and with it a session other requests use:
an upstream session every client may share, or a downstream client's stdio or SSE connection. Here each message is
serialised as the stdio transport serialises it before it is handed on, so it fails alone:

* a request fails its caller with `MCPError` -32602 (Invalid params) saying why, and nothing is sent;
* an answer to the peer's request becomes an error answer (-32603), so the peer's request still ends;
* a notification is dropped, with a warning.

Both sides use it: the gateway's upstream transports (`gateway.client.sessions.transport`) and its own stdio and SSE
connections (`gateway.server`).
"""

from __future__ import annotations

import logging
from typing import Protocol

import anyio.abc
from mcp import MCPError, types
from mcp.shared.message import SessionMessage
from pydantic_core import PydanticSerializationError

__all__ = ["CheckedWriteStream"]

logger = logging.getLogger(__name__)


class _Sending(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...
    async def aclose(self) -> None: ...


class CheckedWriteStream(anyio.abc.AsyncResource):
    """A transport's write stream (`inner`) that refuses, message by message, what cannot be serialised.

    Args:
        inner: the transport's write stream.
        peer: who is at the other end, for messages (an upstream's description, "the client").
    """

    def __init__(self, inner: _Sending, peer: str) -> None:
        self._inner = inner
        self._peer = peer

    async def send(self, item: SessionMessage, /) -> None:
        message = item.message
        try:
            # As the stdio transports' writers serialise it (the HTTP and SSE ones fail on the same).
            message.model_dump_json(by_alias=True, exclude_unset=True)
        except PydanticSerializationError as exc:
            replacement = self._refused(message, exc)
            if replacement is None:
                return
            item = SessionMessage(replacement, metadata=item.metadata)
        await self._inner.send(item)

    def _refused(self, message: types.JSONRPCMessage, exc: PydanticSerializationError) -> types.JSONRPCMessage | None:
        """What goes in place of `message`, which cannot be serialised (None: nothing); raises for a request."""
        if isinstance(message, types.JSONRPCRequest):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"The {message.method} request cannot be sent to {self._peer}: {exc}. Nothing was sent.",
            )
        if isinstance(message, types.JSONRPCNotification):
            logger.warning("Dropped a %s notification to %s: %s", message.method, self._peer, exc)
            return None
        logger.warning("The gateway's answer to request %r of %s cannot be sent: %s", message.id, self._peer, exc)
        error = types.ErrorData(code=types.INTERNAL_ERROR, message=f"The gateway's answer cannot be serialised: {exc}")
        return types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)

    async def aclose(self) -> None:
        await self._inner.aclose()
