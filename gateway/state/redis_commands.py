"""`RedisCommands`: the commands of a Redis store (the state store's, the artifact store's) on its one client.

Each command that loses or is refused its connection fails with a `StateStoreUnavailableError` that names the store
and what to check; after `aclose()` (once, shielded, whatever cancels it) every command is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from gateway.errors import StateStoreUnavailableError

__all__ = ["RedisCommands"]


class RedisCommands:
    """Commands on one redis-py asyncio client (see the module docstring).

    Args:
        client: the store's client, closed by `aclose()`.
        unreachable: the errors that mean the server cannot be reached (redis-py's `RedisError`, `OSError`); the
            caller names them, so that only it imports redis and says which extra is missing.
        advice: the sentence that follows the error, saying what to check.
        closed_message: what a command after `aclose()` raises (a `RuntimeError`) with.
    """

    def __init__(
        self, client: Any, *, unreachable: tuple[type[Exception], ...], advice: str, closed_message: str
    ) -> None:
        self._client = client
        self._unreachable = unreachable
        self._advice = advice
        self._closed_message = closed_message
        self._closed = False

    async def run(self, command: Callable[[], Awaitable[Any]], failure: str) -> Any:
        """Await `command()`; an unreachable server raises `StateStoreUnavailableError` led by `failure`."""
        if self._closed:
            raise RuntimeError(self._closed_message)
        try:
            return await command()
        except self._unreachable as exc:
            raise StateStoreUnavailableError(f"{failure}: {exc}. {self._advice}") from exc

    async def aclose(self) -> None:
        """Close the client; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await self._client.aclose()
