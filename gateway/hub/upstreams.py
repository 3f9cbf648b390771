"""A gateway config turned into tool sources: one `McpToolset` per upstream plus the local tools.

Per upstream: names `{prefix}_{name}` (prefix = the server's key unless set; `""` passes names through), the
allow/deny lists, the confirmation policy, and the session policy — `isolated` gives every downstream session its
own upstream session (a stateful upstream never mixes two clients), `shared` one session for all. Upstream
elicitation, sampling and log messages go to the downstream client whose call caused them.

An upstream that cannot be reached contributes no tools (with a warning) instead of failing the whole catalog, so
the other upstreams and the local tools keep working; errors of its calls name its config key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from mcp import types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.shared.dispatcher import ProgressFnT

from adapters.meta_keys import SESSION_META_KEY
from gateway.client import McpTool, McpToolset
from gateway.client.credentials import PassThrough, TokenExchange
from gateway.client.relayed_round import RelayedRound, declaring
from gateway.client.sessions.limits import SessionLimits
from gateway.client.sessions.upstream_call import call_once
from gateway.client.sessions.upstream_session import HANDSHAKE_FIRST, UpstreamSession
from gateway.config import GatewayConfig, UpstreamConfig
from gateway.config.references import load_tools
from gateway.config.upstream_auth import upstream_credential
from gateway.errors import UpstreamUnavailableError
from gateway.hub.era import DownstreamEras, mode_for_version
from gateway.hub.forwarding.direct_post import DirectPost
from gateway.hub.forwarding.forwarded_call import forwarded_raw_call
from gateway.hub.pins import PinStore, ToolPins
from gateway.hub.warm_sessions import WarmSessions
from gateway.server.identity import current_client
from gateway.tasks.wire import CreateTaskResult
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext, ToolContext, ToolPredicate
from gateway.tools.tool_union import ToolUnion

__all__ = ["UpstreamToolset", "gateway_tools", "local_tools", "tool_reference", "upstream_toolset"]

logger = logging.getLogger(__name__)


class UpstreamToolset(McpToolset):
    """An `McpToolset` for one config entry: its key names it in name conflicts and connection errors."""

    def __init__(
        self,
        key: str,
        config: UpstreamConfig,
        base: Path,
        *,
        config_path: Path | None = None,
        max_result_bytes: int | None = None,
        pins: ToolPins | None = None,
    ) -> None:
        prefix = key if config.prefix is None else config.prefix
        credential = None
        if config.auth is not None and config.url is not None:
            credential = upstream_credential(
                config.auth, key=key, url=config.url, config_path=str(config_path or "CONFIG")
            )
            if isinstance(credential, TokenExchange | PassThrough):
                credential.bind_subject(_inbound_token)
        self._warm = WarmSessions(config.warm_sessions)
        super().__init__(
            connection_params=config.connection(base, key),
            tool_filter=_tool_filter(config),
            tool_name_prefix=prefix or None,
            require_confirmation=config.confirm is True,
            confirm_tool=_confirm_tool(config),
            session_key=self._isolated_key if config.session_policy == "isolated" else None,
            forward_client_requests=True,
            # A modern (2026-07-28) upstream has no sessions of its own: without a key in `_meta` it could not
            # tell two upstream sessions apart, nor keep one across calls (adk-mcp-gateway servers read this key;
            # others ignore it).
            session_meta_key=SESSION_META_KEY,
            session_idle_timeout=config.session_idle_timeout if config.session_policy == "isolated" else None,
            list_timeout=config.list_timeout,
            mode=self._mode,
            credential=credential,
            declared_capabilities=self._declared if config.session_policy == "isolated" else None,
            # The gateway finishes a task an upstream answers with (SEP-2663) for a client that gets a plain call.
            enable_tasks=True,
        )
        self._pool.limits = SessionLimits(
            total=config.max_sessions,
            per_client=config.max_sessions_per_client,
            client_of=lambda _context: current_client(),
            total_name=f"mcpServers.{key}.maxSessions",
            per_client_name=f"mcpServers.{key}.maxSessionsPerClient",
            source=f"upstream {key!r}",
        )
        # A warm session speaks to a sessionless upstream as the call that borrowed it (see `WarmSessions`).
        self._pool.borrower = lambda context: (
            f"{context.user_id}/{context.session_id}" if WarmSessions.borrows(context) else None
        )
        self.key = key
        self.protocol_version = config.protocol_version
        self.session_policy = config.session_policy
        self.max_result_bytes = config.max_result_bytes or max_result_bytes
        """Results larger than this (bytes of JSON) are truncated, the whole kept (`gateway.hub.kept_results`)."""
        self.eras: DownstreamEras | None = None
        """The eras of the gateway's downstream sessions (set by the `Hub` while it serves)."""
        self.source_name = f"upstream {key!r}"
        self.pins = pins
        """With `pinTools`: which of its tools may be served as listed (`gateway.hub.pins`)."""

    def _isolated_key(self, context: ReadonlyContext) -> str:
        """The upstream session of a context under `isolated`: its downstream session's, or for an anonymous
        sessionless call one lent by `WarmSessions` (no process started per call)."""
        if WarmSessions.borrows(context):
            return self._warm.key_for(context)
        return f"{context.user_id}/{context.session_id}"

    async def release(self, readonly_context: ReadonlyContext | None = None) -> None:
        """End the upstream session of a downstream session that ended; an anonymous call's borrowed session goes
        back to `WarmSessions` under a new key (ended instead when enough are kept)."""
        if readonly_context is None or self.session_policy != "isolated" or not WarmSessions.borrows(readonly_context):
            await super().release(readonly_context)
            return
        if self._warm.keeps_another(readonly_context):
            self._warm.give_back(readonly_context)
            return
        await super().release(readonly_context)
        self._warm.forget(readonly_context)

    def _mode(self, context: ReadonlyContext | None) -> str:
        """The era of a new upstream session (`gateway.hub.era`): as configured, else chosen for the session."""
        if self.protocol_version is not None:
            return mode_for_version(self.protocol_version)
        if self.session_policy == "shared":
            return HANDSHAKE_FIRST
        return self.eras.mode_for(context) if self.eras is not None else "auto"

    def _declared(self, context: ReadonlyContext | None) -> types.ClientCapabilities | None:
        """What a new isolated upstream session declares (`gateway.hub.era`): what its downstream client declared
        (None, what the callbacks relay, for a context without a client or while no `Hub` serves this toolset)."""
        return self.eras.declared_for(context) if self.eras is not None else None

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """`McpToolset.get_tools`, its connection errors naming this upstream's config key, without the tools
        withheld by `pinTools` (changed since approved, or never approved).

        The catalog leaves an unavailable upstream out of a listing and answers calls of its tools with the error.
        """
        with self._named_errors():
            tools = await super().get_tools(readonly_context)
        if self.pins is None:
            return tools
        withheld = await self.pins.screen([tool.raw_mcp_tool for tool in tools if isinstance(tool, McpTool)])
        return [tool for tool in tools if not (isinstance(tool, McpTool) and tool.raw_mcp_tool.name in withheld)]

    def listing_token(self, readonly_context: ReadonlyContext | None = None) -> tuple[object, ...] | None:
        """`McpToolset.listing_token`; None under `pinTools` (what a pin check withholds is not known without one)."""
        if self.pins is not None or type(self).get_tools is not UpstreamToolset.get_tools:
            return None
        return self._listing_token(readonly_context)

    async def pin_refusal(self, tool: types.Tool) -> str | None:
        """Why a call of `tool` (as the upstream listed it) is refused under `pinTools`, if it is."""
        if self.pins is None:
            return None
        drift = await self.pins.check(tool)
        return None if drift is None else drift.refusal(self.pins.config_hint)

    def status(self) -> dict[str, Any]:
        """`McpToolset.status`, plus the tools withheld by `pinTools`, if any: `drifted` (changed since approved)
        and `unapproved` (new or renamed since the upstream's tools were pinned)."""
        report = super().status()
        if self.session_policy == "isolated":
            limits = self._pool.limits
            report["warm"] = {"lent": self._warm.lent, "free": self._warm.free, "kept": self._warm.keep}
            report["limits"] = {"maxSessions": limits.total, "maxSessionsPerClient": limits.per_client}
        if self.pins is not None:
            drifts = self.pins.drifts
            for field, new in (("drifted", False), ("unapproved", True)):
                names = [drift.published for drift in drifts if drift.new is new]
                if names:
                    report[field] = names
        return report

    async def get_tool_with_prefix(self, name: str, readonly_context: ReadonlyContext | None = None) -> BaseTool | None:
        """`McpToolset.get_tool_with_prefix`, its connection errors naming this upstream's config key."""
        with self._named_errors():
            return await super().get_tool_with_prefix(name, readonly_context)

    async def call_tool(self, name: str, args: dict[str, Any], tool_context: ToolContext) -> types.CallToolResult:
        """`McpToolset.call_tool`, its connection errors naming this upstream's config key; a tool withheld by
        `pinTools` is not called (an `isError` result says how to approve it)."""
        if self.pins is not None:
            listed = await self.list_mcp_tools(tool_context, bounded=False)
            tool = next((candidate for candidate in listed if candidate.name == name), None)
            refusal = None if tool is None else await self.pin_refusal(tool)
            if refusal is not None:
                return types.CallToolResult(content=[types.TextContent(text=refusal)], is_error=True)
        with self._named_errors():
            return await super().call_tool(name, args, tool_context)

    async def _send_call(
        self, session: UpstreamSession, name: str, args: dict[str, Any], on_progress: ProgressFnT
    ) -> types.CallToolResult:
        """A handshake-era call as JSON-RPC, its result forwarded as sent (`forwarded_raw_call`, parsed once); a
        modern session's call the SDK client's way (its driver answers `InputRequiredResult` rounds)."""
        if session.modern:
            return await super()._send_call(session, name, args, on_progress)
        raw = await self._forwarded(session, name, args, on_progress)
        return types.CallToolResult.model_validate(raw, by_name=False)

    async def _forwarded(
        self, session: UpstreamSession, name: str, args: dict[str, Any], on_progress: ProgressFnT
    ) -> dict[str, Any]:
        """`name` called as JSON-RPC through `session`'s dispatcher, the result the JSON object the upstream sent."""
        return await forwarded_raw_call(
            session.client.session,
            name,
            args,
            meta=session.meta,
            on_progress=on_progress,
            read_timeout=self.connection_params.call_timeout,
        )

    @property
    def relays_raw(self) -> bool:
        """Whether a call may be relayed as JSON-RPC (`call_tool_raw`): no pins, result cap or credential to apply."""
        return self.pins is None and self.max_result_bytes is None and self.credential is None

    async def call_tool_raw(
        self, name: str, args: dict[str, Any], tool_context: ToolContext, *, declared: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`call_tool` for the fast lane (`relays_raw` upstreams only): the result the JSON object the upstream sent.

        `declared`: the capabilities a modern (2026-07-28) client declared (wire form). Its call goes to a modern
        session as one relayed round (`call_tool_round`): the upstream sees them in the gateway's place, and an
        `InputRequiredResult` comes back as sent (`resultType: input_required`) for that client to answer.

        Raises:
            UpstreamUnavailableError: the upstream cannot be reached, or its session ended during the call.
            MCPError: the upstream answered with a JSON-RPC error.
        """

        async def send(session: UpstreamSession, on_progress: ProgressFnT) -> dict[str, Any]:
            if session.modern and declared is not None:
                # One round, relayed as sent: its `InputRequiredResult` is the client's to answer, not the driver's.
                with declaring(declared):
                    return await self._forwarded(session, name, args, on_progress)
            if session.modern:
                result = await McpToolset._send_call(self, session, name, args, on_progress)
                return result.model_dump(by_alias=True, mode="json", exclude_none=True)
            if session.channel is not None and session.handlers is not None:
                # Streamable HTTP: POSTed on the session's connections without the SDK client's machinery.
                params: dict[str, Any] = {"name": name, "arguments": args}
                if session.meta:
                    params["_meta"] = dict(session.meta)
                return await DirectPost(session.channel).call_tool(
                    params,
                    protocol_version=session.client.protocol_version,
                    handlers=session.handlers,
                    on_progress=on_progress,
                    read_timeout=self.connection_params.call_timeout,
                )
            return await self._forwarded(session, name, args, on_progress)

        with self._named_errors():
            return await call_once(self._pool, name, tool_context, send, self.progress_callback)

    async def call_tool_round(
        self, name: str, args: dict[str, Any], tool_context: ToolContext, answer: RelayedRound
    ) -> types.CallToolResult | types.InputRequiredResult | CreateTaskResult:
        """`McpToolset.call_tool_round`, its connection errors naming this upstream's config key."""
        with self._named_errors():
            return await super().call_tool_round(name, args, tool_context, answer)

    @contextmanager
    def _named_errors(self) -> Generator[None]:
        """Connection errors raised inside, reworded to name this upstream's config key first."""
        try:
            yield
        except UpstreamUnavailableError as exc:
            raise UpstreamUnavailableError(f"Upstream {self.key!r}: {exc}") from exc


def _inbound_token(context: ReadonlyContext | None) -> str | None:
    """The bearer token of the downstream request being served, if it belongs to the context's principal.

    Read in the task serving the request (the MCP SDK keeps the authenticated token in a context variable there);
    only token exchange and an opted-in pass-through ever use it.
    """
    token = get_access_token()
    if token is None or context is None or (token.subject or token.client_id) != context.user_id:
        return None
    return token.token


@dataclass(frozen=True)
class _NameFilter:
    """`allowTools` / `denyTools`: a tool's offered by its name alone, whatever the context (`context_free`)."""

    allowed: frozenset[str] | None
    denied: frozenset[str]
    context_free: ClassVar[bool] = True

    def __call__(self, tool: BaseTool, readonly_context: ReadonlyContext | None = None) -> bool:
        del readonly_context
        return (self.allowed is None or tool.name in self.allowed) and tool.name not in self.denied


def _tool_filter(config: UpstreamConfig) -> ToolPredicate | None:
    if config.allow_tools is None and not config.deny_tools:
        return None
    return _NameFilter(
        None if config.allow_tools is None else frozenset(config.allow_tools), frozenset(config.deny_tools)
    )


def _confirm_tool(config: UpstreamConfig) -> Callable[[types.Tool], bool] | None:
    policy = config.confirm
    if isinstance(policy, list):
        listed = frozenset(policy)
        return lambda tool: tool.name in listed
    if policy == "destructive":
        # MCP's defaults: a tool is destructive unless it says it is read-only or not destructive.
        def destructive(tool: types.Tool) -> bool:
            hints = tool.annotations
            if hints is None:
                return True
            return hints.read_only_hint is not True and hints.destructive_hint is not False

        return destructive
    return None


def gateway_tools(config: GatewayConfig, pin_store: PinStore | None = None) -> list[ToolUnion]:
    """The tool sources a config describes: its enabled upstreams, then its local tools.

    Upstreams with `pinTools` have their tools pinned in `pin_store` (none are pinned without one).

    Raises:
        ConfigError: a local tool reference cannot be loaded.
    """
    items: list[ToolUnion] = [upstream_toolset(config, key, pin_store) for key in config.enabled_servers()]
    items.extend(local_tools(config))
    return items


def upstream_toolset(config: GatewayConfig, key: str, pin_store: PinStore | None = None) -> UpstreamToolset:
    """The toolset of the upstream `key` of `config`, its tools pinned in `pin_store` if it has `pinTools`."""
    server = config.mcp_servers[key]
    pins: ToolPins | None = None
    if pin_store is not None and config.pins_tools(key):
        prefix = key if server.prefix is None else server.prefix
        pins = ToolPins(pin_store, key, prefix, str(config.path))
    return UpstreamToolset(
        key, server, config.base, config_path=config.path, max_result_bytes=config.max_result_bytes, pins=pins
    )


def tool_reference(config: GatewayConfig, reference: str) -> str:
    """A `tools` entry of the config with a relative file path made relative to the config file."""
    module, sep, attr = reference.partition(":")
    if module.endswith(".py") and not Path(module).is_absolute():
        module = str(config.base / module)
    return module + sep + attr


def local_tools(config: GatewayConfig) -> list[BaseTool | BaseToolset]:
    """The local tools the config's `tools` entries name (a file is imported afresh on every call).

    Raises:
        ConfigError: a reference cannot be loaded.
    """
    items: list[BaseTool | BaseToolset] = []
    for reference in config.tools:
        items.extend(load_tools(tool_reference(config, reference)))
    return items
