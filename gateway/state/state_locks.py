"""`StateLocks`: which state-using calls wait for which, so that none loses another's update.

Every state-using call holds its session's lock: the calls of one session run one at a time (an LLM client's
parallel calls included), so the plain keys of a session are never read stale. `user:` and `app:` keys are shared
across sessions; a store refuses a delta computed from values that changed meanwhile (`StateConflictError`), and
the call runs again. So that a tool does not keep running again, the conflict is remembered: from then on that
tool's calls also hold the lock of the principal (`user:` conflict) or of the whole app (`app:` conflict). Locks
are taken in one order (app, user, session), so calls never wait for each other in a circle.

A lock exists only while a call holds or waits for it: an idle server keeps none, ended sessions leave none.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Final

import anyio

from gateway.state.store import StateScope
from gateway.tools.state import Scope, scope_of

__all__ = ["StateLocks"]

_SHARED_SCOPES: Final[tuple[Scope, ...]] = ("app", "user")


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0


class StateLocks:
    """Per-session locks, plus per-principal and per-app locks for tools seen to contend on shared keys."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, ...], _Entry] = {}
        self._shared_scopes: dict[str, frozenset[Scope]] = {}

    def __len__(self) -> int:
        """How many locks some call holds or waits for now."""
        return len(self._entries)

    def contended_scopes(self, tool_name: str) -> frozenset[Scope]:
        """The shared scopes (`user`, `app`) a tool's calls lock because it once ran on stale values there."""
        return self._shared_scopes.get(tool_name, frozenset())

    def remember_conflict(self, tool_name: str, keys: Iterable[str]) -> None:
        """Note that `tool_name` read `keys` stale: its calls lock their scopes from now on."""
        scopes: frozenset[Scope] = frozenset(scope for scope in map(scope_of, keys) if scope in _SHARED_SCOPES)
        self._shared_scopes[tool_name] = self.contended_scopes(tool_name) | scopes

    @asynccontextmanager
    async def hold(self, scope: StateScope, tool_name: str) -> AsyncGenerator[None]:
        """Hold the locks a call of `tool_name` in `scope` needs, for the block: app, user (if contended), session."""
        shared = self.contended_scopes(tool_name)
        keys: list[tuple[str, ...]] = []
        if "app" in shared:
            keys.append(("app", scope.app_name))
        if "user" in shared:
            keys.append(("user", scope.app_name, scope.user_id))
        keys.append(("session", scope.app_name, scope.user_id, scope.session_id))
        async with AsyncExitStack() as stack:
            for key in keys:
                await stack.enter_async_context(self._holding(key))
            yield

    @asynccontextmanager
    async def _holding(self, key: tuple[str, ...]) -> AsyncGenerator[None]:
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry()
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]
