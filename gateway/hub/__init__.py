"""The gateway: many upstream MCP servers plus local tools behind one MCP endpoint."""

from gateway.hub.upstreams import UpstreamToolset, gateway_tools

__all__ = ["UpstreamToolset", "gateway_tools"]
