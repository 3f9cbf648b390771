"""The gateway: many upstream MCP servers plus local tools behind one MCP endpoint."""

from gateway.hub.hub import Hub, gateway_server
from gateway.hub.upstreams import UpstreamToolset, gateway_tools

__all__ = ["Hub", "UpstreamToolset", "gateway_server", "gateway_tools"]
