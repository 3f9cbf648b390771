"""`SessionLimits`: how many upstream sessions a `SessionPool` keeps open, in all and per client.

A pool opens one session per identity, and identities are cheap to make (a fresh `_meta` session key per
request), so the sessions a pool may hold are capped. Opening one past a cap first ends the session unused for
the longest (nothing in flight, no call running on it, nobody opening it); only when every session counted
against the cap is busy is the new request refused, with `SessionLimitError` naming the limit. So a flood from
one client ends that client's own idle sessions first (its share is full long before the whole is), and another
client's call is served.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from mcp import MCPError

from gateway.client.sessions.slot import SessionSlot
from gateway.tools import ReadonlyContext

__all__ = ["SESSION_LIMIT", "SessionLimitError", "SessionLimits"]

logger = logging.getLogger(__name__)

SESSION_LIMIT: Final = -32000
"""The JSON-RPC error code of a request refused because a cap on upstream sessions is reached."""


class SessionLimitError(MCPError):
    """A new upstream session would pass a cap and every session counted against it is busy."""

    def __init__(self, message: str, limit: str) -> None:
        super().__init__(code=SESSION_LIMIT, message=message, data={"limit": limit, "retryable": True})
        self.limit = limit


@dataclass(frozen=True)
class SessionLimits:
    """The caps on one pool's open sessions.

    Args:
        total: sessions open at once, in all (None: no cap).
        per_client: sessions open at once for one client (None: no cap).
        client_of: the client a context's request comes from (its principal, else its address).
        total_name: how the `total` cap is named in errors (a config key).
        per_client_name: how the `per_client` cap is named in errors.
        source: how errors name the upstream.
    """

    total: int | None = None
    per_client: int | None = None
    client_of: Callable[[ReadonlyContext | None], str] = lambda _context: ""
    total_name: str = "maxSessions"
    per_client_name: str = "maxSessionsPerClient"
    source: str = "the upstream"

    async def make_room(self, slots: dict[str, SessionSlot], opening: SessionSlot) -> None:
        """Make room for `opening` to open a session: end the least recently used idle sessions over a cap.

        `slots` is ordered from least to most recently used.

        Raises:
            SessionLimitError: a cap is reached and every session counted against it is busy.
        """
        per_client = (self.per_client, self.per_client_name, f" for {opening.client}")
        for cap, name, who in (per_client, (self.total, self.total_name, "")):
            if cap is None:
                continue
            live = [
                key
                for key, slot in slots.items()
                if slot is not opening and _counted(slot) and (not who or slot.client == opening.client)
            ]
            excess = len(live) - cap + 1
            for key in [key for key in live if _idle(slots[key])][: max(excess, 0)]:
                # Another opening may have ended this one while an earlier close here was awaited: it is gone
                # from the live sessions either way.
                ended = slots.pop(key, None)
                excess -= 1
                if ended is None or ended.session is None:
                    continue
                logger.info("Ending the least recently used idle session of %s: %s is reached.", self.source, name)
                await ended.session.aclose()
            if excess > 0:
                _forget(slots, opening)
                source = self.source[:1].upper() + self.source[1:]
                raise SessionLimitError(
                    f"{source} already has {len(live)} upstream sessions open{who}, all busy: the limit "
                    f"{name} ({cap}) is reached. Try again when a call has ended, or raise {name}.",
                    name,
                )


def _counted(slot: SessionSlot) -> bool:
    """Whether a slot counts against a cap: its session is open, or it is being opened (its opener holds the lock
    with no session yet), so that openings at the same time cannot all pass a cap none of them has reached yet."""
    if slot.session is None:
        return slot.lock.locked()
    return slot.session.alive


def _idle(slot: SessionSlot) -> bool:
    session = slot.session
    return session is not None and not session.in_flight and not slot.active and not slot.lock.locked()


def _forget(slots: dict[str, SessionSlot], refused: SessionSlot) -> None:
    """Drop a refused identity's empty slot, so that refused identities do not pile up (unless another request of
    the same identity waits for it)."""
    if refused.session is not None or refused.active or refused.lock.statistics().tasks_waiting:
        return
    for key in [key for key, slot in slots.items() if slot is refused]:
        del slots[key]
