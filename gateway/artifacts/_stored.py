"""`StoredArtifactService`: the `ArtifactService` of a store that survives a restart (SQLite, Redis).

It owns what every store shares: where a file belongs (its session, or its user for a `user:` name), the checks
on a filename, encoding values (`gateway.artifacts.codec`) and the size limit; a store keeps rows.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
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
from gateway.tools.artifacts import Artifact, ArtifactVersion, check_filename, is_user_file

__all__ = ["Owner", "StoredArtifactService", "StoredRow"]


@dataclass(frozen=True)
class Owner:
    """Who a file belongs to: a session of a user of an app, or (`session_id` empty) the user."""

    app_name: str
    user_id: str
    session_id: str


@dataclass(frozen=True)
class StoredRow:
    """One version of a file as a store keeps it."""

    version: int
    kind: str
    mime_type: str
    data: bytes
    metadata: str
    create_time: float


def owner_of(app_name: str, user_id: str, session_id: str, filename: str) -> Owner:
    """The owner of `filename` saved or read in a session (its user's, for a `user:` name)."""
    check_filename(filename)
    return Owner(app_name, user_id, "" if is_user_file(filename) else session_id)


class StoredArtifactService(ABC):
    """An `ArtifactService` over a store's rows (see the module docstring).

    Args:
        max_bytes: the largest artifact kept; a larger one is refused with `ArtifactTooLargeError`.
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES) -> None:
        self.max_bytes = max_bytes

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        filename: str,
        artifact: Artifact,
        custom_metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Store `artifact` as the next version of `filename` and return that version (0 for the first).

        Raises:
            TypeError: the value or `custom_metadata` cannot be stored (see `gateway.artifacts.codec`).
            ArtifactTooLargeError: the value is larger than `max_bytes`.
        """
        owner = owner_of(app_name, user_id, session_id, filename)
        encoded = encode_artifact(filename, artifact, self.max_bytes)
        metadata = encode_metadata(filename, None if custom_metadata is None else dict(custom_metadata))
        return await self._put(owner, filename, encoded, metadata, time.time())

    async def load_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Artifact | None:
        """The given version of `filename` (the latest when `version` is None), or None if there is none."""
        row = await self._row(app_name, user_id, session_id, filename, version)
        return None if row is None else decode_artifact(row.kind, row.mime_type, row.data)

    async def get_artifact_version(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> ArtifactVersion | None:
        """What is known of the given version of `filename` (the latest when `version` is None), or None."""
        row = await self._row(app_name, user_id, session_id, filename, version)
        if row is None:
            return None
        return ArtifactVersion(
            row.version, decode_metadata(row.metadata), row.create_time, row.mime_type, len(row.data)
        )

    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        """The sorted filenames the session sees: its own and its user's `user:` files."""
        own = await self._names(Owner(app_name, user_id, session_id))
        shared = await self._names(Owner(app_name, user_id, "")) if session_id else []
        return sorted({*own, *(name for name in shared if is_user_file(name))})

    async def list_versions(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> list[int]:
        """The versions of `filename` in ascending order, empty if it does not exist."""
        return await self._versions(owner_of(app_name, user_id, session_id, filename), filename)

    async def delete_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None:
        """Delete every version of `filename`; deleting a missing file does nothing."""
        await self._delete(owner_of(app_name, user_id, session_id, filename), filename)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Forget every file of a session that ended; its user's `user:` files stay."""
        if session_id:
            await self._delete_owner(Owner(app_name, user_id, session_id))

    async def forget_idle_sessions(self, app_name: str, idle_since: float) -> int:
        """Forget the files of every session of `app_name` that saved none since `idle_since` (a `time.time()`);
        returns how many sessions. Users' `user:` files stay. (The retention sweep of `gateway.state.retention`.)"""
        return await self._forget_idle(app_name, idle_since)

    async def _row(
        self, app_name: str, user_id: str, session_id: str, filename: str, version: int | None
    ) -> StoredRow | None:
        if version is not None and version < 0:
            return None
        return await self._get(owner_of(app_name, user_id, session_id, filename), filename, version)

    # --- what a store implements --------------------------------------------------------------------------------

    @abstractmethod
    async def _put(self, owner: Owner, filename: str, encoded: EncodedArtifact, metadata: str, now: float) -> int:
        """Add the next version of `filename` atomically and return its number."""

    @abstractmethod
    async def _get(self, owner: Owner, filename: str, version: int | None) -> StoredRow | None:
        """The row of that version (the latest when None), or None."""

    @abstractmethod
    async def _names(self, owner: Owner) -> list[str]:
        """The filenames `owner` has."""

    @abstractmethod
    async def _versions(self, owner: Owner, filename: str) -> list[int]:
        """The versions of `filename`, ascending."""

    @abstractmethod
    async def _delete(self, owner: Owner, filename: str) -> None:
        """Forget every version of `filename`."""

    @abstractmethod
    async def _delete_owner(self, owner: Owner) -> None:
        """Forget every file of `owner`."""

    @abstractmethod
    async def _forget_idle(self, app_name: str, idle_since: float) -> int:
        """Forget the session files of sessions whose newest file is older than `idle_since`."""

    @abstractmethod
    async def aclose(self) -> None:
        """Release the store's resources; calling it again does nothing."""
