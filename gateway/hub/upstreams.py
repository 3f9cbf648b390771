"""A gateway config turned into tool sources: one `McpToolset` per upstream plus the local tools.

Per upstream: names `{prefix}_{name}` (prefix = the server's key unless set; `""` passes names through), the
allow/deny lists, the confirmation policy, and the session policy — `isolated` gives every downstream session its
own upstream session (a stateful upstream never mixes two clients), `shared` one session for all. Upstream
elicitation, sampling and log messages go to the downstream client whose call caused them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mcp import types

from gateway.client import McpToolset
from gateway.config import GatewayConfig, UpstreamConfig
from gateway.references import load_tools
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext, ToolPredicate
from gateway.tools.tool_union import ToolUnion

__all__ = ["UpstreamToolset", "gateway_tools"]


class UpstreamToolset(McpToolset):
    """An `McpToolset` that knows which config entry it came from (for messages about name conflicts)."""

    def __init__(self, key: str, config: UpstreamConfig, base: Path) -> None:
        prefix = key if config.prefix is None else config.prefix
        super().__init__(
            connection_params=config.connection(base),
            tool_filter=_tool_filter(config),
            tool_name_prefix=prefix or None,
            require_confirmation=config.confirm is True,
            confirm_tool=_confirm_tool(config),
            session_key=_session_key(config),
            forward_client_requests=True,
        )
        self.key = key
        self.source_name = f"upstream {key!r}"


def _tool_filter(config: UpstreamConfig) -> ToolPredicate | None:
    if config.allow_tools is None and not config.deny_tools:
        return None
    allowed = None if config.allow_tools is None else frozenset(config.allow_tools)
    denied = frozenset(config.deny_tools)

    def selected(tool: BaseTool, readonly_context: ReadonlyContext | None = None) -> bool:
        del readonly_context
        return (allowed is None or tool.name in allowed) and tool.name not in denied

    return selected


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


def _session_key(config: UpstreamConfig) -> Callable[[ReadonlyContext], str] | None:
    if config.session_policy == "shared":
        return None
    return lambda context: f"{context.user_id}/{context.session_id}"


def gateway_tools(config: GatewayConfig) -> list[ToolUnion]:
    """The tool sources a config describes: its enabled upstreams, then its local tools.

    Raises:
        ConfigError: a local tool reference cannot be loaded.
    """
    items: list[ToolUnion] = [
        UpstreamToolset(key, server, config.base) for key, server in config.enabled_servers().items()
    ]
    for reference in config.tools:
        module, sep, attr = reference.partition(":")
        if module.endswith(".py") and not Path(module).is_absolute():
            module = str(config.base / module)
        local: list[BaseTool | BaseToolset] = load_tools(module + sep + attr)
        items.extend(local)
    return items
