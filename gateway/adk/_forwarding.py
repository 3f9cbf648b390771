"""An `McpToolset` lent to ADK: its server's questions go to the ADK user of the call that caused them.

Forwarding has to be on when a session opens: a session declares the elicitation capability at its start (the
handshake era's `initialize`), and one opened while the toolset was used on its own (`get_tools()`, or a call with a
plain `ToolContext`) declared none, so its server would refuse to ask ADK's user anything. Such sessions are ended
before the lent toolset's first use, and the next request opens one that declares it.
"""

from __future__ import annotations

from gateway.client import McpToolset

__all__ = ["ForwardToAdk"]


class ForwardToAdk:
    """Turns `forward_client_requests` on for an `McpToolset` without an `elicitation_callback` of its own (one with
    a callback keeps it); `ready()` before each use ends the sessions opened before, once."""

    def __init__(self, toolset: object) -> None:
        self._stale: McpToolset | None = None
        if (
            isinstance(toolset, McpToolset)
            and toolset.client_callbacks.elicitation is None
            and not toolset.forward_client_requests
        ):
            toolset.forward_client_requests = True
            if toolset.status()["sessions"]:
                self._stale = toolset

    async def ready(self) -> None:
        """End the sessions the toolset opened before it forwarded (they declared no elicitation), if any."""
        stale, self._stale = self._stale, None
        if stale is not None:
            await stale.close()
