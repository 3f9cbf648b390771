"""The smallest handshake-era MCP server over stdio: one tool, `pong`, and nothing else, standard library only.

The process tests start dozens of upstream processes; this one starts in a few milliseconds (`python -I -S`),
where a server built on the SDK takes about a second. It answers `server/discover` with "method not found", so
a modern-era client falls back to `initialize`, as it does with any handshake-era server.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHOD_NOT_FOUND = -32601
TOOL: dict[str, Any] = {
    "name": "pong",
    "description": "Answer pong.",
    "inputSchema": {"type": "object", "properties": {}},
}


PONG: dict[str, Any] = {"content": [{"type": "text", "text": "pong"}], "isError": False}

Tools = Callable[[], list[dict[str, Any]]]
Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def answer(name: str, tools: Tools, call: Call, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of one request, or None for a method this server does not have."""
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": name, "version": "1"},
        }
    if method == "tools/list":
        return {"tools": tools()}
    if method == "tools/call":
        return call(params.get("name", ""), params.get("arguments") or {})
    if method == "ping":
        return {}
    return None


def serve(name: str, tools: Tools, call: Call) -> None:
    """Serve requests from stdin until it closes, as server `name` listing `tools()` and calling `call`.

    `hub_tagged_server.py` serves its tools through this loop too.
    """
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification or a response: nothing to say
        result = answer(name, tools, call, message["method"], message.get("params") or {})
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {message['method']}"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        # A file named on the command line gets this process's id: how tests count the processes started.
        with open(sys.argv[1], "a", encoding="utf-8") as started:
            started.write(f"{os.getpid()}\n")
    serve("tiny", lambda: [TOOL], lambda name, arguments: PONG)
