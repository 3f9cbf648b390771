"""`McpToolset`: the tools of a remote MCP server (stdio, SSE or streamable HTTP) as ADK-style tools.

Use it as an async context manager: its upstream sessions are owned by tasks of a task group that lives exactly as
long as the `async with` block.

    async with McpToolset(connection_params=StdioConnectionParams(command="uvx", args=["mcp-server-time"])) as ts:
        tools = await ts.get_tools()
        print(await tools[0].run_async(args={"timezone": "Europe/Paris"}, tool_context=ToolContext()))

Sessions: one per identity — the `session_key` and the headers `header_provider` give a context (all callers share
one session when there is neither). A session whose transport ended (a stdio child that exited, a closed SSE stream)
is replaced before the next call; one the server forgot (HTTP 404 after a restart) or that died under a call fails
that call with a clear error and is replaced on the next. `tools/call` itself is never retried; listings are, once,
on a fresh session. `release(context)` ends one identity's session at once, `session_idle_timeout` ends idle ones.

`tools/list` is paginated and cached per session while the server can announce changes: handshake-era sessions
until `notifications/tools/list_changed`, modern (2026-07-28) sessions while a `subscriptions/listen` stream is
open; otherwise for the TTL the server gives the listing (none by default, so every `get_tools` lists again).

Upstream requests (elicitation, sampling, log messages) reach the callbacks given here, or, with
`forward_client_requests`, the client of the call in flight (`gateway.client.forwarding`). An agent answers an
elicitation by returning `mcp.types.ElicitResult(action="accept", content={...})` from `elicitation_callback` — for
example after asking its user — or `action="decline"`.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self, TypeVar, cast

import anyio
import anyio.abc
from mcp import MCPError, types

from gateway.client.built_tools import BuiltTools
from gateway.client.connection import ConnectionParams
from gateway.client.forwarding import Downstream, forwarding_callbacks
from gateway.client.session_slot import SessionSlot
from gateway.client.upstream import ClientCallbacks, NotificationCallback, UpstreamSession, open_upstream
from gateway.errors import GatewayError, UpstreamUnavailableError
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext, ToolContext, ToolPredicate
from gateway.tools.base_tool import RESERVED_TOOL_NAMES
from gateway.tools.function_tool import ConfirmationPolicy

__all__ = ["HeaderProvider", "McpToolset", "ProgressCallback"]

logger = logging.getLogger(__name__)

HeaderProvider = Callable[[ReadonlyContext], dict[str, str] | Awaitable[dict[str, str]]]
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
_T = TypeVar("_T")


_FIRST_BACKOFF = 0.5
_MAX_BACKOFF = 30.0


class McpToolset(BaseToolset):
    """The tools of one upstream MCP server.

    Args:
        connection_params: how to reach the server (`StdioConnectionParams`, `SseConnectionParams`,
            `StreamableHTTPConnectionParams`), each with its connect and per-call timeouts.
        tool_filter: upstream tool names to offer, or a predicate; matched before the prefix is applied.
        tool_name_prefix: rename tools `{prefix}_{name}` (calls still use the upstream name).
        require_confirmation: ask before every call (`True`) or when a predicate over the arguments says so.
        header_provider: headers for a context (e.g. a per-user token); each distinct set gets its own session.
        progress_callback: receives every progress notification of this toolset's calls.
        elicitation_callback: answers the server's elicitation requests (the SDK's callback signature).
        sampling_callback: answers the server's sampling requests.
        logging_callback: receives the server's log messages.
        mode: `"auto"` (try the 2026-07-28 protocol, fall back to the handshake), `"legacy"` (handshake only) or
            `"2026-07-28"`.
        session_key: a key for a context; each distinct key gets its own upstream session (the gateway keys
            sessions by downstream session, so a stateful upstream never mixes two clients).
        confirm_tool: decides per upstream tool whether its calls need confirmation (on top of
            `require_confirmation`), e.g. from its `destructiveHint`.
        forward_client_requests: send the upstream's elicitation, sampling and log messages to the client of
            the call in flight (through its `ToolContext`) instead of to the callbacks.
        session_meta_key: a `_meta` key under which every request carries a digest of the context's
            `session_key`, so that a sessionless (2026-07-28) upstream can still tell the sessions apart, and one
            that restarted finds the same key again (adk-mcp-gateway servers read `adk-mcp-gateway/session`).
        session_idle_timeout: close a session after this many seconds without a request in flight (a new one is
            opened on the next use); None keeps sessions until the toolset closes.
        notification_callback: receives the server's change notifications (tool, resource and prompt lists
            changed, a subscribed resource updated); the toolset's own tool cache is refreshed either way.
    """

    def __init__(
        self,
        *,
        connection_params: ConnectionParams,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
        require_confirmation: ConfirmationPolicy = False,
        header_provider: HeaderProvider | None = None,
        progress_callback: ProgressCallback | None = None,
        elicitation_callback: Any | None = None,
        sampling_callback: Any | None = None,
        logging_callback: Any | None = None,
        mode: str = "auto",
        session_key: Callable[[ReadonlyContext], str] | None = None,
        confirm_tool: Callable[[types.Tool], bool] | None = None,
        forward_client_requests: bool = False,
        session_meta_key: str | None = None,
        session_idle_timeout: float | None = None,
        notification_callback: NotificationCallback | None = None,
    ) -> None:
        if not connection_params:
            raise ValueError("Missing connection params in McpToolset.")
        super().__init__(tool_filter=tool_filter, tool_name_prefix=tool_name_prefix)
        self.connection_params = connection_params
        self.require_confirmation = require_confirmation
        self.header_provider = header_provider
        self.progress_callback = progress_callback
        self.mode = mode
        self.session_key = session_key
        self.confirm_tool = confirm_tool
        self.forward_client_requests = forward_client_requests
        self.session_meta_key = session_meta_key
        self.session_idle_timeout = session_idle_timeout
        self._callbacks = ClientCallbacks(
            elicitation=elicitation_callback,
            sampling=sampling_callback,
            logging=logging_callback,
            notification=notification_callback,
        )
        self.downstream: Downstream | None = None
        """With `forward_client_requests`: where roots requests and change notifications go (set by the gateway)."""
        self._slots: dict[str, SessionSlot] = {}
        self._built = BuiltTools(self)
        self._task_group: anyio.abc.TaskGroup | None = None
        self._failures = 0
        self._last_error: str | None = None
        self._retry_at = 0.0

    # --- lifecycle ----------------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        task_group, self._task_group = self._task_group, None
        with anyio.CancelScope(shield=True):
            await self.close()
        if task_group is not None:
            task_group.cancel_scope.cancel()
            # The block's own exception propagates as it is; the owner tasks never raise into the group.
            await task_group.__aexit__(None, None, None)

    async def close(self) -> None:
        """End every upstream session (stdio children are killed with their process group)."""
        slots, self._slots = list(self._slots.values()), {}
        async with anyio.create_task_group() as tg:
            for slot in slots:
                if slot.session is not None:
                    tg.start_soon(slot.session.aclose)

    # --- sessions -----------------------------------------------------------------------------------------------

    async def _headers(self, context: ReadonlyContext | None) -> dict[str, str] | None:
        if self.header_provider is None or context is None:
            return None
        headers = self.header_provider(context)
        if inspect.isawaitable(headers):
            headers = await headers
        return dict(headers)

    async def _identity(self, context: ReadonlyContext | None) -> tuple[str, str, dict[str, str] | None]:
        """The slot key, the session key and the headers of a context."""
        headers = await self._headers(context)
        identity = self.session_key(context) if self.session_key is not None and context is not None else ""
        return json.dumps([identity, headers or {}], sort_keys=True), identity, headers

    def _session_meta(self, identity: str) -> types.RequestParamsMeta | None:
        if not self.session_meta_key or not identity:
            return None
        # A digest: the upstream needs a stable, distinct key, not the downstream's user and session ids.
        digest = hashlib.sha256(identity.encode()).hexdigest()[:32]
        return cast("types.RequestParamsMeta", {self.session_meta_key: digest})

    async def _slot(self, context: ReadonlyContext | None) -> tuple[SessionSlot, UpstreamSession]:
        if self._task_group is None:
            raise GatewayError(
                "McpToolset is not open: use it as `async with McpToolset(...) as toolset:` so that its upstream "
                "sessions have an owner (and are closed when the block ends)."
            )
        key, identity, headers = await self._identity(context)
        slot = self._slots.get(key)
        if slot is None:
            self._forget_ended_slots()
            slot = self._slots[key] = SessionSlot()
        async with slot.lock:
            if slot.session is None or not slot.session.alive:
                stale, slot.session, slot.tools = slot.session, None, None
                if stale is not None:
                    await stale.aclose()
                callbacks = self._session_callbacks(slot, context)
                wait = self._retry_at - time.monotonic()
                if wait > 0 and self._last_error is not None:
                    raise UpstreamUnavailableError(f"{self._last_error} (next attempt in {wait:.1f} s)")
                try:
                    session = await open_upstream(
                        self._task_group,
                        self.connection_params,
                        callbacks,
                        headers=headers,
                        mode=self.mode,
                        idle_timeout=self.session_idle_timeout,
                    )
                except UpstreamUnavailableError as exc:
                    # Back off so a dead upstream is not restarted on every request: 0.5 s, 1 s, 2 s ... 30 s.
                    self._failures += 1
                    self._last_error = str(exc)
                    self._retry_at = time.monotonic() + min(_MAX_BACKOFF, _FIRST_BACKOFF * 2 ** (self._failures - 1))
                    raise
                self._failures, self._last_error, self._retry_at = 0, None, 0.0
                session.meta = self._session_meta(identity)
                slot.session = session
            return slot, slot.session

    def _session_callbacks(self, slot: SessionSlot, context: ReadonlyContext | None) -> ClientCallbacks:
        if not self.forward_client_requests:
            return self._callbacks
        # An isolated session belongs to the downstream session that opened it; a shared one to all of them.
        owner = context if self.session_key is not None else None
        return forwarding_callbacks(slot.active, source=self, downstream=self.downstream, owner=owner)

    async def roots_changed(self, readonly_context: ReadonlyContext | None = None) -> None:
        """Tell the upstream session of a context (if one is open) that its client's roots changed."""
        key, _, _ = await self._identity(readonly_context)
        slot = self._slots.get(key)
        session = slot.session if slot is not None else None
        if session is None or not session.alive or session.modern:
            return
        try:
            # Sent as a plain notification: `Client.send_roots_list_changed` warns that roots are deprecated,
            # which they are only from 2026-07-28 on (this session is older).
            await session.client.session.send_notification(types.RootsListChangedNotification())
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            logger.debug("Could not tell %s that the roots changed: %s", session.description, exc)

    def status(self) -> dict[str, Any]:
        """Health for `/healthz`: `connected` (a live session), `idle` (none needed yet) or `failing` (why)."""
        live = sum(1 for slot in self._slots.values() if slot.session is not None and slot.session.alive)
        if live:
            state = "connected"
        elif self._last_error is not None:
            state = "failing"
        else:
            state = "idle"
        report: dict[str, Any] = {"state": state, "sessions": live}
        if self._last_error is not None:
            report["error"] = self._last_error
            report["failures"] = self._failures
        return report

    def _forget_ended_slots(self) -> None:
        """Drop the slots of identities whose session ended (idle, closed) and that nobody is using."""
        for key, slot in list(self._slots.items()):
            if slot.session is not None and not slot.session.alive and not slot.lock.locked() and not slot.active:
                del self._slots[key]

    async def release(self, readonly_context: ReadonlyContext | None = None) -> None:
        """End the session of a context's identity now (e.g. when the downstream session it served ended)."""
        key, _, _ = await self._identity(readonly_context)
        slot = self._slots.pop(key, None)
        if slot is not None and slot.session is not None:
            await slot.session.aclose()

    async def _discard(self, slot: SessionSlot, session: UpstreamSession) -> None:
        if slot.session is session:
            slot.session = None
            slot.tools = None
        await session.aclose()

    @staticmethod
    def _is_dead(session: UpstreamSession, error: MCPError) -> bool:
        return error.code == types.CONNECTION_CLOSED or not session.alive

    async def _request(
        self,
        context: ReadonlyContext | None,
        what: str,
        send: Callable[[SessionSlot, UpstreamSession], Awaitable[_T]],
    ) -> _T:
        """Send an idempotent request; if the session turns out dead, send it once more on a fresh session."""
        for attempt in range(2):
            slot, session = await self._slot(context)
            try:
                with session.busy():
                    return await send(slot, session)
            except MCPError as exc:
                if not self._is_dead(session, exc):
                    raise
                await self._discard(slot, session)
                if attempt:
                    raise UpstreamUnavailableError(
                        f"{what} failed: the session with {session.description} ended twice in a row ({exc.message})."
                    ) from exc
                logger.info("The session with %s ended (%s); reconnecting for %s.", session.description, exc, what)
        raise AssertionError("unreachable")  # pragma: no cover

    async def session(self, readonly_context: ReadonlyContext | None = None) -> UpstreamSession:
        """The live session for a context (opened on first use)."""
        return (await self._slot(readonly_context))[1]

    # --- tools --------------------------------------------------------------------------------------------------

    async def list_mcp_tools(self, readonly_context: ReadonlyContext | None = None) -> list[types.Tool]:
        """Every tool of the upstream (all pages), cached until the server says the list changed.

        Raises:
            UpstreamUnavailableError: the upstream cannot be reached or answered the listing with an error.
        """

        async def list_all(slot: SessionSlot, session: UpstreamSession) -> list[types.Tool]:
            cached = slot.cached_tools(session)
            if cached is not None:
                return cached
            generation = session.tools_generation
            tools: list[types.Tool] = []
            ttl_ms: int | None = None
            cursor: str | None = None
            while True:
                page = await session.client.list_tools(cursor=cursor, meta=session.meta)
                tools.extend(page.tools)
                ttl_ms = page.ttl_ms if ttl_ms is None else min(ttl_ms, page.ttl_ms)
                cursor = page.next_cursor
                if not cursor:
                    break
            if slot.session is session:
                slot.tools = tools
                slot.tools_generation = generation
                slot.tools_expire_at = anyio.current_time() + (ttl_ms or 0) / 1000
            return tools

        try:
            return await self._request(readonly_context, "Listing the tools", list_all)
        except MCPError as exc:
            raise UpstreamUnavailableError(
                f"Listing the tools of {self.connection_params.describe()} failed: {exc.message}"
            ) from exc

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The upstream's tools as `McpTool`s, filtered, sorted by name, ADK-reserved names skipped."""
        selected: list[BaseTool] = []
        for mcp_tool in await self.list_mcp_tools(readonly_context):
            if mcp_tool.name in RESERVED_TOOL_NAMES:
                logger.warning("Skipping upstream tool %r: the name is reserved by ADK.", mcp_tool.name)
                continue
            tool = self._built.tool(mcp_tool)
            if self._is_tool_selected(tool, readonly_context):
                selected.append(tool)
        return sorted(selected, key=lambda t: t.name)

    async def call_tool(self, name: str, args: dict[str, Any], tool_context: ToolContext) -> types.CallToolResult:
        """Send `tools/call` once, never again: a session that dies is dropped so the next call gets a fresh one.

        Raises:
            UpstreamUnavailableError: the upstream cannot be reached, or its session ended during the call.
            MCPError: the upstream answered with a JSON-RPC error (unknown tool, bad request, timeout).
        """
        slot, session = await self._slot(tool_context)

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if self.progress_callback is not None:
                await self.progress_callback(progress, total, message)
            update: dict[str, Any] = {"progress": progress, "total": total, "message": message}
            await tool_context.send_progress({key: value for key, value in update.items() if value is not None})

        slot.active.append(tool_context)
        try:
            with session.busy():
                return await session.client.call_tool(name, args, progress_callback=on_progress, meta=session.meta)
        except MCPError as exc:
            if not self._is_dead(session, exc):
                raise
            await self._discard(slot, session)
            if session.expired:
                raise UpstreamUnavailableError(
                    f"{session.description} no longer knows this session (the server restarted or expired it), "
                    f"so the call to {name!r} was refused; it was not retried. The next call opens a new session."
                ) from exc
            raise UpstreamUnavailableError(
                f"The session with {session.description} ended during the call to {name!r} "
                f"({_cause(session, exc)}); the call was not retried, so it may or may not have taken effect. "
                "The next call opens a new session."
            ) from exc
        finally:
            slot.active.remove(tool_context)

    # --- resources and prompts ----------------------------------------------------------------------------------

    async def list_resources(self, readonly_context: ReadonlyContext | None = None) -> list[types.Resource]:
        """Every resource the upstream lists (all pages)."""

        async def list_all(_slot: SessionSlot, session: UpstreamSession) -> list[types.Resource]:
            return await _all_pages(
                lambda cursor: session.client.list_resources(cursor=cursor, meta=session.meta),
                lambda page: page.resources,
            )

        return await self._request(readonly_context, "Listing the resources", list_all)

    async def read_resource(
        self, uri: str, readonly_context: ReadonlyContext | None = None
    ) -> types.ReadResourceResult:
        """Read one resource."""
        return await self._request(
            readonly_context,
            f"Reading {uri}",
            lambda _slot, session: session.client.read_resource(uri, meta=session.meta),
        )

    async def list_prompts(self, readonly_context: ReadonlyContext | None = None) -> list[types.Prompt]:
        """Every prompt the upstream lists (all pages)."""

        async def list_all(_slot: SessionSlot, session: UpstreamSession) -> list[types.Prompt]:
            return await _all_pages(
                lambda cursor: session.client.list_prompts(cursor=cursor, meta=session.meta),
                lambda page: page.prompts,
            )

        return await self._request(readonly_context, "Listing the prompts", list_all)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, readonly_context: ReadonlyContext | None = None
    ) -> types.GetPromptResult:
        """Render one prompt."""
        return await self._request(
            readonly_context,
            f"Getting the prompt {name!r}",
            lambda _slot, session: session.client.get_prompt(name, arguments, meta=session.meta),
        )


_Page = TypeVar("_Page", types.ListResourcesResult, types.ListPromptsResult)
_Entry = TypeVar("_Entry")


async def _all_pages(
    fetch: Callable[[str | None], Awaitable[_Page]], entries: Callable[[_Page], list[_Entry]]
) -> list[_Entry]:
    """Every entry of a paginated listing, following `next_cursor` to the end."""
    collected: list[_Entry] = []
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        collected.extend(entries(page))
        cursor = page.next_cursor
        if not cursor:
            return collected


def _cause(session: UpstreamSession, error: MCPError) -> str:
    if session.error is not None:
        return f"{error.message}: {session.error}"
    return error.message
