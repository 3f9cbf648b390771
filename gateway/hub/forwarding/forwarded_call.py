"""`forwarded_call`: a handshake-era `tools/call` sent for a gateway, its result parsed once and not judged.

The SDK's `ClientSession.call_tool` builds and dumps a request model, validates the result against the protocol's
wire schema, parses it into a model, then checks `structuredContent` against the tool's `outputSchema` (listing the
tools first if it has not seen this one). A gateway forwards the upstream's result as it was sent — its client
checks it — so here the request goes out as JSON-RPC through the session's own dispatcher (with the session's
envelope stamp, timeout and progress routing), and the caller parses the result into a `CallToolResult` once.

The SDK has no public way to send a request and get its raw result, so this reaches two of `ClientSession`'s
private attributes (`_stamp`, `_dispatcher`); a test sends a call through it on every transport, so an SDK change
that moves them fails there. For handshake-era sessions, and for one round of a modern session relayed for a modern
client (`UpstreamToolset.call_tool_raw`), whose `InputRequiredResult` is that client's to answer; otherwise a modern
session's rounds need `mcp.Client`'s driver.
"""

from __future__ import annotations

from typing import Any

from mcp import ClientSession
from mcp.shared.dispatcher import CallOptions, ProgressFnT

__all__ = ["forwarded_raw_call"]


async def forwarded_raw_call(
    session: ClientSession,
    name: str,
    arguments: dict[str, Any],
    *,
    meta: dict[str, Any] | None,
    on_progress: ProgressFnT,
    read_timeout: float | None = None,
) -> dict[str, Any]:
    """Send `tools/call` for `name` on `session`; the result the JSON object the upstream sent, not parsed or judged
    (a caller that wants a model parses it once: `CallToolResult.model_validate`).

    Raises:
        MCPError: the upstream answered with a JSON-RPC error, timed out, or the connection closed.
    """
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = dict(meta)
    data: dict[str, Any] = {"method": "tools/call", "params": params}
    opts: CallOptions = {"on_progress": on_progress}
    session._stamp(data, opts)  # pyright: ignore[reportPrivateUsage]
    if read_timeout is not None:
        opts["timeout"] = read_timeout
    return await session._dispatcher.send_raw_request("tools/call", data["params"], opts)  # pyright: ignore[reportPrivateUsage]
