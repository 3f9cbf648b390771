"""Forwarding's wire: how a call the hub decided to forward travels to an upstream and back.

* `fast_lane`: the lane in front of the server's streamable HTTP app (`gateway.server.http.lane` is its seam) that
  answers an eligible handshake-era `tools/call` (and a cached `tools/list` page) below the SDK's server;
  `_call_stream` writes such a call's response and carries what the upstream asks mid-call.
* `modern_lane`: the lane in front of `fast_lane` that answers an eligible sessionless (2026-07-28) `tools/call`,
  as a default `mcp.Client()` sends it.
* `direct_post`: a handshake-era `tools/call` POSTed on an HTTP upstream session's own connections.
* `forwarded_call`: a handshake-era `tools/call` sent through the SDK client session's dispatcher
  (`forwarded_raw_call`), its result forwarded as sent.
* `upstream_span`: the trace span around a forwarded call, whichever path forwards it.

The server never imports this package: the hub hands its lane to the HTTP front (`Hub.lane`), which lends it only
what `LaneSeam` names. The client never imports it either; where a forwarding piece needs the client's session, the
client keeps the client-side half and lends it: an upstream session's `HttpChannel` (its `httpx2` client, endpoint
and `Mcp-Session-Id`, and `IncomingHandlers`, its callbacks) is what `DirectPost` POSTs on, and `RelayedRound` (what a
modern client sent for one round, and the capability stamp it declares upstream) stays in `gateway.client`, since
`McpToolset.call_tool_round` takes it.
"""

from gateway.hub.forwarding.direct_post import DirectPost
from gateway.hub.forwarding.fast_lane import REQUEST_CANCELLED, FastLane
from gateway.hub.forwarding.forwarded_call import forwarded_raw_call
from gateway.hub.forwarding.modern_lane import ModernLane

__all__ = ["REQUEST_CANCELLED", "DirectPost", "FastLane", "ModernLane", "forwarded_raw_call"]
