"""A small handshake-era MCP server over stdio whose tools say which process and which config entry serve them.

Standard library only (starts in milliseconds under `python -I -S`). Configured by environment variables, so a
gateway config entry that changes its `env` changes what this server says:

* `TAG` — `whoami` answers `{"pid": ..., "tag": TAG}`;
* `WHOAMI_DESCRIPTION` — the description of `whoami` (a tool definition that changes between runs).

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

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHOD_NOT_FOUND = -32601
POLL_SECONDS = 0.02


def tools() -> list[dict[str, Any]]:
    """The tools, as `tools/list` gives them."""
    return [
        {
            "name": "whoami",
            "description": os.environ.get("WHOAMI_DESCRIPTION", "Say which process serves this call."),
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": True},
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
    ]


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
    return {"content": [{"type": "text", "text": f"Unknown tool {name}"}], "isError": True}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of one request, or None for a method this server does not have."""
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tagged", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": tools()}
    if method == "tools/call":
        return call(params["name"], params.get("arguments") or {})
    if method == "ping":
        return {}
    return None


def main() -> None:
    """Serve requests from stdin until it closes."""
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification or a response: nothing to say
        result = answer(message["method"], message.get("params") or {})
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {message['method']}"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
