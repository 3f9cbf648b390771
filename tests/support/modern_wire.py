"""Raw 2026-07-28 JSON-RPC requests over streamable HTTP, as the conformance suite sends them (no MCP client).

    async with httpx2.AsyncClient() as http:
        wire = ModernWire(http, f"{base_url}/mcp", extensions={TASKS_EXTENSION: {}})
        created = await wire.request("tools/call", {"name": "slow", "arguments": {}})

Each request carries the modern envelope (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` for name-bearing methods
and `_meta` with the protocol version, client info and capabilities); the answer is the JSON-RPC `result`, and a
JSON-RPC error is raised as `MCPError`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any, Final

import httpx2
from mcp import MCPError

__all__ = ["MODERN_VERSION", "ModernWire"]

MODERN_VERSION: Final = "2026-07-28"
_NAME_FIELDS: Final = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
_ids = itertools.count(1)


class ModernWire:
    """Modern-era requests to one MCP endpoint.

    Args:
        http: the client to send with (its headers, e.g. `Authorization`, go along).
        url: the MCP endpoint (`.../mcp`).
        extensions: the client's `capabilities.extensions` (declared on every request).
        capabilities: other client capabilities.
        meta: more `_meta` entries for every request (e.g. a session key).
    """

    def __init__(
        self,
        http: httpx2.AsyncClient,
        url: str,
        *,
        extensions: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self._http = http
        self._url = url
        declared = dict(capabilities or {})
        if extensions is not None:
            declared["extensions"] = dict(extensions)
        self.meta: dict[str, Any] = {
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "modern-wire", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": declared,
            **(meta or {}),
        }

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, headers: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Send one request; its `result`.

        Raises:
            MCPError: the server answered with a JSON-RPC error.
        """
        body = dict(params or {})
        body["_meta"] = {**self.meta, **body.get("_meta", {})}
        request_id = next(_ids)
        sent = {
            "MCP-Protocol-Version": MODERN_VERSION,
            "Mcp-Method": method,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        name_field = _NAME_FIELDS.get(method)
        if name_field is not None and isinstance(body.get(name_field), str):
            sent["Mcp-Name"] = body[name_field]
        sent.update(headers or {})
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}
        response = await self._http.post(self._url, json=message, headers=sent)
        answer = _answer(response, request_id)
        if "error" in answer:
            error = answer["error"]
            raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))
        return answer["result"]


def _answer(response: httpx2.Response, request_id: int) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message = json.loads(line.removeprefix("data:").strip())
                if message.get("id") == request_id:
                    return message
        raise AssertionError(f"no answer to request {request_id} in the event stream:\n{response.text}")
    return response.json()
