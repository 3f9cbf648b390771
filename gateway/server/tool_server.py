"""`ToolServer`: local tools published as an MCP server (the `tools/*` handlers over the low-level SDK `Server`).

The server owns the catalog, the sessions, the state and the SDK server with its middleware; `tools/call` is served
by its `ToolCalls` side (`gateway.server.call_handler`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Self

import anyio
import anyio.abc
from mcp import types
from mcp.server import NotificationOptions, Server
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

from gateway.adk.acceptance import as_memory_service
from gateway.artifacts import DEFAULT_MAX_ARTIFACT_BYTES, StoredArtifactService, artifact_service_for
from gateway.server.call_handler import ToolCalls
from gateway.server.catalog import CatalogEntry, ToolCatalog
from gateway.server.client_features import deprecated_in_2026
from gateway.server.extension import CALLS, NEVER, CallPipeline, ServerExtension, ServerHooks
from gateway.server.identity import CALL_SESSION_PREFIX, CallIdentity, identify
from gateway.server.observe.observation import RequestObservation
from gateway.server.observe.request_log import RequestLog
from gateway.server.policy.guard import PolicyGuard
from gateway.server.policy.rules import Policy
from gateway.server.resources import ArtifactResources
from gateway.server.running_calls import RunningCalls
from gateway.server.search.tool_search import ToolSearch, ToolSearchSettings
from gateway.server.session_records import SessionRecords
from gateway.server.session_registry import SessionRegistry
from gateway.server.sign_in.credential_requests import DEFAULT_SIGN_IN_TIMEOUT, ServerCredentials
from gateway.server.spent_rounds import SpentRounds
from gateway.server.state_attempts import StateAttempts
from gateway.server.tasks import ServedTasks, TaskSettings
from gateway.server.tool_call import CONFIRM_FIELD
from gateway.server.tool_listing import ToolListing
from gateway.server.toolset_owners import ToolsetOwners
from gateway.state import InMemoryStateStore, SqliteMemoryService, StateStore
from gateway.state.long_term_memory import default_memory_service
from gateway.state.retention import DEFAULT_SESSION_RETENTION, SessionRetention
from gateway.tasks.placement import task_store_for
from gateway.tools import ArtifactService, BaseTool, BaseToolset, MemoryService, ReadonlyContext
from gateway.tools.tool_union import ToolUnion

__all__ = ["CONFIRM_FIELD", "ToolServer"]

logger = logging.getLogger(__name__)

_RELEASE_DEADLINE: Final = 10.0
DEFAULT_PAGE_SIZE: Final = 100
_ANNOUNCED: Final = NotificationOptions(tools_changed=True, resources_changed=True)


class ToolServer(ToolCalls):
    """Publishes tools as an MCP server.

    Args:
        tools: callables, `BaseTool`s and `BaseToolset`s, in publishing order.
        name: the server name shown to clients.
        state_store: where session, `user:` and `app:` state lives (default: in memory; the CLI and `serve()`
            default to an embedded SQLite file).
        artifact_service: where artifacts live (default: beside the state, `gateway.artifacts.artifact_service_for`);
            a session's artifacts are its MCP resources. `max_artifact_bytes` limits the default store's.
        memory_service: the users' long-term memory (`tool_context.search_memory`, google-adk's `load_memory`):
            ours, or google-adk's `BaseMemoryService` (`InMemoryMemoryService()`, ...). Default: full-text search in
            the state's SQLite file (`gateway.state.SqliteMemoryService`), in memory beside an in-memory store, none
            beside another store.
        page_size: tools per `tools/list` page.
        request_state_keys: secrets (≥ 32 bytes) sealing the modern era's `requestState`; needed when several
            processes serve one endpoint. Default: a key made at start-up.
        extension: what plugs into this server (the gateway's upstream forwarding, `gateway.hub.gateway_server`).
        session_retention: seconds the session keys of a session that never ends explicitly (a `_meta` session
            key) are kept after their last write (default 30 days). Ended sessions lose theirs at once.
        credential_keys: keys sealing the users' credentials (`tool_context.request_credential`) in the state
            store (default: `$ADK_MCP_GATEWAY_CREDENTIAL_KEY`); without any, a tool asking for a credential gets
            an error naming the variable. See `gateway.state.credential_store`.
        callback_url: where OAuth2 sign-ins return (default: `$ADK_MCP_GATEWAY_CALLBACK_URL`, else
            `/oauth/callback` on the HTTP request's own base URL; over stdio, the loopback listener `serve()`
            starts).
        sign_in_timeout: seconds a call waits for its user to finish signing in.
        policy: which principal may use which tool, resource and prompt, and how often (`gateway.server.policy.rules`);
            None allows everything.
        tasks: how a long-running tool's calls run as MCP tasks for clients that declared the tasks extension
            (TTL, poll interval, ...: `gateway.server.tasks.TaskSettings`); its tasks live beside the state.
        tool_search: when `tools/list` offers `search_tools` and `call_tool` instead of the whole catalog
            (`gateway.server.search.tool_search`); None: never.

    Raises:
        ConfigError: `session_retention` is not positive, or a credential key is malformed.
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
        memory_service: MemoryService | Any = None,
        max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES,
        page_size: int = DEFAULT_PAGE_SIZE,
        request_state_keys: Sequence[bytes | str] | None = None,
        extension: ServerExtension | None = None,
        session_retention: float = DEFAULT_SESSION_RETENTION,
        credential_keys: Sequence[str | bytes] | None = None,
        callback_url: str | None = None,
        sign_in_timeout: float = DEFAULT_SIGN_IN_TIMEOUT,
        policy: Policy | None = None,
        tool_search: ToolSearchSettings | None = None,
        tasks: TaskSettings | None = None,
    ) -> None:
        self.name = name
        self.catalog = ToolCatalog(tools, describe=extension.describe if extension is not None else None)
        self._owners = ToolsetOwners()
        self._retiring: anyio.abc.TaskGroup | None = None
        self.state_store: StateStore = state_store or InMemoryStateStore()
        self.retention = SessionRetention(self.state_store, name, session_retention)
        self.artifact_service = artifact_service or artifact_service_for(self.state_store, max_bytes=max_artifact_bytes)
        self._own_artifacts = artifact_service is None
        if isinstance(self.artifact_service, StoredArtifactService):
            self.retention.also.append(self.artifact_service)  # a session nobody ends keeps its files as its state
        self.memory_service: MemoryService | None = (
            default_memory_service(self.state_store) if memory_service is None else as_memory_service(memory_service)
        )
        self._own_memory = memory_service is None
        self.credentials = ServerCredentials.configure(
            self.state_store,
            app_name=name,
            keys=credential_keys,
            asking=[item.name for item in self.catalog.items if isinstance(item, BaseTool) and item.needs_credentials],
            callback_url=callback_url,
            sign_in_timeout=sign_in_timeout,
        )
        """The users' credentials and sign-ins; None without a credential key."""
        self._exit_stack: contextlib.AsyncExitStack | None = None
        self._sessions = SessionRegistry(self.end_session)
        self._log_levels: SessionRecords[types.LoggingLevel] = SessionRecords()
        self._running_calls = RunningCalls()
        self.relayed_calls = 0
        """How many `tools/call` requests the HTTP front's fast lane relayed (`gateway.hub.forwarding.fast_lane`)."""
        self.relayed_listings = 0
        """How many `tools/list` pages the fast lane answered from the cache."""
        self._state_attempts = StateAttempts(self.state_store)
        self.extension = extension
        self.listing = ToolListing(self.catalog, page_size, changes_after_calls=self._local_toolsets_in(self.catalog))
        hooks = ServerHooks(self._context, self.listing.page)
        self.artifact_resources = ArtifactResources(self.artifact_service, self._context)
        extra_handlers = self.artifact_resources.merged(extension.handlers(hooks) if extension is not None else {})
        with deprecated_in_2026():
            # `logging/setLevel` is deprecated only from 2026-07-28 on; handshake-era clients still send it.
            self.server: Server[Any] = Server(  # pyright: ignore[reportDeprecated]
                name,
                version=version,
                instructions=instructions,
                on_list_tools=self._on_list_tools,
                on_set_logging_level=self._on_set_logging_level,
                **extra_handlers,
            )
        # Registered here, not in the constructor: a call's answer may also be a task (`CreateTaskResult`).
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self._on_call_tool)
        self.tasks = ServedTasks(task_store_for(self.state_store), name, tasks)
        """The calls running as MCP tasks, and their `tasks/*` handlers."""
        self.tasks.serve_on(self.server)
        self.observation = RequestObservation()
        """Every request, seen once (metrics, the request log and the trace's attributes hang on it)."""
        self.observation.observers.append(RequestLog())
        self.pipeline = CallPipeline(self.server.middleware)
        """The request pipeline, each layer with its guard: whether a request may take the plain path."""
        self.pipeline.add_answered(self.observation, NEVER)  # a lane reports what it answers itself
        security = RequestStateSecurity(keys=list(request_state_keys)) if request_state_keys else None
        security = security or RequestStateSecurity.ephemeral()
        # A lane takes no round that carries a `requestState`, and seals what it answers here (`modern_answer`).
        self.request_state = RequestStateBoundary(security, default_audience=name)
        self.pipeline.add_answered(self.request_state, NEVER)
        self._spent_rounds = SpentRounds(self.state_store, app_name=name, ttl=security.ttl)
        # A lane ends a call's own session itself (`call_session`); the results it relays carry no issued key.
        self.pipeline.add_answered(self._sessions.end_call_sessions, NEVER)
        self.policy = policy
        if tool_search is not None and tool_search.mode != "off":
            # Ahead of the policy guard: `call_tool` reaches it (and the handler) as a call of the tool it names.
            self.pipeline.add(ToolSearch(tool_search, self._session_entries, policy))
        if policy is not None:
            self.pipeline.add(PolicyGuard(policy))
        # Innermost: a cached page is the handler's answer, shaped for the wire once (the policy guard filters it).
        self._cached_pages = self.listing.cached_pages(self._listing_context)
        self.pipeline.add_answered(self._cached_pages, NEVER)  # a lane answers from the same pages
        # The handler's stages: list changes after a call, the extension's forwarding, the users' sign-ins.
        self.pipeline.stage(self.listing, extension, CALLS if self.credentials is not None else None)
        # The SDK's HTTP session manager builds initialize options with default NotificationOptions, which
        # hides `tools.listChanged`; this server does announce list changes, so every transport must say so.
        # Each connection's serving loop is wrapped so the sessions it carried are released when it ends.
        self._sdk_run = self.server.run
        self.server.run = self._run_connection  # type: ignore[method-assign]
        self.server.create_initialization_options = functools.partial(  # type: ignore[method-assign]
            Server.create_initialization_options, self.server, _ANNOUNCED
        )

    async def _run_connection(self, *args: Any, **kwargs: Any) -> None:
        """`Server.run` for one connection (stdio, SSE), releasing the sessions it carried when it ends."""
        await self._sessions.run_connection(self._sdk_run, *args, **kwargs)

    def upstream_status(self) -> dict[str, dict[str, Any]]:
        """The extension's health reports (a gateway's upstreams: `connected`, `idle` or `failing`), by name.

        A source whose tools the catalog withholds (another source had their names first) says which, under
        `withheld`.
        """
        reports = self.extension.status() if self.extension is not None else {}
        for item in self.catalog.items:
            key = getattr(item, "key", None)
            withheld = self.catalog.withheld(item)
            if withheld and isinstance(key, str) and key in reports:
                reports[key] = {**reports[key], "withheld": withheld}
        return reports

    async def end_session(self, session_key: str) -> None:
        """Release what the toolsets hold for a session that ended (an isolated upstream session, its process).

        Called when a stdio or SSE connection closes and when a streamable HTTP session is deleted or expires. The
        session's own state is deleted too, except an anonymous sessionless one's: its issued key may be echoed
        next (the retention sweep deletes it once unused).
        """
        principals = self._sessions.forget(session_key)
        keeps_state = session_key.startswith(CALL_SESSION_PREFIX)
        if self.extension is not None:
            for principal in principals:
                self.extension.session_ended(CallIdentity(principal, session_key).session_owner)
        with anyio.move_on_after(_RELEASE_DEADLINE, shield=True):
            for principal in () if keeps_state else principals:
                # The session's own keys end with it; its principal's `user:` keys and the `app:` keys stay.
                await self.state_store.clear_session(self._scope(CallIdentity(principal, session_key)))
                await self.artifact_service.delete_session(
                    app_name=self.name, user_id=principal, session_id=session_key
                )
            for principal in principals:
                context = ReadonlyContext(app_name=self.name, user_id=principal, session_id=session_key)
                for item in self.catalog.items:
                    if isinstance(item, BaseToolset):
                        try:
                            await item.release(context)
                        except Exception:
                            logger.exception("Releasing session %s of %r failed", session_key, item)

    def _local_toolsets_in(self, catalog: ToolCatalog) -> bool:
        # An extension's toolsets announce their own list changes; only the other toolsets' lists can change
        # through what a call did, so only they need the catalog compared after each call.
        extension = self.extension
        return any(
            isinstance(item, BaseToolset) and not (extension is not None and extension.owns(item))
            for item in catalog.items
        )

    def replace_policy(self, policy: Policy | None) -> None:
        """Apply `policy` (None: everything allowed) from the next request on, in every session (a config reload).

        Open sessions are checked against it on their next request, the fast lane's included (the policy guard
        applies to every request, `CallPipeline`). Rate-limit buckets start afresh.
        """
        self.policy = policy
        for layer in self.server.middleware:
            if isinstance(layer, ToolSearch):
                layer.policy = policy
        guard = next((layer for layer in self.server.middleware if isinstance(layer, PolicyGuard)), None)
        if guard is not None and policy is not None:
            guard.policy = policy
        elif guard is not None:
            self.pipeline.remove(guard)
        elif policy is not None:
            # Where the constructor puts it: inside tool search, outside the cached pages (which it filters).
            self.pipeline.add(PolicyGuard(policy), before=self._cached_pages)

    async def replace_tools(
        self, tools: Sequence[ToolUnion], *, retire: Callable[[BaseToolset], Awaitable[None]] | None = None
    ) -> None:
        """Serve `tools` from now on (a config reload): new toolsets are opened, dropped ones closed.

        A toolset in both the old and the new tools (the same object) stays open as it is, its sessions untouched.
        New toolsets are opened before anything changes, so a toolset that cannot be opened leaves the server
        serving what it served. A dropped toolset is closed in the background once `retire(toolset)` returns
        (e.g. once the calls still running on it have finished), so this returns without waiting for it. The
        caller tells the clients that the lists changed.

        Raises:
            Exception: whatever opening a new toolset raised (the server then serves the old tools).
        """
        catalog = ToolCatalog(tools, describe=self.extension.describe if self.extension is not None else None)
        kept = {id(item) for item in self.catalog.items}
        added = [item for item in catalog.items if isinstance(item, BaseToolset) and id(item) not in kept]
        opened: list[BaseToolset] = []
        try:
            for item in added:
                await self._owners.open(item)
                opened.append(item)
        except BaseException:
            with anyio.CancelScope(shield=True):
                for item in opened:
                    await self._owners.close(item)
            raise
        current = {id(item) for item in catalog.items}
        dropped = [item for item in self.catalog.items if isinstance(item, BaseToolset) and id(item) not in current]
        self.catalog = catalog
        self.listing.catalog = catalog
        self.listing.changes_after_calls = self._local_toolsets_in(catalog)
        for item in dropped:
            if self._retiring is None:
                await self._retire(item, None)
            else:
                self._retiring.start_soon(self._retire, item, retire)

    async def _retire(self, toolset: BaseToolset, retire: Callable[[BaseToolset], Awaitable[None]] | None) -> None:
        try:
            if retire is not None:
                await retire(toolset)
        finally:
            with anyio.CancelScope(shield=True):
                if self._owners.holds(toolset):
                    await self._owners.close(toolset)
                else:
                    await toolset.close()

    async def __aenter__(self) -> Self:
        """Open the toolsets that hold connections (an `McpToolset`'s upstream sessions live this long)."""
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(self._owners)
            await stack.enter_async_context(self.tasks)
            for item in self.catalog.items:
                if isinstance(item, BaseToolset):
                    await self._owners.open(item)
            # Toolsets dropped by `replace_tools` close in here; the server's end cancels what waits for them.
            retiring = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(setattr, self, "_retiring", None)
            stack.callback(retiring.cancel_scope.cancel)
            self._retiring = retiring
            if self.extension is not None:
                await stack.enter_async_context(self.extension)
            # Sessions left idle past the retention (also by an earlier process) go before the first request.
            await self.retention.sweep()
            sweeper = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(sweeper.cancel_scope.cancel)
            sweeper.start_soon(self.retention.run)
            self._exit_stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the toolsets and the state store."""
        stack, self._exit_stack = self._exit_stack, None
        if stack is not None:
            # Not inside a shield: the toolsets' task groups were entered outside it and must be exited from
            # the scope they were entered in; each toolset shields its own teardown.
            await stack.aclose()
        with anyio.CancelScope(shield=True):
            await self.catalog.aclose()
            await self.tasks.aclose()
            await self.state_store.aclose()
            if self._own_artifacts and isinstance(self.artifact_service, StoredArtifactService):
                await self.artifact_service.aclose()
            if self._own_memory and isinstance(self.memory_service, SqliteMemoryService):
                await self.memory_service.aclose()

    # --- tools/list ---------------------------------------------------------------------------------------------

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        readonly, owner = await self._listing_context(ctx)
        return await self.listing.list_tools(readonly, owner, params)

    async def _listing_context(self, ctx: ServerRequestContext[Any, Any]) -> tuple[ReadonlyContext, str]:
        identity = identify(ctx)
        self._track(ctx, identity)
        return (await self._readonly_context(identity))[0], identity.session_owner

    # --- what an extension's handlers ask of the server ---------------------------------------------------------

    async def _context(self, ctx: ServerRequestContext[Any, Any]) -> ReadonlyContext:
        return (await self._listing_context(ctx))[0]

    async def _session_entries(self, ctx: ServerRequestContext[Any, Any]) -> dict[str, CatalogEntry]:
        return await self.listing.resolve(await self._context(ctx))

    async def _on_set_logging_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """Remember the least severe level this session wants to receive from tools' `log` calls."""
        self._log_levels.put(identify(ctx).session_owner, params.level)
        return types.EmptyResult()
