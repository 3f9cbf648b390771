"""`ToolServer`: local tools published as an MCP server (the `tools/*` handlers over the low-level SDK `Server`).

Per `tools/call`: resolve the caller (`identity`), load its scoped state, build a `ToolContext` lending the
client's features, run the tool, ask the client to confirm through elicitation when the tool requested a
confirmation, write the state delta back, and translate the response with the adapters.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from typing import Any, Final, Self, TypeVar, cast

import anyio
import jsonschema
import pydantic
from mcp import MCPError, types
from mcp.server import NotificationOptions, Server
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

from adapters import response_to_mcp_result
from adapters.mcp_tool import is_wrapped_output_schema
from gateway.client import McpTool, McpToolset
from gateway.errors import NameConflictError, ServiceNotConfiguredError
from gateway.server.catalog import CatalogEntry, ToolCatalog
from gateway.server.client_features import McpClientFeatures, deprecated_in_2026
from gateway.server.held_calls import HeldCall, HeldCalls, Suspend
from gateway.server.identity import CallIdentity, identify
from gateway.server.passthrough import Passthrough
from gateway.server.relay import MAX_TRACKED_SESSIONS, DownstreamRelay
from gateway.state import InMemoryStateStore, StateScope, StateStore
from gateway.tools import (
    ArtifactService,
    BaseToolset,
    InMemoryArtifactService,
    ReadonlyContext,
    State,
    ToolConfirmation,
)
from gateway.tools.context import InputRequired, ToolContext
from gateway.tools.function_tool import CONFIRMATION_REJECTED, CONFIRMATION_REQUIRED, FunctionTool
from gateway.tools.tool_union import ToolUnion

__all__ = ["CONFIRM_FIELD", "ToolServer"]

logger = logging.getLogger(__name__)

CONFIRM_FIELD: Final = "confirm"
_CONNECTION_BOUND: Final = ("http:", "connection:")
"""Session keys that end with their connection; `meta:` and `principal:` keys outlive any one connection."""
_RELEASE_DEADLINE: Final = 10.0
_connection_sessions: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "adk_mcp_gateway_connection_sessions", default=None
)
_Item = TypeVar("_Item")
DEFAULT_PAGE_SIZE: Final = 100


def _confirmation_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            CONFIRM_FIELD: {
                "type": "boolean",
                "title": "Allow this tool call",
                "description": "Tick to run the tool, leave unticked to refuse.",
                "default": False,
            }
        },
        "required": [CONFIRM_FIELD],
    }


def _confirmation_message(name: str, args: dict[str, Any], confirmation: ToolConfirmation) -> str:
    shown = ", ".join(f"{key}={value!r}" for key, value in args.items())
    message = f"Allow the tool call {name}({shown})?"
    # ADK's default hint addresses a model ("respond with a FunctionResponse"); a person sees only custom hints.
    if confirmation.hint and "FunctionResponse" not in confirmation.hint:
        message += f"\n\n{confirmation.hint}"
    return message


def _error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _schema_errors(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    validator: Any = jsonschema.Draft202012Validator(schema)
    return [
        f"'{'.'.join(str(p) for p in error.absolute_path) or '(arguments)'}': {error.message}"
        for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    ]


class _ProgressReporter:
    """Turns a long-running tool's yields into monotonic MCP progress."""

    def __init__(self, features: McpClientFeatures) -> None:
        self._features = features
        self._last = 0.0

    async def __call__(self, update: object, /) -> None:
        total: float | None = None
        progress = self._last + 1.0
        message: str | None
        fields = cast("dict[str, Any]", update) if isinstance(update, dict) else {}
        reported = fields.get("progress")
        if isinstance(reported, int | float):
            # Progress must never go backwards, whatever the tool reports.
            progress = max(float(reported), self._last)
            total_value = fields.get("total")
            total = float(total_value) if isinstance(total_value, int | float) else None
            message = str(fields["message"]) if "message" in fields else None
        else:
            message = update if isinstance(update, str) else pydantic.TypeAdapter(Any).dump_json(update).decode()
        self._last = progress
        await self._features.report_progress(progress, total, message)


