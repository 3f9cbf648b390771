"""`tools/list` timed with a raw HTTP client: the server's share of a listing, without the SDK client's parsing.

A handshake-era session (`initialize`, `notifications/initialized`, as `mcp.Client(mode="legacy")` opens it) is
opened with `httpx2`; then each page's JSON-RPC request is posted and timed until its last byte has arrived. Only
the POSTs are timed: finding the next cursor in the body (a JSON parse) happens between them, untimed.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from _harness import DEADLINE

__all__ = ["RawSession", "raw_session"]

_VERSION = "2025-11-25"


class RawSession:
    """One initialised handshake-era session over plain HTTP."""

    def __init__(self, http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> None:
        self._http = http
        self._url = url
        self._headers = headers
        self._next_id = 2

    async def listing_ms(self, expected: int) -> float:
        """Milliseconds to the last byte of every `tools/list` page, summed (parsing between pages untimed)."""
        spent = 0.0
        count = 0
        cursor: str | None = None
        with anyio.fail_after(DEADLINE):
            while True:
                params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
                body = json.dumps({"jsonrpc": "2.0", "id": self._next_id, "method": "tools/list", "params": params})
                self._next_id += 1
                start = time.perf_counter()
                response = await self._http.post(self._url, content=body, headers=self._headers)
                content = response.content
                spent += time.perf_counter() - start
                result = _result(content)
                count += len(result["tools"])
                cursor = result.get("nextCursor")
                if not cursor:
                    break
        if count != expected:
            raise RuntimeError(f"tools/list gave {count} tools, expected {expected}")
        return spent * 1000


def _result(content: bytes) -> dict[str, Any]:
    """The JSON-RPC result of a response sent as JSON or as one SSE `message` event."""
    text = content.decode()
    if not text.lstrip().startswith("{"):
        text = "".join(line[5:].lstrip() for line in text.splitlines() if line.startswith("data:"))
    message = json.loads(text)
    if "result" not in message:
        raise RuntimeError(f"tools/list failed: {message.get('error')}")
    return message["result"]


@asynccontextmanager
async def raw_session(base_url: str) -> AsyncIterator[RawSession]:
    """A handshake-era session on `base_url/mcp`, initialised, closed (DELETE) at the end."""
    url = f"{base_url}/mcp"
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": _VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
    }
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(DEADLINE)) as http:
        response = await http.post(url, json=initialize, headers=headers)
        response.raise_for_status()
        session_id = response.headers.get("mcp-session-id")
        if session_id:
            headers["mcp-session-id"] = session_id
        headers["mcp-protocol-version"] = _VERSION
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        try:
            yield RawSession(http, url, headers)
        finally:
            if session_id:
                with anyio.move_on_after(DEADLINE, shield=True):
                    await http.delete(url, headers=headers)
