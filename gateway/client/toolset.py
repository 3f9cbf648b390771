"""`McpToolset`: the tools of a remote MCP server (stdio, SSE or streamable HTTP) as ADK-style tools.

Use it as ADK's own is used (construct, `await get_tools()`, call the tools, `await close()` from any task) or as
an async context manager owning the upstream sessions (docs/consuming.md); none leaves a stdio child behind.

Sessions (`gateway.client.sessions.pool`): one per identity — the `session_key` and the headers `header_provider`
give a context. One the server forgot (HTTP 404 after a restart) or that died under a call fails that call with a
clear error and is replaced on the next. `tools/call` itself is never retried; listings are, once, on a fresh
session. `release(context)` ends one identity's session at once, `session_idle_timeout` ends idle ones.

`tools/list` is paginated and cached per session while the server can announce changes: handshake-era sessions
until `notifications/tools/list_changed`, modern (2026-07-28) sessions while a `subscriptions/listen` stream is
open; otherwise for the TTL the server gives the listing (none by default, so every `get_tools` lists again).

Upstream requests (elicitation, sampling, log messages) reach the callbacks given here, or, with
`forward_client_requests`, the client of the call in flight (`gateway.client.forwarding`); an elicitation is answered
with `mcp.types.ElicitResult(action="accept", content={...})` (after asking the user, say) or `action="decline"`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, TextIO, cast

from mcp import MCPError, StdioServerParameters, types
from mcp.client.extension import UnexpectedClaimedResult
from mcp.shared.dispatcher import ProgressFnT

from adapters.meta_keys import SESSION_META_KEY
from gateway.client.built_tools import BuiltTools
from gateway.client.connection import ConnectionParams, as_connection_params
from gateway.client.credentials import Credential
from gateway.client.credentials.adk_scheme import SignInRequired, UserSignIn, credential_from_adk
from gateway.client.credentials.sign_in_gate import SignInGate
from gateway.client.forwarding import Downstream, forwarding_callbacks
from gateway.client.relayed_round import RelayedRound, declaring
from gateway.client.resource_tool import LoadMcpResourceTool
from gateway.client.sessions.limits import SessionLimitError
from gateway.client.sessions.pool import Declared, HeaderProvider, Mode, SessionPool
from gateway.client.sessions.slot import SessionSlot
from gateway.client.sessions.upstream_call import ProgressCallback, call_once
from gateway.client.sessions.upstream_session import ClientCallbacks, NotificationCallback, UpstreamSession
from gateway.client.tool_search import SearchTools
from gateway.client.tool_selection import ToolSelection, context_free
from gateway.client.upstream_content import UpstreamContent
from gateway.client.upstream_sessions import UpstreamSessions
from gateway.client.upstream_tasks import UpstreamTasks, reporting_progress, task_extensions
from gateway.errors import CredentialError, UpstreamUnavailableError
from gateway.tasks.wire import CreateTaskResult, declares_tasks
from gateway.tools import (
    AuthConfig,
    AuthCredential,
    AuthScheme,
    BaseTool,
    BaseToolset,
    ReadonlyContext,
    ToolContext,
    ToolPredicate,
)
from gateway.tools.function_tool import ConfirmationPolicy

__all__ = ["HeaderProvider", "McpToolset", "ProgressCallback"]

logger = logging.getLogger(__name__)


class McpToolset(UpstreamSessions, BaseToolset, UpstreamContent, UpstreamTasks):
    """The tools of one upstream MCP server.

    Args:
        connection_params: how to reach the server (`StdioConnectionParams`, `SseConnectionParams`,
            `StreamableHTTPConnectionParams`), each with its connect and per-call timeouts; also google-adk's.
        errlog: a file a stdio server's stderr goes to (ADK's argument); by default its lines are logged.
        tool_filter: upstream tool names to offer, or a predicate; matched before the prefix is applied.
        tool_name_prefix: rename tools `{prefix}_{name}` (calls still use the upstream name).
        require_confirmation: ask before every call (`True`) or when a predicate over the arguments says so.
        header_provider: headers for a context (e.g. a per-user token); each distinct set gets its own session.
        progress_callback: receives every progress notification of this toolset's calls.
        elicitation_callback: answers the server's elicitation requests (the SDK's callback signature).
        sampling_callback: answers the server's sampling requests.
        logging_callback: receives the server's log messages.
        mode: `"auto"` (try the 2026-07-28 protocol, fall back to the handshake), `"legacy"` (handshake only),
            `"2026-07-28"`, or a function choosing one for the context that opens a session.
        session_key: a key for a context; each distinct key gets its own upstream session (the gateway keys
            sessions by downstream session, so a stateful upstream never mixes two clients).
        confirm_tool: decides per upstream tool whether its calls need confirmation (on top of
            `require_confirmation`), e.g. from its `destructiveHint`.
        forward_client_requests: send the upstream's elicitation, sampling and log messages to the client of
            the call in flight (through its `ToolContext`) instead of to the callbacks.
        declared_capabilities: what a new upstream session declares for the context that opens it (contexts that
            declare differently get separate sessions); None, or no function: what the callbacks can answer.
        session_meta_key: a `_meta` key under which every request to a sessionless (2026-07-28) upstream carries
            a key made at random for each upstream session, so that the upstream keeps one session across calls
            and tells sessions apart (adk-mcp-gateway servers read `adk-mcp-gateway/session`, the default; None
            sends none). The key is a bearer secret for the upstream's session state: unguessable, never derived
            from the downstream's identity, and new for each toolset (an upstream session does not outlive it).
        session_idle_timeout: close a session after this many seconds without a request in flight (a new one is
            opened on the next use); None keeps sessions until the toolset closes.
        notification_callback: receives the server's change notifications (tool, resource and prompt lists
            changed, a subscribed resource updated); the toolset's own tool cache is refreshed either way.
        list_timeout: seconds a tool listing (connecting included) may take; past it the listing fails and the
            upstream counts as failing (backed off), while the connection attempt goes on in the background, so a
            slow start serves the next listing (None: only the connect and call timeouts apply).
        credential: how to authenticate to an HTTP upstream (`gateway.client.credentials`), for connecting and
            listing as much as for calls.
        auth_scheme, auth_credential, credential_key: ADK's way to say it (`gateway.client.credentials.adk_scheme`):
            API key, HTTP bearer or basic, OAuth2 client credentials, or an OAuth2 authorization code that each
            calling user signs in to through the tool context's `request_credential`.
        use_mcp_resources: add the `load_mcp_resource` tool, reading the upstream's resources.
        tool_search: offer `search_tools` and `call_tool` instead of the tools (`gateway.client.tool_search`; needs
            the `search` extra), for a catalog too large to hand an agent whole.
        enable_tasks: declare Tasks (SEP-2663) to modern upstreams and finish their tasks (`task_consumer`).
    """

    def __init__(
        self,
        *,
        connection_params: ConnectionParams | StdioServerParameters,
        errlog: TextIO | None = None,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
        require_confirmation: ConfirmationPolicy = False,
        header_provider: HeaderProvider | None = None,
        progress_callback: ProgressCallback | None = None,
        elicitation_callback: Any | None = None,
        sampling_callback: Any | None = None,
        logging_callback: Any | None = None,
        mode: Mode = "auto",
        session_key: Callable[[ReadonlyContext], str] | None = None,
        confirm_tool: Callable[[types.Tool], bool] | None = None,
        forward_client_requests: bool = False,
        session_meta_key: str | None = SESSION_META_KEY,
        session_idle_timeout: float | None = None,
        notification_callback: NotificationCallback | None = None,
        list_timeout: float | None = None,
        credential: Credential | None = None,
        auth_scheme: AuthScheme | Any | None = None,
        auth_credential: AuthCredential | Any | None = None,
        credential_key: str | None = None,
        use_mcp_resources: bool | None = False,
        tool_search: bool = False,
        declared_capabilities: Declared | None = None,
        enable_tasks: bool = False,
    ) -> None:
        if not connection_params:
            raise ValueError("Missing connection params in McpToolset.")
        connection_params = as_connection_params(connection_params, errlog=errlog)
        super().__init__(tool_filter=tool_filter, tool_name_prefix=tool_name_prefix)
        self.connection_params = connection_params
        self.require_confirmation = require_confirmation
        self.progress_callback = progress_callback
        self.confirm_tool = confirm_tool
        self.forward_client_requests = forward_client_requests
        self.session_key = session_key
        self.list_timeout = list_timeout
        if credential is not None and auth_scheme is not None:
            raise ValueError("Give McpToolset either credential= or auth_scheme= (with auth_credential=), not both.")
        self._auth_scheme = auth_scheme
        self._auth_credential = auth_credential
        self._auth_config: AuthConfig | None = None
        if auth_scheme is not None:
            credential, self._auth_config = credential_from_adk(auth_scheme, auth_credential, credential_key)
        self.credential: Credential | None = credential
        self.use_mcp_resources = bool(use_mcp_resources)
        self._search = SearchTools() if tool_search else None
        self._callbacks = ClientCallbacks(
            elicitation=elicitation_callback,
            sampling=sampling_callback,
            logging=logging_callback,
            notification=notification_callback,
            extensions=task_extensions(enable_tasks),
        )
        self.downstream: Downstream | None = None
        """With `forward_client_requests`: where roots requests and change notifications go (set by the gateway)."""
        self._built = BuiltTools(self)
        self._selection = ToolSelection(self._built)
        self._sign_in_gate = (
            SignInGate(credential, connection_params.describe(), self._tool_names)
            if isinstance(credential, UserSignIn)
            else None
        )
        self._pool = SessionPool(
            connection_params,
            self._session_callbacks,
            mode=mode,
            header_provider=header_provider,
            session_key=session_key,
            session_meta_key=session_meta_key,
            idle_timeout=session_idle_timeout,
            credential=credential,
            declared=declared_capabilities,
        )

    auth_scheme = property(lambda self: self._auth_scheme, doc="The `auth_scheme` as given.")
    auth_credential = property(lambda self: self._auth_credential, doc="The `auth_credential` as given.")

    def get_auth_config(self) -> AuthConfig | None:
        """The toolset's auth config (with `auth_scheme`), as ADK's toolsets offer it."""
        return self._auth_config

    def _session_callbacks(self, slot: SessionSlot, context: ReadonlyContext | None) -> ClientCallbacks:
        if not self.forward_client_requests:
            return self._callbacks
        # An isolated session belongs to the downstream session that opened it; a shared one to all of them.
        owner = context if self.session_key is not None else None
        forwarding = forwarding_callbacks(slot.active, source=self, downstream=self.downstream, owner=owner)
        return dataclasses.replace(forwarding, extensions=self._callbacks.extensions)

    async def list_mcp_tools(
        self, readonly_context: ReadonlyContext | None = None, *, bounded: bool = True
    ) -> list[types.Tool]:
        """Every tool of the upstream (all pages), cached until the server says the list changed.

        `bounded`: give up after `list_timeout` (else only the connect and call timeouts apply).

        Raises:
            UpstreamUnavailableError: the upstream cannot be reached, answered the listing with an error, or did
                not answer within `list_timeout`.
        """

        if self.credential is None:
            # Read without the pool's task and deadline. (With a credential the listing goes through `slot`, which
            # asks the credential for the context's auth, so a user signed out since is told so.)
            cached = await self._pool.cached_tools(readonly_context)
            if cached is not None:
                return cached
        gave_up = False

        async def listing() -> list[types.Tool]:
            tools = await self._pool.request(readonly_context, "Listing the tools", SessionSlot.list_tools)
            if gave_up:
                # A listing left this upstream out; its tools are here now, so whoever listed should list again.
                await self._announce_tools_changed(readonly_context)
            return tools

        try:
            return await self._pool.within(self.list_timeout if bounded else None, listing)
        except CredentialError as exc:
            raise UpstreamUnavailableError(
                f"Listing the tools of {self.connection_params.describe()} needs a credential: {exc}"
            ) from exc
        except SessionLimitError:
            raise  # the upstream is fine; the request is refused, as a JSON-RPC error naming the limit
        except MCPError as exc:
            raise UpstreamUnavailableError(
                f"Listing the tools of {self.connection_params.describe()} failed: {exc.message}"
            ) from exc
        except TimeoutError:
            if not bounded:
                raise
            reason = (
                f"Upstream {self.connection_params.describe()} did not answer the tool listing within "
                f"{self.list_timeout:g} s; it is left out until it answers (raise list_timeout if it is just slow)."
            )
            self._pool.record_failure(reason)
            gave_up = True
            raise UpstreamUnavailableError(reason) from None

    async def _announce_tools_changed(self, readonly_context: ReadonlyContext | None) -> None:
        notification = types.ToolListChangedNotification()
        if self.forward_client_requests and self.downstream is not None:
            owner = readonly_context if self.session_key is not None else None
            await self.downstream.notify(self, notification, owner)
        else:
            await self._callbacks.notify(notification)

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The upstream's tools as `McpTool`s, filtered, sorted by name, ADK-reserved names skipped (then
        `load_mcp_resource` with `use_mcp_resources`); for a user who has not signed in (an authorization-code
        `auth_scheme`), the `sign_in` tool alone (`gateway.tools.auth_sign_in`)."""
        gate = self._sign_in_gate
        if gate is not None and gate.signed_out(readonly_context):
            return [gate.tool]
        selected = self._selected(await self.list_mcp_tools(readonly_context), readonly_context)
        return self._offered(await self._with_resource_tool(selected, readonly_context))

    def listing_token(self, readonly_context: ReadonlyContext | None = None) -> tuple[object, ...] | None:
        """The upstream's cached listing for this context (the same list object while it is current), the built
        tools' generation, the filter and the prefix; None when the listing is not cached or depends on more
        (a credential, a header provider, resources, tool search, a filter predicate that is not `context_free`, a
        subclass's `get_tools`)."""
        return self._listing_token(readonly_context) if type(self).get_tools is McpToolset.get_tools else None

    def _listing_token(self, readonly_context: ReadonlyContext | None) -> tuple[object, ...] | None:
        tool_filter = self.tool_filter
        if (
            self._sign_in_gate is not None
            or self._search is not None
            or self.use_mcp_resources
            or not (tool_filter is None or isinstance(tool_filter, list) or context_free(tool_filter))
        ):
            return None
        cached = self._pool.cached_tools_now(readonly_context)
        if cached is None:
            return None
        filter_key = tuple(tool_filter) if isinstance(tool_filter, list) else tool_filter
        return (cached, self._built.current_generation(), filter_key, self.tool_name_prefix)

    def _offered(self, tools: list[BaseTool]) -> list[BaseTool]:
        return self._search.offer(tools) if self._search is not None else tools

    async def _with_resource_tool(
        self, tools: list[BaseTool], readonly_context: ReadonlyContext | None
    ) -> list[BaseTool]:
        return [*tools, await LoadMcpResourceTool.listing(self, readonly_context)] if self.use_mcp_resources else tools

    async def get_tool_with_prefix(self, name: str, readonly_context: ReadonlyContext | None = None) -> BaseTool | None:
        """The tool published as `name`, waiting for the upstream as long as connecting may take.

        A call of this upstream's tool is this upstream's business: unlike a listing, it is not cut short by
        `list_timeout` (an upstream that starts slowly still serves it).
        """
        prefix = self.tool_name_prefix
        if prefix and not name.startswith(f"{prefix}_"):
            return None

        async def listing() -> list[BaseTool]:
            listed = self._selected(await self.list_mcp_tools(readonly_context, bounded=False), readonly_context)
            return await self._with_resource_tool(listed, readonly_context)

        gate = self._sign_in_gate
        listed = await (listing() if gate is None else gate.for_call(readonly_context, listing))
        return next((tool for tool in self._with_prefix(self._offered(listed)) if tool.name == name), None)

    async def _tool_names(self, readonly_context: ReadonlyContext) -> list[str]:
        return [tool.name for tool in await self.get_tools_with_prefix(readonly_context)]

    def _selected(self, mcp_tools: list[types.Tool], readonly_context: ReadonlyContext | None) -> list[BaseTool]:
        selected = self._selection.select(mcp_tools, self.tool_filter, self._is_tool_selected, readonly_context)
        if self._sign_in_gate is not None:
            self._sign_in_gate.remember(readonly_context, selected)
        return selected

    def _signed_out(self, tool_context: ToolContext) -> SignInRequired | None:
        """A user whose sign-in the upstream just refused (its token was forgotten): they sign in again."""
        credential = self.credential
        if isinstance(credential, UserSignIn) and credential.identity(tool_context) not in credential.tokens:
            return SignInRequired(credential.auth_config)
        return None

    async def call_tool(self, name: str, args: dict[str, Any], tool_context: ToolContext) -> types.CallToolResult:
        """Send `tools/call` once, never again: a session that dies is dropped so the next call gets a fresh one.

        Raises:
            UpstreamUnavailableError: the upstream cannot be reached, or its session ended during the call.
            MCPError: the upstream answered with a JSON-RPC error (unknown tool, bad request, timeout).
            SignInRequired: the calling user has not signed in, or the upstream refused their sign-in (401).
        """

        async def send(session: UpstreamSession, on_progress: ProgressFnT) -> types.CallToolResult:
            return await self._send_call(session, name, args, on_progress)

        try:
            return await call_once(self._pool, name, tool_context, send, self.progress_callback)
        except (MCPError, UpstreamUnavailableError) as exc:
            signed_out = self._signed_out(tool_context)
            if signed_out is not None:
                raise signed_out from exc
            raise

    async def _send_call(
        self, session: UpstreamSession, name: str, args: dict[str, Any], on_progress: ProgressFnT
    ) -> types.CallToolResult:
        """Send one `tools/call` on `session` the SDK client's way (its result checked against the tool's schema; a
        task it is answered with finished). A sessionless session without a key of its own adopts the key the server
        issued with the result (an adk-mcp-gateway server's `_meta` session key) to keep its session state."""
        with reporting_progress(on_progress, session.meta):
            result = await session.client.call_tool(name, args, progress_callback=on_progress, meta=session.meta)
        issued = (result.meta or {}).get(SESSION_META_KEY)
        if session.meta is None and session.modern and isinstance(issued, str):
            session.meta = cast("types.RequestParamsMeta", {SESSION_META_KEY: issued})
        return result

    async def call_tool_round(
        self, name: str, args: dict[str, Any], tool_context: ToolContext, answer: RelayedRound
    ) -> types.CallToolResult | types.InputRequiredResult | CreateTaskResult:
        """`call_tool` for one round relayed from a modern client to a modern session, declaring its capabilities: an
        `InputRequiredResult` as sent, and a task too for a client that declared the Tasks extension (RelayedRound)."""

        async def send(
            session: UpstreamSession, on_progress: ProgressFnT
        ) -> types.CallToolResult | types.InputRequiredResult | CreateTaskResult:
            with declaring(answer.capabilities):
                outcome = await session.client.session.call_tool(
                    name,
                    args,
                    progress_callback=on_progress,
                    input_responses=answer.input_responses,
                    request_state=answer.request_state,
                    meta=session.meta,
                    allow_input_required=True,
                    allow_claimed=declares_tasks(answer.capabilities),
                )
            if not isinstance(outcome, types.CallToolResult | types.InputRequiredResult | CreateTaskResult):
                raise UnexpectedClaimedResult(outcome)
            return outcome

        return await call_once(self._pool, name, tool_context, send, self.progress_callback)
