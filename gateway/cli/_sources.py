"""The tool sources a command names: a gateway CONFIG, local tools (`--tools`) and ADK agents (`--agent`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.config.references import load_agent, load_tools
from gateway.errors import GatewayError
from gateway.tools.tool_union import ToolUnion

if TYPE_CHECKING:
    from gateway.config import GatewayConfig

__all__ = ["Sources", "load_sources"]


@dataclass(frozen=True)
class Sources:
    """What a command serves or calls: the tool sources, and the config if one was given."""

    items: list[ToolUnion]
    config: GatewayConfig | None = None

    @property
    def name(self) -> str | None:
        """The config's server name (None without a config)."""
        return self.config.name if self.config is not None else None


def load_sources(config: str | None, references: Sequence[str], agents: Sequence[str]) -> Sources:
    """The tool sources that CONFIG, `--tools` and `--agent` describe.

    Raises:
        GatewayError: none was given.
        ConfigError: the config or a reference cannot be loaded (the message says which and why).
    """
    if not config and not references and not agents:
        raise GatewayError(
            "Give a gateway CONFIG file, local tools with --tools REF, or an ADK agent with --agent MODULE:ATTR."
        )
    items: list[ToolUnion] = []
    loaded: GatewayConfig | None = None
    if config:
        from gateway.config import load_config
        from gateway.hub import gateway_tools

        loaded = load_config(config)
        items.extend(gateway_tools(loaded))
    for reference in references:
        items.extend(load_tools(reference))
    items.extend(load_agent(reference) for reference in agents)
    return Sources(items, loaded)
