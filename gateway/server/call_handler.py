"""`ToolCalls`: the `tools/call` side of a `ToolServer` (a mixin; the server holds what it reads).

Per `tools/call`: resolve the caller (`identity`), load its scoped state, build a `ToolContext` lending the
client's features, run the tool, ask the client to confirm through elicitation when the tool requested a
confirmation, write the state delta back, and translate the response with the adapters. An extension (the
gateway's hub) runs its own tools' calls its way (`ServerExtension.call_tool`); the HTTP front's fast lane asks
`relayed_call` whether a call may skip all of this (`gateway.hub.forwarding.fast_lane`): whether no layer of the
pipeline applies to it (`CallPipeline`), the one question asked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from typing import Any, cast

import anyio
from mcp import MCPError, types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import RequestStateBoundary
from mcp.server.session import ServerSession
from mcp.types import SERVER_INFO_META_KEY, methods
from pydantic import ValidationError

from gateway.artifacts.uri import parse_artifact_uri
from gateway.errors import GatewayError, ToolNotFoundError, UpstreamUnavailableError
from gateway.server.catalog import CatalogEntry, ToolCatalog
from gateway.server.client_features import McpClientFeatures
from gateway.server.extension import CallPipeline, PendingCall, PlainRequest, RelayedTool, ServerExtension
from gateway.server.identity import CallIdentity, identify
from gateway.server.observe.observation import note_session, note_tool
from gateway.server.policy.guard import UnknownToolError
from gateway.server.policy.rules import Policy
from gateway.server.resources import ArtifactResources
from gateway.server.round_state import RoundState
from gateway.server.running_calls import RunningCalls
from gateway.server.session_records import SessionRecords
from gateway.server.session_registry import SessionRegistry
from gateway.server.sign_in.credential_requests import ServerCredentials
from gateway.server.spent_rounds import SpentRounds
from gateway.server.state_attempts import StateAttempts
from gateway.server.tasks import ServedTasks, TaskFeatures
from gateway.server.tool_call import Invoke, ToolCall, error_result, schema_errors
from gateway.server.tool_listing import ToolListing
from gateway.state import StateScope, StateStore
from gateway.tools import ArtifactService, MemoryService, ReadonlyContext
from gateway.tools.context import InputRequired
from gateway.tools.function_tool import FunctionTool

__all__ = ["ToolCalls"]

logger = logging.getLogger(__name__)


class ToolCalls:
    """The `tools/call` handler of a `ToolServer`, and the session and state helpers its handlers share."""

    name: str
    catalog: ToolCatalog
    listing: ToolListing
    extension: ServerExtension | None
    credentials: ServerCredentials | None
    policy: Policy | None
    state_store: StateStore
    artifact_service: ArtifactService
    artifact_resources: ArtifactResources
    memory_service: MemoryService | None
    relayed_calls: int
    """How many `tools/call` requests the HTTP front's fast lane relayed (`gateway.hub.forwarding.fast_lane`)."""
    relayed_listings: int
    """How many `tools/list` pages the fast lane answered from the cache."""
    pipeline: CallPipeline
    server: Server[Any]
    request_state: RequestStateBoundary
    """Seals a modern call's `requestState` between its rounds, and opens it again."""
    _running_calls: RunningCalls
    _sessions: SessionRegistry
    _log_levels: SessionRecords[types.LoggingLevel]
    _state_attempts: StateAttempts
    _spent_rounds: SpentRounds
    tasks: ServedTasks

    @property
    def active_calls(self) -> int:
        """How many `tools/call` requests are running now (an HTTP server drains them before it stops)."""
        return self._running_calls.active

    # --- sessions and state -------------------------------------------------------------------------------------

    def _scope(self, identity: CallIdentity) -> StateScope:
        return StateScope(app_name=self.name, user_id=identity.principal, session_id=identity.session_owner)

    def _track(self, ctx: ServerRequestContext[Any, Any], identity: CallIdentity) -> None:
        note_session(identity.session_owner)
        if self.extension is not None:
            self.extension.track(ctx, identity.session_owner)

    async def _readonly_context(self, identity: CallIdentity) -> tuple[ReadonlyContext, dict[str, Any]]:
        self._sessions.note(identity)
        loaded = await self.state_store.load(self._scope(identity))
        # The user's own credentials: a toolset lists an upstream the user signed in to with them.
        credentials = await self.credentials.usable(identity.principal) if self.credentials is not None else None
        context = ReadonlyContext(
            state=dict(loaded),
            app_name=self.name,
            user_id=identity.principal,
            session_id=identity.session_key,
            credentials=credentials,
        )
        return context, loaded

    # --- tools/call ---------------------------------------------------------------------------------------------

    async def relayed_call(
        self, name: str, identity: CallIdentity, *, declared: dict[str, Any] | None = None
    ) -> tuple[CatalogEntry, RelayedTool, types.LoggingLevel | None] | None:
        """A call that may take the plain path: its tool, how the extension relays it, the session's log level.

        None sends the call the general path: a layer of the pipeline applies to it (`CallPipeline.plain`, asked
        before the tool is looked up and again with it), the extension does not relay its tool, or the tool cannot
        be found now (the general path answers why). `declared`: a modern (2026-07-28) caller's capabilities.
        """
        extension = self.extension
        request = PlainRequest("tools/call", identity, modern=declared is not None, declared=declared)
        if extension is None or not self.pipeline.plain(request):
            return None
        self._sessions.note(identity)
        # No state is loaded: every toolset here is the extension's (local toolsets make the call ineligible), and
        # what the extension relays selects its tools by name, not by session state; there are no credentials.
        readonly = ReadonlyContext(app_name=self.name, user_id=identity.principal, session_id=identity.session_key)
        try:
            entry = await self.catalog.find(name, readonly)
        except (GatewayError, MCPError):
            return None
        if not self.pipeline.plain(dataclasses.replace(request, entry=entry)):
            return None
        relayed = extension.relayed_call(entry, identity.session_owner, declared)
        if relayed is None:
            return None
        self.relayed_calls += 1
        return entry, relayed, self._log_levels.get(identity.session_owner)

    def call_session(self, identity: CallIdentity) -> contextlib.AbstractAsyncContextManager[None]:
        """While inside, an anonymous call's own session lives; it ends on leaving (`end_call_sessions` for a lane)."""
        return self._sessions.running(identity)

    async def modern_answer(
        self, version: str, name: str, arguments: dict[str, Any], result: dict[str, Any]
    ) -> dict[str, Any]:
        """A lane's modern `tools/call` result as the SDK's path answers it (`gateway.server.http.lane.PlainPath`).

        Raises:
            MCPError: -32603, the result does not fit the version's schema (the SDK's answer to such a result).
        """
        if "resultType" not in result:  # a handshake-era upstream's result (the SDK's models default it)
            result = {**result, "resultType": "complete"}
        try:
            shaped = methods.serialize_server_result("tools/call", version, result)
        except ValidationError:
            logger.exception("The relayed result of %s is invalid", name)
            raise MCPError(code=types.INTERNAL_ERROR, message="Handler returned an invalid result") from None
        meta: Any = shaped.get("_meta")
        if meta is None or (isinstance(meta, dict) and cast("dict[str, Any]", meta).get(SERVER_INFO_META_KEY) is None):
            shaped["_meta"] = {**(meta or {}), SERVER_INFO_META_KEY: self.server.server_info_stamp}
        # The boundary reads the request's method, tool name and arguments, and the caller's token (not the session).
        request = ServerRequestContext[Any, Any](
            session=cast("ServerSession", None),
            lifespan_context=None,
            protocol_version=version,
            method="tools/call",
            params={"name": name, "arguments": arguments},
        )

        async def answered(_ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
            return shaped

        return cast("dict[str, Any]", await self.request_state(request, answered))

    async def relayed_listing(self, identity: CallIdentity, version: str, cursor: str | None) -> bytes | None:
        """A `tools/list` page the fast lane may answer: its JSON, cached from an earlier answer of the SDK's path.

        None sends the request the general path: a layer of the pipeline applies to it (a policy filters pages, tool
        search changes them, the session has not been seen by the general path), or the page is not cached yet.
        """
        if not self.pipeline.plain(PlainRequest("tools/list", identity)):
            return None
        readonly, _ = await self._readonly_context(identity)
        page = self.listing.cached_page(await self.listing.view(readonly), identity.session_owner, version, cursor)
        if page is not None:
            self.relayed_listings += 1
        return page

    def running_call(
        self, scope: anyio.CancelScope | None = None
    ) -> contextlib.AbstractContextManager[anyio.CancelScope]:
        """Count a call as running (`active_calls`) while inside; yields the scope `cancel_calls` cancels.

        The caller runs the call inside the scope and answers it after a cancellation (`RunningCalls`).
        """
        return self._running_calls.running(scope)

    @property
    def stop_reason(self) -> str | None:
        """Why the calls in flight were cancelled (`cancel_calls`); None while the server runs."""
        return self._running_calls.stop_reason

    async def calls_ended(self) -> None:
        """Return once no call is running (`active_calls` is 0)."""
        await self._running_calls.ended()

    @property
    def refusing_calls(self) -> bool:
        """Whether new calls are refused (`refuse_calls`): the server stops."""
        return self._running_calls.refusing

    def refuse_calls(self) -> None:
        """Refuse new calls from now on with a JSON-RPC error saying the server stops; the running ones go on."""
        self._running_calls.refuse_new()

    def cancel_calls(self, reason: str) -> int:
        """Cancel every call running now or started later (the server stops); returns how many were running.

        Each is answered with a JSON-RPC error whose message is `reason`.
        """
        return self._running_calls.cancel_all(reason)

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        with self.running_call() as scope, scope:
            return await self._call_tool(ctx, params)
        raise self._running_calls.stopped_error()

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        """The call's result; or, for a call that runs as an MCP task, its `CreateTaskResult` (wire form)."""
        earlier = RoundState.parse(params.request_state)
        identity = identify(ctx, call=True, carried=None if earlier.session is None else earlier.session.session_key)
        earlier.check_session(identity)
        if earlier.round_id is not None:
            await self._spent_rounds.spend(earlier.round_id)
        self._track(ctx, identity)
        readonly, loaded = await self._readonly_context(identity)
        try:
            # Only the source of this tool is asked: another source's hang or failure is not this call's.
            entry = await self.catalog.find(params.name, readonly)
        except UpstreamUnavailableError as exc:
            return error_result(str(exc))
        except ToolNotFoundError:
            entries = await self.listing.resolve(readonly)
            available = ", ".join(sorted(entries)) or "(none)"
            raise UnknownToolError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool {params.name!r}. Available tools: {available}.",
                data={"available": sorted(entries)},
            ) from None
        note_tool(entry.tool.name, entry.upstream)
        arguments = dict(params.arguments or {})
        features = TaskFeatures(
            ctx,
            params,
            earlier=earlier,
            session=identity,
            log_level=self._log_levels.get(identity.session_owner),
        )

        async def run(invoke: Invoke | None = None) -> types.CallToolResult:
            """Run the call; an anonymous call's own session lives while it runs (a held call outlives its round)."""
            async with self._sessions.running(identity):
                return await self._run(ctx, entry, arguments, identity, loaded, features, invoke=invoke)

        if self.extension is not None:
            pending = PendingCall(ctx, entry, arguments, identity, features, run)
            handled = await self.extension.call_tool(pending)
            if handled is not None:
                self._sessions.forwarded()
                return handled
        if not isinstance(entry.tool, FunctionTool):
            # FunctionTools validate with pydantic (and convert); other tools get their declared JSON Schema checked
            # (an extension's tools are checked where they run: an upstream checks its own arguments).
            errors = schema_errors(entry.mcp_tool.input_schema, arguments)
            if errors:
                return error_result(f"Invalid arguments for {params.name}():\n" + "\n".join(errors))
        as_task = self.tasks.wanted(ctx, params.name, entry.tool.task_support)
        try:
            result = await (self.tasks.start(identity, params.name, features, run) if as_task else run())
        except InputRequired as needed:
            return types.InputRequiredResult(
                input_requests={needed.key: needed.request}, request_state=features.request_state()
            )
        if isinstance(result, dict):
            return result  # the call runs on as a task
        if any(isinstance(block, types.ResourceLink) and parse_artifact_uri(block.uri) for block in result.content):
            await self.artifact_resources.announce(ctx, identity)
        await self._announce_changes(ctx, identity)
        return result

    async def _run(  # noqa: PLR0917 - private, called once
        self,
        ctx: ServerRequestContext[Any, Any],
        entry: CatalogEntry,
        arguments: dict[str, Any],
        identity: CallIdentity,
        loaded: dict[str, Any],
        features: McpClientFeatures,
        *,
        invoke: Invoke | None = None,
    ) -> types.CallToolResult:
        scope = self._scope(identity)
        run = functools.partial(
            ToolCall.run,
            app_name=self.name,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
            state_store=self.state_store,
            invoke=invoke,
        )
        if self.credentials is not None:
            run = functools.partial(
                run, credentials=await self.credentials.for_call(ctx, identity, entry.tool.name, features)
            )
        if not entry.tool.uses_state:
            return await run(ToolCall(ctx, entry, arguments, identity, features, loaded), scope=scope)
        return await self._state_attempts.run(
            entry.tool.name,
            scope,
            lambda state: ToolCall(ctx, entry, arguments, identity, features, state),
            lambda call, confirmation: run(call, scope=scope, confirmation=confirmation),
        )

    async def _announce_changes(self, ctx: ServerRequestContext[Any, Any], identity: CallIdentity) -> None:
        """Send `tools/list_changed` when a call changed which tools this session sees."""
        if self.listing.watches(identity.session_owner):
            readonly, _ = await self._readonly_context(identity)
            await self.listing.announce_changes(ctx, identity.session_owner, readonly)
