"""`JsonStateStore`: the part every `StateStore` here shares, keeping each key's value as JSON text.

`apply` encodes the delta and what the call read once, for all stores, and hands the encoded rows to the store's
`_apply_encoded`; an empty delta reaches no store. Entering a store gives the store; leaving it closes it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from gateway.state.store import StateScope, encode_delta, encode_expected
from gateway.tools.state import Scope

__all__ = ["JsonStateStore"]


class JsonStateStore(ABC):
    """A base for `StateStore` implementations that compare and store values as JSON text."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def apply(
        self, scope: StateScope, delta: Mapping[str, Any], *, expected: Mapping[str, Any] | None = None
    ) -> None:
        """Write the persistent keys of `delta` to their owners if what the call read holds (see `StateStore.apply`)."""
        writes = encode_delta(delta)
        if writes:
            await self._apply_encoded(scope, writes, encode_expected(expected))

    @abstractmethod
    async def _apply_encoded(
        self, scope: StateScope, writes: list[tuple[Scope, str, str]], checks: list[tuple[Scope, str, str | None]]
    ) -> None:
        """Write `writes` (`(scope, key, JSON text)`, never empty) in one atomic step if every check holds.

        Raises:
            StateConflictError: a check's key holds another text now (`None`: a check that it has none); nothing
                is written.
        """

    @abstractmethod
    async def aclose(self) -> None:
        """Release the store's resources; calling it again does nothing."""