class ToolServer:
    """Publishes tools as an MCP server.

    Args:
        tools: callables, `BaseTool`s and `BaseToolset`s, in publishing order.
        name: the server name shown to clients.
        state_store: where session, `user:` and `app:` state lives (default: in memory; the CLI and `serve()`
            default to an embedded SQLite file).
        artifact_service: where artifacts live (default: in memory).
        page_size: tools per `tools/list` page.
        request_state_keys: secrets (≥ 32 bytes) sealing the modern era's `requestState`; needed when several
            processes serve one endpoint. Default: a key made at start-up.
    """

    def __init__(
        self,
        tools: Sequence[ToolUnion],
        *,
        name: str = "adk-mcp-gateway",
        version: str = "",
        instructions: str | None = None,
        state_store: StateStore | None = None,
        artifact_service: ArtifactService | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        request_state_keys: Sequence[bytes | str] | None = None,
    ) -> None:
        self.name = name
        self.catalog = ToolCatalog(tools)
        self.state_store: StateStore = state_store or InMemoryStateStore()
        self.artifact_service: ArtifactService = artifact_service or InMemoryArtifactService()
        self.page_size = page_size
        # What each session last listed, to announce changes; sessions end unannounced, so the oldest go first.
        self._exit_stack: contextlib.AsyncExitStack | None = None
        self._principals_of: defaultdict[str, set[str]] = defaultdict(set)
        self._listed: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._log_levels: OrderedDict[str, types.LoggingLevel] = OrderedDict()
        self._active_calls = 0
        # Upstream toolsets announce their own list changes (relayed by `notify`); only other toolsets' lists can
        # change through what a call did, so only they need the catalog compared after each call.
        self._has_local_toolsets = any(
            isinstance(item, BaseToolset) and not isinstance(item, McpToolset) for item in self.catalog.items
        )
        self.passthrough = Passthrough([item for item in self.catalog.items if isinstance(item, McpToolset)])
        self.relay = DownstreamRelay(self.passthrough)
        self.held_calls = HeldCalls()
        self._held_features: dict[str, McpClientFeatures] = {}
        # Resources, prompts and completion are offered only when an upstream can serve them.
        upstream_handlers: dict[str, Any] = (
            {
                "on_list_resources": self._on_list_resources,
                "on_list_resource_templates": self._on_list_resource_templates,
                "on_read_resource": self._on_read_resource,
                "on_subscribe_resource": self._on_subscribe_resource,
                "on_unsubscribe_resource": self._on_unsubscribe_resource,
                "on_list_prompts": self._on_list_prompts,
                "on_get_prompt": self._on_get_prompt,
                "on_completion": self._on_completion,
                "on_roots_list_changed": self._on_roots_list_changed,
            }
            if self.passthrough
            else {}
        )
        with deprecated_in_2026():
            # `logging/setLevel` is deprecated only from 2026-07-28 on; handshake-era clients still send it.
            self.server: Server[Any] = Server(  # pyright: ignore[reportDeprecated]
                name,
                version=version,
                instructions=instructions,
                on_list_tools=self._on_list_tools,
                on_call_tool=self._on_call_tool,
                on_set_logging_level=self._on_set_logging_level,
                **upstream_handlers,
            )
        security = (
            RequestStateSecurity(keys=list(request_state_keys))
            if request_state_keys
            else RequestStateSecurity.ephemeral()
        )
        self.server.middleware.append(RequestStateBoundary(security, default_audience=name))
        # The SDK's HTTP session manager builds initialize options with default NotificationOptions, which
        # hides `tools.listChanged`; this server does announce list changes, so every transport must say so.
        # Each connection's serving loop is wrapped so the sessions it carried are released when it ends.
        self._sdk_run = self.server.run
        self.server.run = self._run_connection  # type: ignore[method-assign]
        self.server.create_initialization_options = functools.partial(  # type: ignore[method-assign]
            Server.create_initialization_options, self.server, NotificationOptions(tools_changed=True)
        )

    @property
    def active_calls(self) -> int:
        """How many `tools/call` requests are running now (an HTTP server drains them before it stops)."""
        return self._active_calls

    async def _run_connection(self, *args: Any, **kwargs: Any) -> None:
        """`Server.run` for one connection (stdio, SSE), releasing the sessions it carried when it ends."""
        seen: set[str] = set()
        token = _connection_sessions.set(seen)
        try:
            await self._sdk_run(*args, **kwargs)
        finally:
            _connection_sessions.reset(token)
            for session_key in seen:
                await self.end_session(session_key)

    def upstream_status(self) -> dict[str, dict[str, Any]]:
        """Each upstream toolset's health (`connected`, `idle` or `failing` with the reason), by config key."""
        reports: dict[str, dict[str, Any]] = {}
        for index, item in enumerate(self.passthrough.upstreams):
            name = getattr(item, "key", None) or f"upstream-{index}"
            reports[str(name)] = item.status()
        return reports

    async def end_session(self, session_key: str) -> None:
        """Release what the toolsets hold for a session that ended (an isolated upstream session, its process).

        Called when a stdio or SSE connection closes and when a streamable HTTP session is deleted.
        """
        principals = self._principals_of.pop(session_key, set[str]())
        for principal in principals:
            self.relay.forget(CallIdentity(principal, session_key).session_owner)
        with anyio.move_on_after(_RELEASE_DEADLINE, shield=True):
            for principal in principals:
                context = ReadonlyContext(app_name=self.name, user_id=principal, session_id=session_key)
                for item in self.catalog.items:
                    if isinstance(item, BaseToolset):
                        try:
                            await item.release(context)
                        except Exception:
                            logger.exception("Releasing session %s of %r failed", session_key, item)

    async def __aenter__(self) -> Self:
        """Open the toolsets that hold connections (an `McpToolset`'s upstream sessions live this long)."""
        async with contextlib.AsyncExitStack() as stack:
            for item in self.catalog.items:
                if isinstance(item, BaseToolset):
                    await stack.enter_async_context(item)
            # Held calls run in the server's own task group, cancelled (first) when the server closes.
            held_tasks = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(self.held_calls.bind, None)
            stack.callback(held_tasks.cancel_scope.cancel)
            self.held_calls.bind(held_tasks)
            self._exit_stack = stack.pop_all()
        # While serving, what the upstreams say outside a call goes to this server's clients.
        for upstream in self.passthrough.upstreams:
            if upstream.forward_client_requests:
                upstream.downstream = self.relay
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the toolsets and the state store."""
        stack, self._exit_stack = self._exit_stack, None
        for upstream in self.passthrough.upstreams:
            if upstream.downstream is self.relay:
                upstream.downstream = None
        if stack is not None:
            # Not inside a shield: the toolsets' task groups were entered outside it and must be exited from
            # the scope they were entered in; each toolset shields its own teardown.
            await stack.aclose()
        with anyio.CancelScope(shield=True):
            await self.catalog.aclose()
            await self.state_store.aclose()

    # --- sessions and state -------------------------------------------------------------------------------------

    def _scope(self, identity: CallIdentity) -> StateScope:
        return StateScope(app_name=self.name, user_id=identity.principal, session_id=identity.session_owner)

    def _track(self, ctx: ServerRequestContext[Any, Any], identity: CallIdentity) -> None:
        if self.passthrough:
            self.relay.track(ctx, identity.session_owner)

    async def _readonly_context(self, identity: CallIdentity) -> tuple[ReadonlyContext, dict[str, Any]]:
        if identity.session_key.startswith(_CONNECTION_BOUND):
            self._principals_of[identity.session_key].add(identity.principal)
            seen = _connection_sessions.get()
            if seen is not None:
                seen.add(identity.session_key)
        loaded = await self.state_store.load(self._scope(identity))
        context = ReadonlyContext(
            state=dict(loaded), app_name=self.name, user_id=identity.principal, session_id=identity.session_key
        )
        return context, loaded

    # --- tools/list ---------------------------------------------------------------------------------------------

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        identity = identify(ctx)
        self._track(ctx, identity)
        readonly, _ = await self._readonly_context(identity)
        entries = list((await self._resolve(readonly)).values())
        self._remember_listing(identity.session_owner, frozenset(e.tool.name for e in entries))
        page, next_cursor = self._page([entry.mcp_tool for entry in entries], params, "tools/list")
        return types.ListToolsResult(tools=page, next_cursor=next_cursor)

    async def _resolve(self, readonly: ReadonlyContext) -> dict[str, CatalogEntry]:
        try:
            return await self.catalog.resolve(readonly)
        except NameConflictError as exc:
            # A configuration problem of this server, not of the request: say so with a proper error code.
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from exc

    def _page(
        self, items: list[_Item], params: types.PaginatedRequestParams | None, method: str
    ) -> tuple[list[_Item], str | None]:
        """One page of a merged listing; the cursor is the offset of the next page."""
        start = 0
        if params is not None and params.cursor is not None:
            if not params.cursor.isdigit() or int(params.cursor) > len(items):
                raise MCPError(code=types.INVALID_PARAMS, message=f"Invalid cursor {params.cursor!r} for {method}.")
            start = int(params.cursor)
        end = start + self.page_size
        return items[start:end], (str(end) if end < len(items) else None)

    # --- resources, prompts, completion (upstream passthrough) -------------------------------------------------

    async def _context(self, ctx: ServerRequestContext[Any, Any]) -> ReadonlyContext:
        identity = identify(ctx)
        self._track(ctx, identity)
        return (await self._readonly_context(identity))[0]

    async def _on_list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        merged = await self.passthrough.list_resources(await self._context(ctx))
        page, next_cursor = self._page(merged, params, "resources/list")
        return types.ListResourcesResult(resources=page, next_cursor=next_cursor)

    async def _on_list_resource_templates(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        merged = await self.passthrough.list_resource_templates(await self._context(ctx))
        page, next_cursor = self._page(merged, params, "resources/templates/list")
        return types.ListResourceTemplatesResult(resource_templates=page, next_cursor=next_cursor)

    async def _on_read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await self.passthrough.read_resource(await self._context(ctx), str(params.uri))

    async def _on_subscribe_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        result = await self.passthrough.subscribe(await self._context(ctx), str(params.uri), subscribe=True)
        self.relay.subscribed(str(params.uri), identify(ctx).session_owner, subscribed=True)
        return result

    async def _on_unsubscribe_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        result = await self.passthrough.subscribe(await self._context(ctx), str(params.uri), subscribe=False)
        self.relay.subscribed(str(params.uri), identify(ctx).session_owner, subscribed=False)
        return result

    async def _on_list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        merged = await self.passthrough.list_prompts(await self._context(ctx))
        page, next_cursor = self._page(merged, params, "prompts/list")
        return types.ListPromptsResult(prompts=page, next_cursor=next_cursor)

    async def _on_get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await self.passthrough.get_prompt(await self._context(ctx), params.name, params.arguments)

    async def _on_completion(
        self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        return await self.passthrough.complete(await self._context(ctx), params)

    async def _on_roots_list_changed(
        self, ctx: ServerRequestContext[Any, Any], params: types.NotificationParams | None
    ) -> None:
        """A client's roots changed: tell the upstream sessions that serve it."""
        del params
        readonly = await self._context(ctx)
        for upstream in self.passthrough.upstreams:
            await upstream.roots_changed(readonly)

    # --- tools/call ---------------------------------------------------------------------------------------------

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        self._active_calls += 1
        try:
            return await self._call_tool(ctx, params)
        finally:
            self._active_calls -= 1

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        identity = identify(ctx)
        self._track(ctx, identity)
        readonly, loaded = await self._readonly_context(identity)
        entries = await self._resolve(readonly)
        entry = entries.get(params.name)
        if entry is None:
            available = ", ".join(sorted(entries)) or "(none)"
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool {params.name!r}. Available tools: {available}.",
                data={"available": sorted(entries)},
            )
        arguments = dict(params.arguments or {})
        if not isinstance(entry.tool, FunctionTool):
            # FunctionTools validate with pydantic (and convert); other tools get their declared JSON Schema checked.
            errors = _schema_errors(entry.mcp_tool.input_schema, arguments)
            if errors:
                return _error_result(f"Invalid arguments for {params.name}():\n" + "\n".join(errors))

        features = McpClientFeatures(ctx, params, log_level=self._log_levels.get(identity.session_owner))
        if features.held_call is not None:
            return await self._resume_held(ctx, features, identity)
        if features.modern and isinstance(entry.tool, McpTool):
            return await self._start_held(ctx, entry, arguments, identity, loaded, features)
        try:
            result = await self._run(ctx, entry, arguments, identity, loaded, features)
        except InputRequired as needed:
            return types.InputRequiredResult(
                input_requests={needed.key: needed.request}, request_state=features.request_state()
            )
        await self._announce_changes(ctx, identity)
        return result

    # --- held calls: an upstream call that asks a modern client something, kept running across its rounds -------

    async def _start_held(  # noqa: PLR0917 - private, called once
        self,
        ctx: ServerRequestContext[Any, Any],
        entry: CatalogEntry,
        arguments: dict[str, Any],
        identity: CallIdentity,
        loaded: dict[str, Any],
        features: McpClientFeatures,
    ) -> types.CallToolResult | types.InputRequiredResult:
        async def run(suspend: Suspend) -> types.CallToolResult:
            features.suspend = suspend
            return await self._run(ctx, entry, arguments, identity, loaded, features)

        def on_error(exc: BaseException) -> types.CallToolResult:
            logger.error("Held call of %s failed: %s", entry.tool.name, exc)
            return _error_result(f"{type(exc).__name__}: {exc}")

        held = self.held_calls.start(identity.session_owner, run, on_error)
        self._held_features[held.call_id] = features
        return await self._held_round(held)

    async def _resume_held(
        self, ctx: ServerRequestContext[Any, Any], round_features: McpClientFeatures, identity: CallIdentity
    ) -> types.CallToolResult | types.InputRequiredResult:
        assert round_features.held_call is not None
        held = self.held_calls.find(round_features.held_call, identity.session_owner)
        features = self._held_features[held.call_id]
        features.attach(ctx)
        held.answer(round_features.answers)
        return await self._held_round(held)

    async def _held_round(self, held: HeldCall) -> types.CallToolResult | types.InputRequiredResult:
        features = self._held_features[held.call_id]
        try:
            outcome = await self.held_calls.outcome(held)
        finally:
            features.attach(None)
        if isinstance(outcome, InputRequired):
            return types.InputRequiredResult(
                input_requests={outcome.key: outcome.request}, request_state=features.request_state(held.call_id)
            )
        del self._held_features[held.call_id]
        return outcome

    async def _run(  # noqa: PLR0917 - private, called once
        self,
        ctx: ServerRequestContext[Any, Any],
        entry: CatalogEntry,
        arguments: dict[str, Any],
        identity: CallIdentity,
        loaded: dict[str, Any],
        features: McpClientFeatures,
    ) -> types.CallToolResult:
        tool = entry.tool
        call_id = f"mcp-{ctx.request_id}"

        def new_context(confirmation: ToolConfirmation | None) -> ToolContext:
            return ToolContext(
                state=State(dict(loaded)),
                function_call_id=call_id,
                tool_confirmation=confirmation,
                artifact_service=self.artifact_service,
                client=features,
                progress_sink=_ProgressReporter(features),
                app_name=self.name,
                user_id=identity.principal,
                session_id=identity.session_key,
            )

        context = new_context(None)
        try:
            response = await tool.run_async(args=arguments, tool_context=context)
            requested = context.actions.requested_tool_confirmations.get(call_id)
            if requested is not None:
                try:
                    answer = await features.elicit(
                        _confirmation_message(tool.name, arguments, requested), _confirmation_schema()
                    )
                except ServiceNotConfiguredError as exc:
                    return _error_result(f"{CONFIRMATION_REQUIRED} {exc} The tool was not run.")
                if answer.action != "accept" or not (answer.content or {}).get(CONFIRM_FIELD):
                    return _error_result(CONFIRMATION_REJECTED)
                context = new_context(ToolConfirmation(hint=requested.hint, confirmed=True, payload=requested.payload))
                response = await tool.run_async(args=arguments, tool_context=context)
        except InputRequired:
            raise
        except ServiceNotConfiguredError as exc:
            return _error_result(str(exc))
        except Exception as exc:
            logger.exception("Tool %s raised", tool.name)
            return _error_result(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)

        if not (isinstance(response, dict) and "error" in response):
            await self.state_store.apply(self._scope(identity), context.state.persistent_delta())
        return _to_result(response, entry.mcp_tool.output_schema)

    async def _on_set_logging_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """Remember the least severe level this session wants to receive from tools' `log` calls."""
        owner = identify(ctx).session_owner
        self._log_levels[owner] = params.level
        self._log_levels.move_to_end(owner)
        if len(self._log_levels) > MAX_TRACKED_SESSIONS:
            self._log_levels.popitem(last=False)
        return types.EmptyResult()

    def _remember_listing(self, session_owner: str, names: frozenset[str]) -> None:
        self._listed[session_owner] = names
        self._listed.move_to_end(session_owner)
        if len(self._listed) > MAX_TRACKED_SESSIONS:
            self._listed.popitem(last=False)

    async def _announce_changes(self, ctx: ServerRequestContext[Any, Any], identity: CallIdentity) -> None:
        """Send `tools/list_changed` when a call changed which tools this session sees."""
        listed = self._listed.get(identity.session_owner)
        if listed is None or not self._has_local_toolsets:
            return
        readonly, _ = await self._readonly_context(identity)
        now = frozenset(await self._resolve(readonly))
        if now != listed:
            self._remember_listing(identity.session_owner, now)
            await ctx.session.send_tool_list_changed()


def _to_result(response: Any, output_schema: dict[str, Any] | None) -> types.CallToolResult:
    fields = cast("dict[str, Any]", response) if isinstance(response, dict) else None
    is_error = fields is not None and "error" in fields
    wrapped = output_schema is not None and is_wrapped_output_schema(output_schema)
    if wrapped and not is_error and not (fields is not None and set(fields) == {"result"}):
        return response_to_mcp_result({"result": response})
    return response_to_mcp_result(response)
