"""Which protocol era an upstream session speaks: chosen so that nothing the downstream client could use is lost.

* A handshake-era (≤ 2025-11-25) downstream session can be asked things in the middle of a call, and so can a
  handshake-era upstream session: an upstream that pushes `elicitation/create` or `sampling/createMessage`
  needs that back channel. So an `isolated` upstream session mirrors the era of the downstream session it
  serves (2026-07-28 downstream: the SDK's `auto`, which falls back to the handshake for older upstreams).
* A `shared` upstream session serves both eras at once: it speaks the handshake era when the upstream offers it
  (the gateway already turns a push question into an `InputRequiredResult` round for a 2026-07-28 client), and
  2026-07-28 only with an upstream that offers nothing else.
* `protocolVersion` in an upstream's config overrides both.

What an upstream session declares follows the same split. An `isolated` session declares what its downstream
client declared — in the handshake era in `initialize`, in 2026-07-28 in each request's `_meta` (requests that
declare differently get different upstream sessions) — as far as the gateway relays it: elicitation (form and URL
modes as declared), sampling (without `tools` or `context`, which the gateway does not relay) and roots. So the
upstream offers a client the tools that client can use, and asks it only what it can answer. A `shared` session
serves every client at once, so it declares everything the gateway relays (elicitation in both modes, sampling,
roots), as does a session opened with no downstream request behind it; a question reaches the client of the call
that caused it, which answers, or is refused for it when it did not declare that capability.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from mcp import types
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.client.sessions.upstream_session import HANDSHAKE_FIRST
from gateway.tools import ReadonlyContext

__all__ = ["DownstreamEras", "mode_for_version", "relayable"]

_KEPT: Final = 10_000
"""Downstream sessions whose era and capabilities are remembered (the newest first to stay)."""


def mode_for_version(version: str) -> str:
    """The SDK client's `mode` that speaks `version`, a value of an upstream's `protocolVersion` key.

    The SDK's handshake (`legacy`) offers the newest handshake-era version, 2025-11-25.
    """
    return version if version in MODERN_PROTOCOL_VERSIONS else "legacy"


class DownstreamEras:
    """The protocol version each downstream session speaks and what its client declared, by owner
    (`principal/session key`)."""

    def __init__(self) -> None:
        self._versions: OrderedDict[str, str] = OrderedDict()
        self._declared: OrderedDict[str, types.ClientCapabilities] = OrderedDict()

    def seen(self, owner: str, version: str | None, declared: types.ClientCapabilities | None = None) -> None:
        """A request of session `owner` arrived, speaking `version`, its client declaring `declared`."""
        if version is None:
            return
        self._versions[owner] = version
        self._versions.move_to_end(owner)
        self._declared[owner] = relayable(declared)
        self._declared.move_to_end(owner)
        if len(self._versions) > _KEPT:
            self._versions.popitem(last=False)
            self._declared.popitem(last=False)

    def forget(self, owner: str) -> None:
        """Session `owner` ended."""
        self._versions.pop(owner, None)
        self._declared.pop(owner, None)

    def declared_for(self, context: ReadonlyContext | None) -> types.ClientCapabilities | None:
        """What an isolated upstream session serving the downstream session of `context` declares; None for a
        context no downstream request came with (the start-up name check, `adk-mcp-gateway call`'s lookup), which
        has no client to mirror: its session declares what the gateway relays."""
        return self._declared.get(f"{context.user_id}/{context.session_id}") if context is not None else None

    def mode_for(self, context: ReadonlyContext | None) -> str:
        """The mode of an isolated upstream session serving the downstream session of `context`."""
        version = self._versions.get(f"{context.user_id}/{context.session_id}") if context is not None else None
        if version is None or version in MODERN_PROTOCOL_VERSIONS:
            return "auto"
        return HANDSHAKE_FIRST


def relayable(declared: types.ClientCapabilities | None) -> types.ClientCapabilities:
    """What of a client's capabilities an upstream session may declare in its place: what the gateway relays."""
    if declared is None:
        return types.ClientCapabilities()
    return types.ClientCapabilities(
        elicitation=declared.elicitation,
        sampling=types.SamplingCapability() if declared.sampling is not None else None,
        roots=declared.roots,
    )
