"""`UpstreamSession`: one live MCP client session, entered and exited by the one task that owns it.

The SDK's client contexts hold anyio cancel scopes, which must be exited by the task that entered them; a session
shared by many callers therefore lives in a dedicated owner task (started with `TaskGroup.start`) and is published
only after its handshake succeeded. Callers in any task send requests through it; closing asks the owner to leave.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.abc
from mcp import Client, StdioServerParameters, types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from gateway.client.connection import (
    ConnectionParams,
    SseConnectionParams,
    StdioConnectionParams,
    StreamableHTTPConnectionParams,
)
from gateway.client.http import http_client
from gateway.errors import UpstreamUnavailableError

__all__ = ["ClientCallbacks", "UpstreamSession", "open_upstream"]

logger = logging.getLogger(__name__)

_CLOSE_DEADLINE = 5.0


@dataclass(frozen=True)
class ClientCallbacks:
    """What the upstream may ask of us: the SDK's client callbacks, passed through."""

    elicitation: Any | None = None
    sampling: Any | None = None
    logging: Any | None = None
    list_roots: Any | None = None
    on_tools_changed: Callable[[], None] | None = None


@dataclass(eq=False)
class UpstreamSession:
    """A connected MCP client session and the means to end it."""

    client: Client
    description: str
    close_requested: anyio.Event = field(default_factory=anyio.Event)
    finished: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None

    @property
    def alive(self) -> bool:
        """False once the transport died or the session was closed."""
        return not self.finished.is_set() and not self.close_requested.is_set()

    async def aclose(self) -> None:
        """Ask the owner task to leave the session, and wait (bounded) until it has."""
        self.close_requested.set()
        with anyio.move_on_after(_CLOSE_DEADLINE, shield=True):
            await self.finished.wait()


def _transport(params: ConnectionParams, headers: dict[str, str] | None) -> Any:
    if isinstance(params, StdioConnectionParams):
        return StdioServerParameters(command=params.command, args=params.args, env=params.env, cwd=params.cwd)
    if isinstance(params, SseConnectionParams):
        return sse_client(
            params.url,
            headers=params.http_headers(headers),
            timeout=params.connect_timeout,
            sse_read_timeout=params.sse_read_timeout,
            auth=params.httpx_auth(),
        )
    return _streamable_http(params, headers)


@contextlib.asynccontextmanager
async def _streamable_http(
    params: StreamableHTTPConnectionParams, headers: dict[str, str] | None
) -> AsyncGenerator[Any]:
    async with (
        http_client(
            headers=params.http_headers(headers),
            connect_timeout=params.connect_timeout,
            read_timeout=max(params.call_timeout or 300.0, 300.0),
            auth=params.httpx_auth(),
        ) as client,
        streamable_http_client(params.url, http_client=client, terminate_on_close=params.terminate_on_close) as streams,
    ):
        yield streams


def _message_handler(callbacks: ClientCallbacks) -> Any:
    async def handle(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification) and callbacks.on_tools_changed:
            callbacks.on_tools_changed()
        elif isinstance(message, Exception):
            logger.debug("Upstream transport reported %r", message)

    return handle


async def _own(
    params: ConnectionParams,
    callbacks: ClientCallbacks,
    headers: dict[str, str] | None,
    mode: str,
    *,
    task_status: anyio.abc.TaskStatus[UpstreamSession],
) -> None:
    client = Client(
        _transport(params, headers),
        mode=mode,  # type: ignore[arg-type]
        read_timeout_seconds=params.call_timeout,
        elicitation_callback=callbacks.elicitation,
        sampling_callback=callbacks.sampling,
        logging_callback=callbacks.logging,
        list_roots_callback=callbacks.list_roots,
        message_handler=_message_handler(callbacks),
        log_level="debug" if callbacks.logging else None,
        cache=None,
    )
    session: UpstreamSession | None = None
    try:
        async with client:
            session = UpstreamSession(client=client, description=params.describe())
            task_status.started(session)
            await session.close_requested.wait()
    except Exception as exc:
        if session is None:
            raise
        # The transport died under a published session: remember why, for the next caller's message.
        session.error = exc
        logger.warning("Upstream %s disconnected: %s", params.describe(), _reason(exc))
    finally:
        if session is not None:
            session.finished.set()


def _reason(exc: BaseException) -> str:
    """The innermost single cause (task groups wrap errors in groups of one)."""
    inner: BaseException = exc
    while isinstance(inner, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", inner)
        if len(group.exceptions) != 1:
            break
        inner = group.exceptions[0]
    text, kind = str(inner), type(inner).__name__  # pyright: ignore[reportUnknownArgumentType]
    return f"{kind}: {text}" if text else kind


async def open_upstream(
    task_group: anyio.abc.TaskGroup,
    params: ConnectionParams,
    callbacks: ClientCallbacks,
    *,
    headers: dict[str, str] | None = None,
    mode: str = "auto",
) -> UpstreamSession:
    """Start a session owned by a new task in `task_group`; return it once the handshake succeeded.

    In `auto` mode the modern protocol is tried first; a server that fails that probe gets a fresh connection
    with the handshake-era `initialize`.

    Raises:
        UpstreamUnavailableError: the server could not be started or reached, or did not complete the handshake
            within the connect timeout; the message names the upstream and what to check.
    """
    attempts = ["auto", "legacy"] if mode == "auto" else [mode]
    last: BaseException | None = None
    for attempt in attempts:
        try:
            with anyio.fail_after(params.connect_timeout):
                return await task_group.start(_own, params, callbacks, headers, attempt)
        except TimeoutError as exc:
            raise UpstreamUnavailableError(
                f"Upstream {params.describe()} did not complete the MCP handshake within "
                f"{params.connect_timeout:g} s. Check that it is an MCP server and that it is running "
                "(raise connect_timeout if it is slow to start)."
            ) from exc
        except Exception as exc:  # noqa: BLE001 - every transport failure becomes one clear error below
            last = exc
            logger.debug("Connecting to %s in %s mode failed: %s", params.describe(), attempt, _reason(exc))
    assert last is not None
    raise UpstreamUnavailableError(_explain(params, last)) from last


def _explain(params: ConnectionParams, exc: BaseException) -> str:
    reason = _reason(exc)
    if isinstance(params, StdioConnectionParams):
        hint = "Check the command and its arguments, and run it by hand to see its error output."
    elif "401" in reason or "403" in reason:
        hint = "The server refused the credentials: check the token or auth settings."
    else:
        hint = "Check the URL, that the server is running, and that it speaks MCP at that path."
    return f"Cannot connect to upstream {params.describe()}: {reason}. {hint}"
