"""`UpstreamSession`: one live MCP client session, entered and exited by the one task that owns it.

The SDK's client contexts hold anyio cancel scopes, which must be exited by the task that entered them; a session
shared by many callers therefore lives in a dedicated owner task (started with `TaskGroup.start`) and is published
only after its handshake succeeded. Callers in any task send requests through it; closing asks the owner to leave.

The owner also watches for tool-list changes: handshake-era servers send `notifications/tools/list_changed` on the
session itself; modern (2026-07-28) servers deliver them only on a `subscriptions/listen` stream, which the owner
keeps open while the server offers one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.abc
import httpx2
from mcp import Client, MCPError, types
from mcp.client.extension import ClientExtension
from mcp.client.session import IncomingMessage, MessageHandlerFnT
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.client.connection import ConnectionParams
from gateway.client.relayed_round import stamp_declared
from gateway.client.sessions._connect_failure import explain, reason, unreachable
from gateway.client.sessions._declared_client import DeclaringClient
from gateway.client.sessions.http_channel import HttpChannel, IncomingHandlers
from gateway.client.sessions.transport import open_transport
from gateway.client.task_consumer import finish_claimed_tasks
from gateway.errors import UpstreamUnavailableError

__all__ = ["HANDSHAKE_FIRST", "ClientCallbacks", "NotificationCallback", "UpstreamSession", "open_upstream"]

HANDSHAKE_FIRST: Final = "handshake-first"
"""A `mode`: the handshake era (`legacy`) if the server offers it, else whatever `auto` negotiates."""
_ATTEMPTS: Final = {"auto": ("auto", "legacy"), HANDSHAKE_FIRST: ("legacy", "auto")}
"""The connection attempts of a mode, in order (a server that rejects the first gets the next)."""

logger = logging.getLogger(__name__)

_CLOSE_DEADLINE = 5.0
_SESSION_HEADER = "mcp-session-id"
_HTTP_NOT_FOUND = 404
_HTTP_ERROR = 400

NotificationCallback = Callable[[types.ServerNotification], Awaitable[None]]
"""Receives the upstream's change notifications: tool, resource and prompt lists changed, a resource updated."""

_RELAYED = (
    types.ToolListChangedNotification,
    types.ResourceListChangedNotification,
    types.ResourceUpdatedNotification,
    types.PromptListChangedNotification,
)
_NOTIFY_DEADLINE = 5.0


@dataclass(frozen=True)
class ClientCallbacks:
    """What the upstream may ask of us: the SDK's client callbacks, passed through, and its change notifications."""

    elicitation: Any | None = None
    sampling: Any | None = None
    logging: Any | None = None
    list_roots: Any | None = None
    notification: NotificationCallback | None = None
    declared: types.ClientCapabilities | None = None
    """Exactly what the session declares (None: what the callbacks given can answer, as the SDK derives it)."""
    extensions: tuple[ClientExtension, ...] = ()  # SDK client extensions it implements (declared besides)

    async def notify(self, notification: types.ServerNotification) -> None:
        """Hand a change notification on; a failing or slow receiver never stalls the session's reader."""
        if self.notification is None:
            return
        with anyio.move_on_after(_NOTIFY_DEADLINE):
            try:
                await self.notification(notification)
            except Exception:
                logger.exception("Handling the upstream notification %s failed", notification.method)


