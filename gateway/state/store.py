"""`StateStore`: where the state a tool sees lives between calls, one row per key and owner.

Every call's state has three owners, named by a `StateScope`: the session (plain keys), the user (`user:` keys,
shared by every session of one principal) and the app (`app:` keys, shared by the whole server). `temp:` keys
belong to the call alone and never reach a store.

Ownership nests: an app's users are not another app's users, and a session belongs to one user of one app, so
a session id that turns up under another principal names a different, empty session. A store never shows one
principal another's state, even when a client chooses its own session key.

Concurrency: a store applies a delta against what the call read (`expected`): if any key the call read has
changed since, the delta is refused whole with `StateConflictError` and the caller runs the call again on fresh
state. This is what keeps `user:` and `app:` updates (shared across sessions) and updates from several processes
on one file from being lost; `ToolServer` also serialises the state-using calls of one session, so within one
process a conflict needs two sessions touching the same `user:`/`app:` key at once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from gateway.tools.state import ABSENT, Scope, scope_of

__all__ = ["ABSENT", "StateScope", "StateStore", "encode_delta", "encode_expected"]


@dataclass(frozen=True)
class StateScope:
    """The three owners of one call's state.

    Attributes:
        app_name: The server (app) the call runs in; owns the `app:` keys.
        user_id: The principal making the call; owns the `user:` keys within the app.
        session_id: The MCP session of the call; owns the plain keys within the user.
    """

    app_name: str
    user_id: str
    session_id: str


class StateStore(Protocol):
    """Loads the state of one call and writes back the keys it changed.

    Values must be JSON-serialisable and come back as JSON decodes them (a tuple comes back as a list). Writes
    are key by key, so two calls on one session that change different keys both keep their change; a delta is
    applied atomically, all keys or none. ADK has no delete: a key set to `None` is stored as `None`.
    """

    async def load(self, scope: StateScope) -> dict[str, Any]:
        """The merged state of a call: the session's plain keys, the user's `user:` keys, the app's `app:` keys.

        The values are the caller's own copies: changing them does not change the store.
        """
        ...

    async def apply(
        self, scope: StateScope, delta: Mapping[str, Any], *, expected: Mapping[str, Any] | None = None
    ) -> None:
        """Write every key of `delta` to its owner, skipping `temp:` keys, in one atomic step.

        Args:
            scope: the call's owners.
            delta: the keys the call wrote.
            expected: the keys the call read, each with the value it read (`ABSENT` if there was none); the delta
                is written only if every one of them still holds that value. An empty delta writes and checks
                nothing.

        Raises:
            TypeError: A key is not a string or a value is not JSON-serialisable (the message names the key);
                nothing of the delta is written.
            StateConflictError: a key in `expected` holds another value now; nothing of the delta is written.
        """
        ...

    async def clear_session(self, scope: StateScope) -> None:
        """Forget the session's own keys; the user's and the app's keys stay."""
        ...

    async def forget_idle_sessions(self, app_name: str, idle_since: float) -> int:
        """Forget the own keys of every session of `app_name` not written since `idle_since` (a `time.time()`).

        Returns how many sessions were forgotten. The user's and the app's keys stay.
        """
        ...

    async def aclose(self) -> None:
        """Release the store's resources; calling it again does nothing."""
        ...


def encode_expected(expected: Mapping[str, Any] | None) -> list[tuple[Scope, str, str | None]]:
    """The persistent keys of `expected` as `(scope, key, JSON text or None for ABSENT)`, for store implementations.

    The text is what `encode_delta` would have stored for the value, so a store compares texts.
    """
    encoded: list[tuple[Scope, str, str | None]] = []
    for key, value in (expected or {}).items():
        scope = scope_of(key)
        if scope == "temp":
            continue
        encoded.append((scope, key, None if value is ABSENT else json.dumps(value, allow_nan=False)))
    return encoded


def encode_delta(delta: Mapping[str, Any]) -> list[tuple[Scope, str, str]]:
    """The persistent keys of `delta` as `(scope, key, JSON text)`, for store implementations.

    Every value is encoded before anything is written, so a store can apply the result all or nothing.

    Raises:
        TypeError: A key is not a string, or a value is not JSON-serialisable (not-a-number and infinite
            floats included, which JSON has no words for); the message names the key.
    """
    encoded: list[tuple[Scope, str, str]] = []
    # Callers are not all typed: check the keys rather than trust the annotation.
    for key, value in cast("Mapping[object, Any]", delta).items():
        if not isinstance(key, str):
            raise TypeError(f"State keys must be strings, got {key!r} ({type(key).__name__}).")
        scope = scope_of(key)
        if scope == "temp":
            continue
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise TypeError(
                f"State key {key!r} holds a value that is not JSON-serialisable ({exc}); "
                "store only dicts, lists, strings, numbers, booleans and None, or keep it under a 'temp:' key."
            ) from exc
        encoded.append((scope, key, text))
    return encoded
