"""`SignInRecords`: the pending sign-ins in the server's state store, so that any process can complete one.

A sign-in's callback (or the page where a secret is typed) may reach another process than the one that started it:
another `serve --workers` worker, another replica behind a balancer. So each pending sign-in is also written to the
state store (SQLite, Redis, ... shared by those processes), sealed with the credential keys (it holds the PKCE
verifier and the OAuth client), under a row named by a digest of its `state` (the `state` itself, a bearer secret,
is never a key). Taking it is a compare-and-set on that row (`StateStore.apply` with `expected`), so of any number
of processes presented the same `state`, one takes it, once. Its outcome (done, or why it failed) is written next to
it for the process whose call waits for it; that process deletes the rows. The browser the sign-in is bound to
(a digest of its cookie) is a third row, set by compare-and-set. Rows of sign-ins nobody finished are
swept once they are older than a sign-in can live.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Any, Final

from gateway.errors import StateConflictError
from gateway.state import StateScope, StateStore
from gateway.state.credential_store import CredentialKeys
from gateway.state.store import ABSENT

__all__ = ["SignInRecords"]

logger = logging.getLogger(__name__)

_RECORD: Final = "sign-in"
_OUTCOME: Final = "outcome"
_BROWSER: Final = "browser"
_SWEEP_EVERY: Final = 60.0


class SignInRecords:
    """Pending sign-ins as sealed rows of a state store (see the module docstring).

    Args:
        store: the server's state store.
        keys: the credential keys (they seal the rows).
        app_name: the server's name; its sign-ins live under `<app>#sign-ins`.
        lifetime: seconds a sign-in can live (rows older than twice that are swept).
    """

    def __init__(self, store: StateStore, keys: CredentialKeys, *, app_name: str, lifetime: float) -> None:
        self._store = store
        self._keys = keys
        self._app = f"{app_name}#sign-ins"
        self._lifetime = lifetime
        self._swept = 0.0

    def _scope(self, state: str) -> tuple[StateScope, bytes]:
        digest = hashlib.sha256(state.encode()).hexdigest()
        return StateScope(app_name=self._app, user_id="", session_id=digest), f"{self._app}\x00{digest}".encode()

    async def save(self, state: str, record: dict[str, Any]) -> None:
        """Write a new sign-in's record (and now and then sweep the records nobody finished)."""
        scope, associated = self._scope(state)
        await self._store.apply(scope, {_RECORD: self._keys.seal(json.dumps(record).encode(), associated)})
        now = time.time()
        if now - self._swept > _SWEEP_EVERY:
            self._swept = now
            await self._store.forget_idle_sessions(self._app, now - 2 * self._lifetime)

    async def peek(self, state: str) -> dict[str, Any] | None:
        """The record of a sign-in nobody has taken yet, left in place."""
        return (await self._read(state))[1]

    async def take(self, state: str) -> dict[str, Any] | None:
        """The record of a sign-in nobody has taken yet, taken: no process finds it again."""
        sealed, record = await self._read(state)
        if record is None:
            return None
        try:
            await self._store.apply(self._scope(state)[0], {_RECORD: None}, expected={_RECORD: sealed})
        except StateConflictError:
            return None  # another process took it first
        return record

    async def browser(self, state: str) -> str | None:
        """The digest of the browser cookie the sign-in is bound to, if any (`gateway.server.sign_in.browser`)."""
        if not state:
            return None
        found = (await self._store.load(self._scope(state)[0])).get(_BROWSER)
        return found if isinstance(found, str) else None

    async def bind(self, state: str, digest: str, *, first: bool) -> bool:
        """Bind the sign-in to the browser whose cookie has `digest` (with `first`: only if no browser is bound
        yet, a compare-and-set, so of two browsers opening the link at once one wins); whether it is bound to it."""
        scope = self._scope(state)[0]
        current = await self.browser(state)
        if first and current is not None:
            return current == digest
        try:
            seen = ABSENT if current is None else current
            await self._store.apply(scope, {_BROWSER: digest}, expected={_BROWSER: seen})
        except StateConflictError:
            return await self.browser(state) == digest
        return True

    async def finish(self, state: str, outcome: dict[str, Any]) -> None:
        """Say how a taken sign-in ended (`{"done": true}` or `{"failure": reason}`) for the call waiting for it."""
        await self._store.apply(self._scope(state)[0], {_OUTCOME: outcome})

    async def outcome(self, state: str) -> dict[str, Any] | None:
        """How the sign-in ended, if another process has said so."""
        found = (await self._store.load(self._scope(state)[0])).get(_OUTCOME)
        return found if isinstance(found, dict) else None  # pyright: ignore[reportUnknownVariableType]

    async def forget(self, state: str) -> None:
        """Delete a sign-in's rows (its call no longer waits for it)."""
        await self._store.clear_session(self._scope(state)[0])

    async def _read(self, state: str) -> tuple[str | None, dict[str, Any] | None]:
        if not state:
            return None, None
        scope, associated = self._scope(state)
        sealed = (await self._store.load(scope)).get(_RECORD)
        if not isinstance(sealed, str):
            return None, None
        plaintext = self._keys.open(sealed, associated)
        if plaintext is None:
            logger.warning("A pending sign-in's record does not open with the configured credential keys.")
            return None, None
        return sealed, json.loads(plaintext)
