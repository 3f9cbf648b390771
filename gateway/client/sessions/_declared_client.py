"""`DeclaringClient`: an `mcp.Client` whose session declares exactly the capabilities it is given.

The SDK derives a client's capabilities from the callbacks it has: an elicitation callback declares form *and* URL
elicitation, a roots callback `roots.listChanged`, and there is no way to declare less. A gateway's upstream session
must declare what its downstream client declared (form-only elicitation, roots without `listChanged`, nothing at
all), while keeping the callbacks that relay what the upstream asks. The SDK has no seam for that, so this module
replaces the session's capability ad (`ClientSession._build_capabilities`, used by `initialize`, `server/discover`
and the modern per-request `_meta`) on the one session this client builds.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from mcp import Client, ClientSession, types

__all__ = ["DeclaringClient"]


class DeclaringClient(Client):
    """`mcp.Client` declaring `declared` (set it before entering) instead of what its callbacks imply (and the
    extensions it is built with, which it implements itself)."""

    declared: types.ClientCapabilities | None = None

    async def _build_session(self, exit_stack: AsyncExitStack) -> ClientSession:
        session = await super()._build_session(exit_stack)  # pyright: ignore[reportPrivateUsage]
        declared = self.declared
        if declared is not None:
            own = session._build_capabilities  # pyright: ignore[reportPrivateUsage]

            def build_capabilities(version: str) -> types.ClientCapabilities:
                # What the downstream client declared, plus the extensions this client implements itself (a
                # gateway that finishes an upstream's tasks for its client declares the Tasks extension).
                extensions = own(version).extensions
                if not extensions:
                    return declared
                return declared.model_copy(update={"extensions": {**(declared.extensions or {}), **extensions}})

            session._build_capabilities = build_capabilities  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
        return session
