"""`McpToolset`: the tools of a remote MCP server (stdio, SSE or streamable HTTP) as ADK-style tools.

Use it as an async context manager: its upstream sessions are owned by tasks of a task group that lives exactly as
long as the `async with` block.

    async with McpToolset(connection_params=StdioConnectionParams(command="uvx", args=["mcp-server-time"])) as ts:
        tools = await ts.get_tools()
        print(await tools[0].run_async(args={"timezone": "Europe/Paris"}, tool_context=ToolContext()))

Sessions: one per identity — the headers `header_provider` returns for a context (all callers share one session
when there is no provider). A session whose transport died or that the server ended (HTTP 404 "Session
terminated", a stdio child that exited) fails the call in flight with a clear error and is replaced on the next
call; `tools/call` itself is never retried. `tools/list` is paginated and cached per session until the server
announces `notifications/tools/list_changed`.

Upstream requests (elicitation, sampling, roots) reach the callbacks given here. An agent answers an elicitation by
returning `mcp.types.ElicitResult(action="accept", content={...})` from `elicitation_callback` — for example after
asking its user — or `action="decline"`.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.abc
from mcp import MCPError, types

from gateway.client.connection import ConnectionParams
from gateway.client.mcp_tool import McpTool
from gateway.client.upstream import ClientCallbacks, UpstreamSession, open_upstream
from gateway.errors import GatewayError, UpstreamUnavailableError
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext, ToolContext, ToolPredicate
from gateway.tools.base_tool import RESERVED_TOOL_NAMES
from gateway.tools.function_tool import ConfirmationPolicy

__all__ = ["HeaderProvider", "McpToolset", "ProgressCallback"]

logger = logging.getLogger(__name__)

HeaderProvider = Callable[[ReadonlyContext], dict[str, str] | Awaitable[dict[str, str]]]
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
_DEAD_SESSION_CODES = frozenset({types.CONNECTION_CLOSED, types.INVALID_REQUEST})


class _SessionSlot:
    """The pooled session of one identity, with its cached tool list."""

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.session: UpstreamSession | None = None
        self.tools: list[types.Tool] | None = None
        self.active: list[ToolContext] = []
        """The calls in flight on this session, newest last: where forwarded upstream requests go."""


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
        self._callbacks = ClientCallbacks(
            elicitation=elicitation_callback,
            sampling=sampling_callback,
            logging=logging_callback,
            on_tools_changed=self._invalidate_tools,
        )
        self._slots: dict[str, _SessionSlot] = {}
        self._task_group: anyio.abc.TaskGroup | None = None

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
        for slot in slots:
            if slot.session is not None:
                await slot.session.aclose()

    # --- sessions -----------------------------------------------------------------------------------------------

    async def _headers(self, context: ReadonlyContext | None) -> dict[str, str] | None:
        if self.header_provider is None or context is None:
            return None
        headers = self.header_provider(context)
        if inspect.isawaitable(headers):
            headers = await headers
        return dict(headers)

    async def _slot(self, context: ReadonlyContext | None) -> tuple[_SessionSlot, UpstreamSession]:
        if self._task_group is None:
            raise GatewayError(
                "McpToolset is not open: use it as `async with McpToolset(...) as toolset:` so that its upstream "
                "sessions have an owner (and are closed when the block ends)."
            )
        headers = await self._headers(context)
        identity = self.session_key(context) if self.session_key is not None and context is not None else ""
        key = json.dumps([identity, headers or {}], sort_keys=True)
        slot = self._slots.setdefault(key, _SessionSlot())
        async with slot.lock:
            if slot.session is None or not slot.session.alive:
                slot.tools = None
                callbacks = (
                    _forwarding_callbacks(slot, self._invalidate_tools) if self.forward_client_requests else None
                )
                slot.session = await open_upstream(
                    self._task_group,
                    self.connection_params,
                    callbacks or self._callbacks,
                    headers=headers,
                    mode=self.mode,
                )
            return slot, slot.session

    async def _discard(self, slot: _SessionSlot, session: UpstreamSession) -> None:
        if slot.session is session:
            slot.session = None
            slot.tools = None
        await session.aclose()

    def _invalidate_tools(self) -> None:
        for slot in self._slots.values():
            slot.tools = None

    async def session(self, readonly_context: ReadonlyContext | None = None) -> UpstreamSession:
        """The live session for a context (opened on first use)."""
        return (await self._slot(readonly_context))[1]

    # --- tools --------------------------------------------------------------------------------------------------

    async def list_mcp_tools(self, readonly_context: ReadonlyContext | None = None) -> list[types.Tool]:
        """Every tool of the upstream (all pages), cached until the server says the list changed."""
        slot, session = await self._slot(readonly_context)
        if slot.tools is not None:
            return slot.tools
        tools: list[types.Tool] = []
        cursor: str | None = None
        try:
            while True:
                page = await session.client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
        except MCPError as exc:
            if exc.code in _DEAD_SESSION_CODES:
                await self._discard(slot, session)
            raise UpstreamUnavailableError(f"Listing the tools of {session.description} failed: {exc.message}") from exc
        slot.tools = tools
        return tools

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The upstream's tools as `McpTool`s, filtered, sorted by name, ADK-reserved names skipped."""
        selected: list[BaseTool] = []
        for mcp_tool in await self.list_mcp_tools(readonly_context):
            if mcp_tool.name in RESERVED_TOOL_NAMES:
                logger.warning("Skipping upstream tool %r: the name is reserved by ADK.", mcp_tool.name)
                continue
            policy: ConfirmationPolicy = self.require_confirmation
            if self.confirm_tool is not None and self.confirm_tool(mcp_tool):
                policy = True
            tool = McpTool(mcp_tool=mcp_tool, toolset=self, require_confirmation=policy)
            if self._is_tool_selected(tool, readonly_context):
                selected.append(tool)
        return sorted(selected, key=lambda t: t.name)

    async def call_tool(self, name: str, args: dict[str, Any], tool_context: ToolContext) -> types.CallToolResult:
        """Send `tools/call` once; a dead session is dropped so the next call gets a fresh one."""
        slot, session = await self._slot(tool_context)

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if self.progress_callback is not None:
                await self.progress_callback(progress, total, message)
            await tool_context.send_progress({"progress": progress, "total": total, "message": message})

        slot.active.append(tool_context)
        try:
            return await session.client.call_tool(name, args, progress_callback=on_progress)
        except MCPError as exc:
            if exc.code in _DEAD_SESSION_CODES and (exc.code == types.CONNECTION_CLOSED or "terminated" in exc.message):
                await self._discard(slot, session)
                raise UpstreamUnavailableError(
                    f"The session with {session.description} ended during the call to {name!r} ({exc.message}); "
                    "the call was not retried. The next call opens a new session."
                ) from exc
            raise
        finally:
            slot.active.remove(tool_context)

    # --- resources and prompts ----------------------------------------------------------------------------------

    async def list_resources(self, readonly_context: ReadonlyContext | None = None) -> list[types.Resource]:
        """Every resource the upstream lists (all pages)."""
        client = (await self.session(readonly_context)).client
        resources: list[types.Resource] = []
        cursor: str | None = None
        while True:
            page = await client.list_resources(cursor=cursor)
            resources.extend(page.resources)
            cursor = page.next_cursor
            if not cursor:
                return resources

    async def read_resource(
        self, uri: str, readonly_context: ReadonlyContext | None = None
    ) -> types.ReadResourceResult:
        """Read one resource."""
        return await (await self.session(readonly_context)).client.read_resource(uri)

    async def list_prompts(self, readonly_context: ReadonlyContext | None = None) -> list[types.Prompt]:
        """Every prompt the upstream lists (all pages)."""
        client = (await self.session(readonly_context)).client
        prompts: list[types.Prompt] = []
        cursor: str | None = None
        while True:
            page = await client.list_prompts(cursor=cursor)
            prompts.extend(page.prompts)
            cursor = page.next_cursor
            if not cursor:
                return prompts

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, readonly_context: ReadonlyContext | None = None
    ) -> types.GetPromptResult:
        """Render one prompt."""
        return await (await self.session(readonly_context)).client.get_prompt(name, arguments)


