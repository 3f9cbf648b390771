"""An upstream built on the SDK's MCP Apps extension (`mcp.server.apps`), with instructions, over stdio.

`python hub_apps_server.py [NAME]`: the clock app `ui://clock/app.html` (HTML with its CSP), `get_time` and the
app-only `refresh_clock` bound to it, and `show_clock`, whose result names the app (a resource link and
`_meta.ui.resourceUri`). The server's instructions say its name, so a test can tell two of them apart.
"""

from __future__ import annotations

import sys

from mcp import types
from mcp.server.apps import Apps, ResourceCsp
from mcp.server.mcpserver import MCPServer

APP_URI = "ui://clock/app.html"
HTML = "<!doctype html><html><body><p id='time'>--:--</p></body></html>"
NAME = sys.argv[1] if len(sys.argv) > 1 else "clock"

apps = Apps()


@apps.tool(resource_uri=APP_URI, description="The current time, shown in the clock app.")
def get_time() -> str:
    return "12:00"


@apps.tool(resource_uri=APP_URI, visibility=["app"], description="The clock app's own refresh.")
def refresh_clock(zone: str) -> dict[str, str]:
    return {"zone": zone, "time": "12:00"}


apps.add_html_resource(
    APP_URI, HTML, title="Clock", csp=ResourceCsp(connect_domains=["https://time.example"]), prefers_border=True
)

server = MCPServer(
    NAME, instructions=f"The {NAME} server tells the time; ask get_time.", extensions=[apps], log_level="WARNING"
)


@server.tool(description="Show the clock app with the time in it.")
def show_clock() -> types.CallToolResult:
    return types.CallToolResult(
        content=[
            types.TextContent(text="12:00"),
            types.ResourceLink(uri=APP_URI, name="clock", mime_type="text/html;profile=mcp-app"),
        ],
        meta={"ui": {"resourceUri": APP_URI}},
    )


if __name__ == "__main__":
    server.run()
