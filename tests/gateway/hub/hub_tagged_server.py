"""A small handshake-era MCP server over stdio whose tools say which process and which config entry serve them.

Standard library only (starts in milliseconds under `python -I -S`). Configured by environment variables, so a
gateway config entry that changes its `env` changes what this server says:

* `TAG` — `whoami` answers `{"pid": ..., "tag": TAG}`;
* `WHOAMI_DESCRIPTION` — the description of `whoami` (a tool definition that changes between runs);
* `WHOAMI_FIELDS` — a JSON object of further fields of `whoami`'s definition (`title`, `outputSchema`, ...);
* `EXTRA_TOOLS` — a JSON list of further tool definitions; a call of one answers `called NAME`.

`hold(started, gate)` writes the file `started`, then answers only once the file `gate` exists: a call a test can
keep in flight for as long as it needs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# `python -I` leaves the script's folder off the path; the request loop is the tiny server's.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from hub_tiny_server import serve

POLL_SECONDS = 0.02


def tools() -> list[dict[str, Any]]:
    """The tools, as `tools/list` gives them."""
    return [
        {
            "name": "whoami",
            "description": os.environ.get("WHOAMI_DESCRIPTION", "Say which process serves this call."),
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": True},
            **json.loads(os.environ.get("WHOAMI_FIELDS", "{}")),
        },
        {
            "name": "hold",
            "description": "Write `started`, then answer once the file `gate` exists.",
            "inputSchema": {
                "type": "object",
                "properties": {"started": {"type": "string"}, "gate": {"type": "string"}},
                "required": ["started", "gate"],
            },
        },
        *_extra_tools(),
    ]


def _extra_tools() -> list[dict[str, Any]]:
    return json.loads(os.environ.get("EXTRA_TOOLS", "[]"))


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The result of one tool call."""
    if name == "whoami":
        content = {"pid": os.getpid(), "tag": os.environ.get("TAG", "")}
        return {"content": [{"type": "text", "text": json.dumps(content)}], "structuredContent": content}
    if name == "hold":
        Path(arguments["started"]).write_text("started")
        while not Path(arguments["gate"]).exists():
            time.sleep(POLL_SECONDS)
        return {"content": [{"type": "text", "text": "released"}]}
    if any(tool["name"] == name for tool in _extra_tools()):
        return {"content": [{"type": "text", "text": f"called {name}"}]}
    return {"content": [{"type": "text", "text": f"Unknown tool {name}"}], "isError": True}


if __name__ == "__main__":
    serve("tagged", tools, call)
