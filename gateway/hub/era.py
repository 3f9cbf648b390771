"""Which protocol era an upstream session speaks: chosen so that nothing the downstream client could use is lost.

* A handshake-era (≤ 2025-11-25) downstream session can be asked things in the middle of a call, and so can a
  handshake-era upstream session: an upstream that pushes `elicitation/create` or `sampling/createMessage`
  needs that back channel. So an `isolated` upstream session mirrors the era of the downstream session it
  serves (2026-07-28 downstream: the SDK's `auto`, which falls back to the handshake for older upstreams).
* A `shared` upstream session serves both eras at once: it speaks the handshake era when the upstream offers it
  (the gateway already turns a push question into an `InputRequiredResult` round for a 2026-07-28 client), and
  2026-07-28 only with an upstream that offers nothing else.
* `protocolVersion` in an upstream's config overrides both.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.client.upstream import HANDSHAKE_FIRST
from gateway.tools import ReadonlyContext

__all__ = ["DownstreamEras", "mode_for_version"]

_KEPT: Final = 10_000
"""Downstream sessions whose era is remembered (the newest first to stay)."""


def mode_for_version(version: str) -> str:
    """The SDK client's `mode` that speaks `version`, a value of an upstream's `protocolVersion` key.

    The SDK's handshake (`legacy`) offers the newest handshake-era version, 2025-11-25.
    """
    return version if version in MODERN_PROTOCOL_VERSIONS else "legacy"


class DownstreamEras:
    """The protocol version each downstream session speaks, by owner (`principal/session key`)."""

    def __init__(self) -> None:
        self._versions: OrderedDict[str, str] = OrderedDict()

    def seen(self, owner: str, version: str | None) -> None:
        """A request of session `owner` arrived, speaking `version`."""
        if version is None:
            return
        self._versions[owner] = version
        self._versions.move_to_end(owner)
        if len(self._versions) > _KEPT:
            self._versions.popitem(last=False)

    def forget(self, owner: str) -> None:
        """Session `owner` ended."""
        self._versions.pop(owner, None)

    def mode_for(self, context: ReadonlyContext | None) -> str:
        """The mode of an isolated upstream session serving the downstream session of `context`."""
        version = self._versions.get(f"{context.user_id}/{context.session_id}") if context is not None else None
        if version is None or version in MODERN_PROTOCOL_VERSIONS:
            return "auto"
        return HANDSHAKE_FIRST
