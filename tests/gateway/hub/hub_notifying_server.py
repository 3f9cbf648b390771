"""A handshake-era MCP server over stdio that speaks outside its replies: change notifications and `roots/list`.

Standard library only, so that every message on the wire is the one written here:

* `grow` adds a tool `extra_N` and sends `notifications/tools/list_changed`;
* `touch` sends `notifications/resources/updated` for `note://a` (when subscribed) and
  `notifications/resources/list_changed`;
* `roots` asks the client `roots/list` in the middle of the call and answers with the root URIs;
* `roots_changes` counts the `notifications/roots/list_changed` received so far;
* `ask_name`, `ask_url` and `ask_model` push `elicitation/create` (a form twice; a URL) and
  `sampling/createMessage` mid-call.

It answers `server/discover` with "method not found", so a modern-era client falls back to `initialize`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
METHOD_NOT_FOUND = -32601
NOTE = "note://a"
_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}
tools: list[dict[str, Any]] = [
    {"name": name, "description": description, "inputSchema": _EMPTY}
    for name, description in (
        ("grow", "Add a tool and announce the change."),
        ("touch", "Announce that note://a changed."),
        ("roots", "Ask the client for its roots."),
        ("roots_changes", "How many roots changes the client announced."),
        ("ask_name", "Ask the user two names (push elicitation)."),
        ("ask_model", "Ask the client's model to say hi (push sampling)."),
        ("ask_url", "Send the user to a sign-in page (push URL elicitation)."),
    )
]
subscribed: set[str] = set()
roots_changes = 0


def send(message: dict[str, Any]) -> None:
    """Write one JSON-RPC message."""
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def text(value: str) -> dict[str, Any]:
    """A tool result with one text block."""
    return {"content": [{"type": "text", "text": value}], "isError": False}


asked = 0


def ask(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Send a request to the client and read messages until its answer arrives (handling others meanwhile)."""
    global asked  # noqa: PLW0603 - a one-file server's state
    asked += 1
    request_id = f"ask-{asked}"
    send({"id": request_id, "method": method, **({"params": params} if params else {})})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return message
        handle(message)
    return {"error": {"message": "stdin closed"}}


def ask_roots() -> str:
    """The client's root URIs, space-separated."""
    answer = ask("roots/list")
    if "error" in answer:
        return f"error: {answer['error']['message']}"
    return " ".join(root["uri"] for root in answer["result"]["roots"])


def ask_name() -> str:
    """Two push elicitations in one call (so a client answers across rounds): `action:name` of each."""
    form = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    outcomes: list[str] = []
    for question in ("What is your name?", "And your friend's?"):
        answer = ask("elicitation/create", {"mode": "form", "message": question, "requestedSchema": form})
        if "error" in answer:
            return f"error: {answer['error']['message']}"
        result = answer["result"]
        outcomes.append(f"{result['action']}:{(result.get('content') or {}).get('name', '')}")
    return " ".join(outcomes)


def ask_url() -> str:
    """A push URL-mode elicitation; `action` of the answer."""
    params = {"mode": "url", "message": "Sign in first.", "url": "https://example.com/sign-in", "elicitationId": "e-1"}
    answer = ask("elicitation/create", params)
    if "error" in answer:
        return f"error: {answer['error']['message']}"
    return answer["result"]["action"]


def ask_model() -> str:
    """A push sampling request; the model's text."""
    message = {"role": "user", "content": {"type": "text", "text": "Say hi"}}
    answer = ask("sampling/createMessage", {"messages": [message], "maxTokens": 20})
    if "error" in answer:
        return f"error: {answer['error']['message']}"
    return answer["result"]["content"]["text"]


def call(name: str) -> dict[str, Any]:
    """Run one tool."""
    if name == "grow":
        tools.append({"name": f"extra_{len(tools)}", "description": "Added by grow.", "inputSchema": _EMPTY})
        send({"method": "notifications/tools/list_changed"})
        return text(f"{len(tools)} tools")
    if name == "touch":
        if NOTE in subscribed:
            send({"method": "notifications/resources/updated", "params": {"uri": NOTE}})
        send({"method": "notifications/resources/list_changed"})
        return text("touched")
    if name == "roots":
        return text(ask_roots())
    if name == "roots_changes":
        return text(str(roots_changes))
    if name == "ask_name":
        return text(ask_name())
    if name == "ask_model":
        return text(ask_model())
    if name == "ask_url":
        return text(ask_url())
    return {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The result of one request, or None for a method this server does not have."""
    results: dict[str, Any] = {
        "ping": {},
        "tools/list": {"tools": tools},
        "resources/list": {"resources": [{"uri": NOTE, "name": "a"}]},
        "resources/read": {"contents": [{"uri": NOTE, "text": "note a"}]},
    }
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
            "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True}},
            "serverInfo": {"name": "notifying", "version": "1"},
        }
    if method == "tools/call":
        return call(params["name"])
    if method == "resources/subscribe":
        subscribed.add(params["uri"])
        return {}
    if method == "resources/unsubscribe":
        subscribed.discard(params["uri"])
        return {}
    return results.get(method)


def handle(message: dict[str, Any]) -> None:
    """Answer a request; count roots changes; ignore other notifications and stray responses."""
    global roots_changes  # noqa: PLW0603 - a one-file server's state
    if message.get("method") == "notifications/roots/list_changed":
        roots_changes += 1
    if "id" not in message or "method" not in message:
        return
    result = answer(message["method"], message.get("params") or {})
    if result is None:
        send({"id": message["id"], "error": {"code": METHOD_NOT_FOUND, "message": f"No method {message['method']}"}})
    else:
        send({"id": message["id"], "result": result})


def main() -> None:
    """Serve messages from stdin until it closes."""
    for line in sys.stdin:
        if line.strip():
            handle(json.loads(line))


if __name__ == "__main__":
    main()
