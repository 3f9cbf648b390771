"""`InMemoryStateStore`: state in dicts, for tests and for servers that need nothing to outlive them."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio.lowlevel

from gateway.errors import StateConflictError
from gateway.state._json_store import JsonStateStore
from gateway.state.store import StateScope
from gateway.tools.state import Scope

__all__ = ["InMemoryStateStore"]


class InMemoryStateStore(JsonStateStore):
    """A `StateStore` in process memory; its state ends with the process.

    Values are kept as JSON text, so the store behaves as the SQLite one does (what goes in must be JSON, what
    comes out is a fresh copy) and no caller can change it through an object it loaded.
    """

    def __init__(self) -> None:
        self._app: dict[str, dict[str, str]] = {}
        self._user: dict[tuple[str, str], dict[str, str]] = {}
        self._session: dict[tuple[str, str, str], dict[str, str]] = {}
        # When each session's keys were last written (`time.time()`), for `forget_idle_sessions`.
        self._session_written: dict[tuple[str, str, str], float] = {}

    async def load(self, scope: StateScope) -> dict[str, Any]:
        """The merged state of a call (see `StateStore.load`)."""
        await anyio.lowlevel.checkpoint()
        rows = {
            **self._session.get(_session_owner(scope), {}),
            **self._user.get(_user_owner(scope), {}),
            **self._app.get(scope.app_name, {}),
        }
        return {key: json.loads(text) for key, text in rows.items()}

    async def _apply_encoded(
        self, scope: StateScope, writes: list[tuple[Scope, str, str]], checks: list[tuple[Scope, str, str | None]]
    ) -> None:
        await anyio.lowlevel.checkpoint()
        # No await from here on: the check and the whole delta happen before any other task runs.
        changed = [key for scope_name, key, text in checks if self._owner(scope, scope_name).get(key) != text]
        if changed:
            raise StateConflictError(changed)
        for scope_name, key, text in writes:
            self._owner(scope, scope_name, create=True)[key] = text
            if scope_name == "session":
                self._session_written[_session_owner(scope)] = time.time()

    def _owner(self, scope: StateScope, scope_name: str, *, create: bool = False) -> dict[str, str]:
        table: dict[Any, dict[str, str]]
        owner: object
        if scope_name == "app":
            table, owner = self._app, scope.app_name
        elif scope_name == "user":
            table, owner = self._user, _user_owner(scope)
        else:
            table, owner = self._session, _session_owner(scope)
        return table.setdefault(owner, {}) if create else table.get(owner, {})

    async def clear_session(self, scope: StateScope) -> None:
        """Forget the session's own keys (see `StateStore.clear_session`)."""
        await anyio.lowlevel.checkpoint()
        self._session.pop(_session_owner(scope), None)
        self._session_written.pop(_session_owner(scope), None)

    async def forget_idle_sessions(self, app_name: str, idle_since: float) -> int:
        """Forget the sessions not written since `idle_since` (see `StateStore.forget_idle_sessions`)."""
        await anyio.lowlevel.checkpoint()
        idle = [
            owner for owner, written in self._session_written.items() if owner[0] == app_name and written < idle_since
        ]
        for owner in idle:
            del self._session_written[owner]
            self._session.pop(owner, None)
        return len(idle)

    async def aclose(self) -> None:
        """Nothing to release; present for the `StateStore` protocol."""
        await anyio.lowlevel.checkpoint()


def _user_owner(scope: StateScope) -> tuple[str, str]:
    return (scope.app_name, scope.user_id)


def _session_owner(scope: StateScope) -> tuple[str, str, str]:
    return (scope.app_name, scope.user_id, scope.session_id)