def _forwarding_callbacks(slot: _SessionSlot, on_tools_changed: Callable[[], None]) -> ClientCallbacks:
    """Callbacks that hand the upstream's requests to the client of the newest call in flight on `slot`."""

    def current() -> ToolContext | None:
        return slot.active[-1] if slot.active else None

    async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        tool_context = current()
        if tool_context is None or isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="decline")
        try:
            return await tool_context.elicit(params.message, dict(params.requested_schema))
        except Exception as exc:  # noqa: BLE001 - the upstream gets the reason as a JSON-RPC error
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"The gateway's client cannot answer: {exc}")

    async def sample(
        _context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        tool_context = current()
        if tool_context is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="No client call is waiting for this request.")
        try:
            return await tool_context.sample(
                list(params.messages),
                max_tokens=params.max_tokens,
                system_prompt=params.system_prompt,
                temperature=params.temperature,
            )
        except Exception as exc:  # noqa: BLE001 - the upstream gets the reason as a JSON-RPC error
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"The gateway's client cannot answer: {exc}")

    async def log(params: types.LoggingMessageNotificationParams) -> None:
        tool_context = current()
        if tool_context is not None:
            with contextlib.suppress(GatewayError):
                await tool_context.log(params.level, params.data, params.logger)

    return ClientCallbacks(elicitation=elicit, sampling=sample, logging=log, on_tools_changed=on_tools_changed)
