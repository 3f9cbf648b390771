"""`StoredArtifactService`: the `ArtifactService` of a store that survives a restart (SQLite, Redis).

Where a file belongs (its session, or its user for a `user:` name) and the checks on a filename are every
service's (`gateway.tools.artifacts.OwnedArtifacts`); this adds what every store shares, encoding values
(`gateway.artifacts.codec`) and the size limit; a store keeps rows.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

from gateway.artifacts.codec import (
    DEFAULT_MAX_ARTIFACT_BYTES,
    EncodedArtifact,
    decode_artifact,
    decode_metadata,
    encode_artifact,
    encode_metadata,
)
from gateway.tools.artifacts import Artifact, ArtifactVersion, OwnedArtifacts, Owner

__all__ = ["Owner", "StoredArtifactService", "StoredRow"]


@dataclass(frozen=True)
class StoredRow:
    """One version of a file as a store keeps it."""

    version: int
    kind: str
    mime_type: str
    data: bytes
    metadata: str
    create_time: float


class StoredArtifactService(OwnedArtifacts):
    """An `ArtifactService` over a store's rows (see the module docstring).

    Args:
        max_bytes: the largest artifact kept; a larger one is refused with `ArtifactTooLargeError`.
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES) -> None:
        self.max_bytes = max_bytes

    async def _save(self, owner: Owner, filename: str, artifact: Artifact, metadata: dict[str, Any] | None) -> int:
        """Encode and put the next version (see `OwnedArtifacts.save_artifact`).

        Raises:
            TypeError: the value or `custom_metadata` cannot be stored (see `gateway.artifacts.codec`).
            ArtifactTooLargeError: the value is larger than `max_bytes`.
        """
        encoded = encode_artifact(filename, artifact, self.max_bytes)
        return await self._put(owner, filename, encoded, encode_metadata(filename, metadata), time.time())

    async def _describe(self, owner: Owner, filename: str, version: int | None) -> ArtifactVersion | None:
        row = await self._get(owner, filename, version)
        if row is None:
            return None
        return ArtifactVersion(
            row.version, decode_metadata(row.metadata), row.create_time, row.mime_type, len(row.data)
        )

    async def _load(self, owner: Owner, filename: str, version: int | None) -> Artifact | None:
        row = await self._get(owner, filename, version)
        return None if row is None else decode_artifact(row.kind, row.mime_type, row.data)

    async def forget_idle_sessions(self, app_name: str, idle_since: float) -> int:
        """Forget the files of every session of `app_name` that saved none since `idle_since` (a `time.time()`);
        returns how many sessions. Users' `user:` files stay. (The retention sweep of `gateway.state.retention`.)"""
        return await self._forget_idle(app_name, idle_since)

    # --- what a store implements --------------------------------------------------------------------------------

    @abstractmethod
    async def _put(self, owner: Owner, filename: str, encoded: EncodedArtifact, metadata: str, now: float) -> int:
        """Add the next version of `filename` atomically and return its number."""

    @abstractmethod
    async def _get(self, owner: Owner, filename: str, version: int | None) -> StoredRow | None:
        """The row of that version (the latest when None), or None."""

    @abstractmethod
    async def _forget_idle(self, app_name: str, idle_since: float) -> int:
        """Forget the session files of sessions whose newest file is older than `idle_since`."""

    @abstractmethod
    async def aclose(self) -> None:
        """Release the store's resources; calling it again does nothing."""