@dataclass(eq=False)
class UpstreamSession:
    """A connected MCP client session, what is known about its health, and the means to end it."""

    description: str
    client: Client = field(init=False)
    stop: anyio.Event = field(default_factory=anyio.Event)
    """Set when the owner task should leave: closing was requested, or the transport ended."""
    finished: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None
    """Why the transport died, when it did."""
    transport_ended: bool = False
    """The server's side of the connection ended (a stdio child exited, an SSE stream closed)."""
    expired: bool = False
    """The server forgot this session (HTTP 404 for a request carrying its `mcp-session-id`)."""
    http_error: int | None = None
    """The status of the last HTTP response >= 400, for error messages."""
    tools_generation: int = 0
    """Bumped by every tool-list change the server announces."""
    content_generation: int = 0
    """Bumped by every resource- or prompt-list change the server announces (kept listings of them end)."""
    watches_tools: bool = False
    """Whether changes of the tool list reach this session (so a cached listing stays valid until one does)."""
    meta: types.RequestParamsMeta | None = None
    """The `_meta` every request on this session carries (e.g. a session key for a sessionless upstream)."""
    in_flight: int = 0
    idle: anyio.Event = field(default_factory=anyio.Event)
    """Set while no request is in flight (a new event each time one starts)."""
    last_used: float = field(default_factory=anyio.current_time)
    channel: HttpChannel | None = None
    """The session's HTTP side, for calls the hub POSTs itself (streamable HTTP sessions only)."""
    handlers: IncomingHandlers | None = None
    """What answers the upstream's messages on such a call's stream (the session's own callbacks)."""

    def __post_init__(self) -> None:
        self.idle.set()

    @property
    def alive(self) -> bool:
        """False once the transport died, the server ended the session, or it was closed."""
        return not (self.finished.is_set() or self.stop.is_set() or self.expired)

    @property
    def modern(self) -> bool:
        """Whether the session speaks the sessionless 2026-07-28 protocol."""
        return self.client.protocol_version in MODERN_PROTOCOL_VERSIONS

    @contextlib.contextmanager
    def busy(self) -> Generator[None]:
        """Mark a request in flight (an idle session is closed only when none is)."""
        if not self.in_flight:
            self.idle = anyio.Event()
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            self.last_used = anyio.current_time()
            if not self.in_flight:
                self.idle.set()

    def tools_changed(self) -> None:
        """The server announced that its tool list changed."""
        self.tools_generation += 1

    async def aclose(self) -> None:
        """Ask the owner task to leave the session, and wait (bounded) until it has."""
        self.stop.set()
        with anyio.move_on_after(_CLOSE_DEADLINE, shield=True):
            await self.finished.wait()

    async def observe(self, response: httpx2.Response) -> None:
        """An `httpx2` response hook: notice a forgotten session and remember error statuses."""
        if response.status_code >= _HTTP_ERROR:
            self.http_error = response.status_code
        if response.status_code == _HTTP_NOT_FOUND and response.request.headers.get(_SESSION_HEADER):
            self.expired = True
        if self.channel is not None:
            self.channel.observe(response)

    def bind_http(self, client: httpx2.AsyncClient, url: str) -> None:
        """Keep the streamable HTTP transport's client, so that the hub can POST a call on it (`HttpChannel`)."""
        self.channel = HttpChannel(client, url)

    def end_of_transport(self) -> None:
        """The transport's read stream ended: no answer can arrive any more."""
        self.transport_ended = True
        self.stop.set()


