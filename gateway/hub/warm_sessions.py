"""`WarmSessions`: the upstream sessions anonymous sessionless calls are lent, so no call starts a process.

A sessionless (2026-07-28) client that sends no session key and no token — `mcp.Client()`'s default, and most
agent frameworks' — gives every `tools/call` a session of its own (`call:` plus a random id, see
`gateway.server.identity`), which ends with the call. An isolated upstream session per such session would start
and stop a stdio upstream on every call. Instead each such call borrows one of a few upstream sessions kept open
for its client (its principal and its address: anonymous callers at two addresses never share one), for the call
and its input rounds only: two calls never hold one at the same time, so an upstream's questions reach the right
client. To a sessionless upstream (an
adk-mcp-gateway server among them) the session is known by a `_meta` key derived from the call that borrowed it,
so each call is a new session there, the same in all its rounds; a handshake-era upstream keeps its process, and
with it whatever that process remembers from one call to the next.
More calls at once get more sessions (each counted against `maxSessions`); when a call ends its session waits
for the next, unless `warmSessions` already wait, and then it ends.
"""

from __future__ import annotations

from collections import defaultdict

from gateway.server.identity import CALL_SESSION_PREFIX, current_client
from gateway.tools import ReadonlyContext

__all__ = ["WarmSessions"]


class WarmSessions:
    """Which warm upstream session each anonymous call has borrowed, and which are free, per client.

    A client is the principal with the address its request came from (`current_client`), so one address's calls
    never borrow a session another address's call used.

    Args:
        keep: sessions kept open per client between calls.
    """

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._lent: dict[str, tuple[str, str]] = {}
        """The borrowing call's owner: its client and the session key it borrowed."""
        self._free: defaultdict[str, list[str]] = defaultdict(list)
        self._made = 0

    @staticmethod
    def borrows(context: ReadonlyContext) -> bool:
        """Whether a context is an anonymous sessionless call's (one that borrows a warm session)."""
        return context.session_id.startswith(CALL_SESSION_PREFIX)

    def key_for(self, context: ReadonlyContext) -> str:
        """The session key of the upstream session a call borrowed (lent now if it has none yet, from the free
        ones of the call's client)."""
        owner = f"{context.user_id}/{context.session_id}"
        lent = self._lent.get(owner)
        if lent is None:
            client = f"{context.user_id}@{current_client()}"
            free = self._free[client]
            if free:
                key = free.pop()
            else:
                self._made += 1
                key = f"{client}/warm:{self._made}"
            lent = self._lent[owner] = (client, key)
        return lent[1]

    def keeps_another(self, context: ReadonlyContext) -> bool:
        """Whether the session the call of `context` borrowed is kept when the call ends (fewer are free for its
        client than kept); if not, the caller ends it and calls `forget`."""
        lent = self._lent.get(f"{context.user_id}/{context.session_id}")
        return lent is not None and len(self._free[lent[0]]) < self.keep

    def give_back(self, context: ReadonlyContext) -> None:
        """The call of `context` ended: its session waits for its client's next call."""
        lent = self._lent.pop(f"{context.user_id}/{context.session_id}", None)
        if lent is not None:
            self._free[lent[0]].append(lent[1])

    def forget(self, context: ReadonlyContext) -> None:
        """The call of `context` ended and its session with it."""
        lent = self._lent.pop(f"{context.user_id}/{context.session_id}", None)
        if lent is not None and not self._free[lent[0]]:
            del self._free[lent[0]]

    @property
    def lent(self) -> int:
        """Warm sessions lent to calls now."""
        return len(self._lent)

    @property
    def free(self) -> int:
        """Warm sessions waiting for a call now."""
        return sum(len(free) for free in self._free.values())
