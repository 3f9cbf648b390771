"""An SDK `MCPServer` over stdio whose tool `declared` answers with the capabilities its client declared.

Run as `python -I hub_capabilities_server.py`; it speaks both protocol eras (the SDK's dual-era stdio loop), so
the capabilities it reports are those of the `initialize` request or of the request's own `_meta`.
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("capabilities")


@server.tool()
async def declared(ctx: Context) -> dict[str, Any]:
    """The client's capabilities, as this server was told them (wire form)."""
    capabilities = ctx.client_capabilities or types.ClientCapabilities()
    return capabilities.model_dump(by_alias=True, mode="json", exclude_none=True)


if __name__ == "__main__":
    server.run("stdio")