def _message_handler(session: UpstreamSession, callbacks: ClientCallbacks) -> MessageHandlerFnT:
    async def handle(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            session.tools_changed()
        elif isinstance(message, types.ResourceListChangedNotification | types.PromptListChangedNotification):
            session.content_generation += 1
        if isinstance(message, _RELAYED):
            await callbacks.notify(message)
        elif isinstance(message, Exception):
            logger.debug("Upstream %s transport reported %r", session.description, message)

    return handle


_CHANGE_NOTIFICATIONS: Final[dict[type, types.ServerNotification]] = {
    ToolsListChanged: types.ToolListChangedNotification(),
    PromptsListChanged: types.PromptListChangedNotification(),
    ResourcesListChanged: types.ResourceListChangedNotification(),
}


async def _watch_changes(session: UpstreamSession, callbacks: ClientCallbacks) -> None:
    """Keep a modern session's `subscriptions/listen` stream for list changes open, for as long as it lasts: tool-list
    changes keep the session's cached listing honest, and every change is handed on as a handshake-era session's are."""
    try:
        async with session.client.listen(
            tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
        ) as subscription:
            if not subscription.honored.tools_list_changed:
                return
            session.watches_tools = True
            # A listing fetched before the acknowledgment may already be stale.
            session.tools_changed()
            async for event in subscription:
                if isinstance(event, ToolsListChanged):
                    session.tools_changed()
                elif isinstance(event, ResourcesListChanged | PromptsListChanged):
                    session.content_generation += 1
                notification = _CHANGE_NOTIFICATIONS.get(type(event))
                if notification is not None:
                    await callbacks.notify(notification)
    except (MCPError, SubscriptionLost, ListenNotSupportedError, TimeoutError) as exc:
        logger.debug("Upstream %s offers no list-change subscription: %s", session.description, exc)
    finally:
        session.watches_tools = False
        # A change may have gone unseen while the stream was down.
        session.tools_changed()
        session.content_generation += 1


def _announces_tool_changes(client: Client) -> bool:
    tools = client.server_capabilities.tools if client.server_capabilities else None
    return bool(tools and tools.list_changed)


async def _until_stopped_or_idle(session: UpstreamSession, idle_timeout: float | None) -> None:
    """Wait until the session should end: closing was requested, the transport ended, or it sat idle too long."""
    while idle_timeout is not None:
        remaining = idle_timeout if session.in_flight else session.last_used + idle_timeout - anyio.current_time()
        if remaining <= 0:
            logger.debug("Closing the session with %s: idle for %g s.", session.description, idle_timeout)
            session.stop.set()
            return
        with anyio.move_on_after(remaining):
            await session.stop.wait()
            return
    await session.stop.wait()


async def _own(  # noqa: PLR0917 - private, started through TaskGroup.start with positional arguments
    params: ConnectionParams,
    callbacks: ClientCallbacks,
    headers: dict[str, str] | None,
    mode: str,
    idle_timeout: float | None,
    session: UpstreamSession,
    *,
    task_status: anyio.abc.TaskStatus[UpstreamSession],
) -> None:
    # A pinned modern version still discovers: the SDK's pinned mode would assume the server has no capabilities
    # (no tools.listChanged, so no list-change subscription); the version is checked once connected.
    pinned = mode if mode in MODERN_PROTOCOL_VERSIONS else None
    handler = _message_handler(session, callbacks)
    session.handlers = IncomingHandlers(
        elicitation=callbacks.elicitation,
        sampling=callbacks.sampling,
        list_roots=callbacks.list_roots,
        logging=callbacks.logging,
        message=handler,
    )
    transport = open_transport(
        params, headers, on_response=session.observe, on_end=session.end_of_transport, on_client=session.bind_http
    )
    client = DeclaringClient(
        transport,
        mode="auto" if pinned else mode,  # type: ignore[arg-type]
        read_timeout_seconds=params.call_timeout,
        elicitation_callback=callbacks.elicitation,
        sampling_callback=callbacks.sampling,
        logging_callback=callbacks.logging,
        list_roots_callback=callbacks.list_roots,
        message_handler=handler,
        log_level="debug" if callbacks.logging else None,
        cache=None,
        extensions=list(callbacks.extensions) or None,
    )
    client.declared = callbacks.declared
    published = False
    try:
        async with client, anyio.create_task_group() as watchers:
            session.client = client
            if session.channel is not None:
                session.channel.closer = watchers
            if pinned is not None and client.protocol_version != pinned:
                raise UpstreamUnavailableError(
                    f"Upstream {params.describe()} does not speak MCP {pinned} (it offered "
                    f"{client.protocol_version}); remove its protocolVersion or set one it speaks."
                )
            if not session.modern:
                session.watches_tools = True  # list_changed arrives on the session itself
            else:
                stamp_declared(client.session)
                finish_claimed_tasks(client.session)
                if _announces_tool_changes(client):
                    watchers.start_soon(_watch_changes, session, callbacks)
            # The idle clock starts now: connecting (a stdio server slow to start) is not idleness.
            session.last_used = anyio.current_time()
            task_status.started(session)
            published = True
            await _until_stopped_or_idle(session, idle_timeout)
            watchers.cancel_scope.cancel()
    except Exception as exc:
        if not published:
            raise
        # The transport died under a published session: remember why, for the next caller's message.
        session.error = exc
        logger.warning("Upstream %s disconnected: %s", params.describe(), reason(exc))
    else:
        if session.transport_ended:
            logger.warning("Upstream %s closed the connection.", params.describe())
    finally:
        session.watches_tools = False
        if published:
            session.finished.set()


async def open_upstream(
    task_group: anyio.abc.TaskGroup,
    params: ConnectionParams,
    callbacks: ClientCallbacks,
    *,
    headers: dict[str, str] | None = None,
    mode: str = "auto",
    idle_timeout: float | None = None,
) -> UpstreamSession:
    """Start a session owned by a new task in `task_group`; return it once the handshake succeeded.

    `mode` is the SDK client's (`auto`, `legacy`, `2026-07-28`) or `HANDSHAKE_FIRST`. In `auto` mode the modern
    protocol is tried first (the SDK falls back to `initialize` when the server
    rejects `server/discover`); a server that broke the connection over that probe gets one more, handshake-era
    connection. Everything, fallback included, happens within `params.connect_timeout`. A session with no request
    in flight for `idle_timeout` seconds closes itself.

    Raises:
        UpstreamUnavailableError: the server could not be started or reached, or did not complete the handshake
            within the connect timeout; the message names the upstream and what to check.
    """
    attempts = _ATTEMPTS.get(mode, (mode,))
    failure: tuple[BaseException, UpstreamSession] | None = None
    try:
        with anyio.fail_after(params.connect_timeout):
            for attempt in attempts:
                session = UpstreamSession(description=params.describe())
                try:
                    return await task_group.start(_own, params, callbacks, headers, attempt, idle_timeout, session)
                except Exception as exc:  # noqa: BLE001 - every transport failure becomes one clear error below
                    failure = (exc, session)
                    logger.debug("Connecting to %s in %s mode failed: %s", params.describe(), attempt, reason(exc))
                    if unreachable(exc, session.http_error):
                        break
    except TimeoutError as exc:
        raise UpstreamUnavailableError(
            f"Upstream {params.describe()} did not complete the MCP handshake within "
            f"{params.connect_timeout:g} s. Check that it is an MCP server and that it is running "
            "(raise connect_timeout if it is slow to start)."
        ) from exc
    assert failure is not None
    raise UpstreamUnavailableError(explain(params, failure[0], failure[1].http_error)) from failure[0]
