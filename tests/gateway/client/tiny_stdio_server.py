"""A minimal handshake-era MCP server over stdio, standard library only, so that it starts in milliseconds.

Tools: `echo(text)` answers at once (and says so on stderr); `hang()` reports progress once (when the call carries
a progress token) and never answers. The process ends when its stdin closes — or, with `--linger`, lives on for a
minute after that (a server that only a signal ends, so a test can tell whether its client stopped it). With
`--start-after SECONDS` it reads nothing for that long first: a server slow to start (one installing itself).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "hang", "inputSchema": {"type": "object"}},
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method: str = request["method"]
    params: dict[str, Any] = request.get("params") or {}
    arguments: dict[str, Any] = params.get("arguments") or {}
    meta: dict[str, Any] = params.get("_meta") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "tiny", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "ping":
        return {}
    if method == "tools/call" and params.get("name") == "echo":
        print(f"tiny: echo {arguments.get('text', '')}", file=sys.stderr, flush=True)
        return {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]}
    if method == "tools/call" and params.get("name") == "hang":
        token = meta.get("progressToken")
        if token is not None:
            send(
                {
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 0, "message": "started"},
                }
            )
        return None
    raise LookupError(method)


def main() -> None:
    if "--start-after" in sys.argv:
        time.sleep(float(sys.argv[sys.argv.index("--start-after") + 1]))
    for line in sys.stdin:
        request: dict[str, Any] = json.loads(line)
        if "id" not in request or "method" not in request:
            continue  # a notification or a response
        try:
            result = answer(request)
        except LookupError:
            send({"id": request["id"], "error": {"code": -32601, "message": f"Method not found: {request['method']}"}})
            continue
        if result is not None:
            send({"id": request["id"], "result": result})


if __name__ == "__main__":
    main()
    if "--linger" in sys.argv:
        time.sleep(60)
