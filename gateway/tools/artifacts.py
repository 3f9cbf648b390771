"""The artifact service seam a tool saves files through, and an in-memory implementation.

As in ADK, artifacts are versioned per filename (the first save is version 0) and live in a session, except
that a filename starting with `user:` belongs to the user: every session of that user sees it. Each version
may carry `custom_metadata` (a JSON object), read back with `get_artifact_version`. The stores that survive a
restart (SQLite, Redis) live in `gateway.artifacts`.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypeVar

__all__ = ["Artifact", "ArtifactService", "ArtifactVersion", "InMemoryArtifactService", "OwnedArtifacts", "Owner"]

Artifact: TypeAlias = object
"""Any artifact value (bytes, text or a media object); services store and return it as given."""

_USER_PREFIX = "user:"
"""A filename with this prefix is shared by every session of its user."""

_PATH_SEPARATORS = re.compile(r"[/\\]")

_V = TypeVar("_V")


@dataclass(frozen=True)
class ArtifactVersion:
    """What is known of one version of an artifact (ADK's `ArtifactVersion`, without its storage URI).

    Attributes:
        version: The version number (0 for the first save).
        custom_metadata: What the tool passed to `save_artifact`, or an empty dict.
        create_time: When it was saved (a `time.time()`).
        mime_type: Its media type, when the store knows it (None for an in-memory value of any kind).
        size: Its size in bytes, when the store knows it.
    """

    version: int
    custom_metadata: dict[str, Any] = field(default_factory=dict[str, Any])
    create_time: float = 0.0
    mime_type: str | None = None
    size: int | None = None


class ArtifactService(Protocol):
    """Where a tool's artifacts are kept, keyed by app, user, session and filename."""

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
        """Store `artifact` (and its `custom_metadata`) as the next version of `filename` and return that version
        (0 for the first)."""
        ...

    async def get_artifact_version(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> ArtifactVersion | None:
        """What is known of the given version of `filename` (the latest when `version` is None), or None."""
        ...

    async def load_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Artifact | None:
        """The given version of `filename` (the latest when `version` is None), or None if there is none."""
        ...

    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        """The sorted filenames the session sees: its own and its user's `user:` files."""
        ...

    async def list_versions(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> list[int]:
        """The versions of `filename` in ascending order, empty if it does not exist."""
        ...

    async def delete_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None:
        """Delete every version of `filename`; deleting a missing file does nothing."""
        ...

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Forget every file of a session that ended; its user's `user:` files stay."""
        ...


@dataclass(frozen=True)
class Owner:
    """Who a file belongs to: a session of a user of an app, or (`session_id` empty) the user."""

    app_name: str
    user_id: str
    session_id: str


def owner_of(app_name: str, user_id: str, session_id: str, filename: str) -> Owner:
    """The owner of `filename` saved or read in a session (its user's, for a `user:` name)."""
    check_filename(filename)
    return Owner(app_name, user_id, "" if is_user_file(filename) else session_id)


class OwnedArtifacts(ABC):
    """An `ArtifactService` that keeps each file with its `Owner`: what every service shares (where a file belongs,
    the checks on a filename, what a session lists and what its end forgets) is here once; a subclass keeps the
    versions (`InMemoryArtifactService`, and the stores of `gateway.artifacts`)."""

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
        """Store `artifact` as the next version of `filename` and return that version (0 for the first)."""
        metadata = None if custom_metadata is None else dict(custom_metadata)
        return await self._save(owner_of(app_name, user_id, session_id, filename), filename, artifact, metadata)

    async def get_artifact_version(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> ArtifactVersion | None:
        """What is known of the given version of `filename` (the latest when `version` is None), or None."""
        if version is not None and version < 0:
            return None
        return await self._describe(owner_of(app_name, user_id, session_id, filename), filename, version)

    async def load_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Artifact | None:
        """The given version of `filename` (the latest when `version` is None), or None if there is none.

        A negative `version` is no version at all (None), not an index from the end.
        """
        if version is not None and version < 0:
            return None
        return await self._load(owner_of(app_name, user_id, session_id, filename), filename, version)

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

    # --- what a subclass keeps ----------------------------------------------------------------------------------

    @abstractmethod
    async def _save(self, owner: Owner, filename: str, artifact: Artifact, metadata: dict[str, Any] | None) -> int:
        """Add the next version of `filename` atomically and return its number."""

    @abstractmethod
    async def _describe(self, owner: Owner, filename: str, version: int | None) -> ArtifactVersion | None:
        """What is known of that version (the latest when None; never negative), or None."""

    @abstractmethod
    async def _load(self, owner: Owner, filename: str, version: int | None) -> Artifact | None:
        """That version's value (the latest when None; never negative), or None."""

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


class InMemoryArtifactService(OwnedArtifacts):
    """An `ArtifactService` in a dict, for tests and single-process use; everything is lost on exit.

    Each method does its reads and writes without awaiting in between, so concurrent tasks on one event loop
    never see or hand out the same version twice. It is not thread-safe. After a delete, versions of that
    filename start again at 0, as in ADK's in-memory service.
    """

    def __init__(self) -> None:
        self._files: dict[Owner, dict[str, list[tuple[Artifact, ArtifactVersion]]]] = {}

    async def _save(self, owner: Owner, filename: str, artifact: Artifact, metadata: dict[str, Any] | None) -> int:
        versions = self._files.setdefault(owner, {}).setdefault(filename, [])
        versions.append((artifact, ArtifactVersion(len(versions), metadata or {}, time.time())))
        return len(versions) - 1

    async def _describe(self, owner: Owner, filename: str, version: int | None) -> ArtifactVersion | None:
        kept = _pick(self._kept(owner, filename), version)
        return None if kept is None else kept[1]

    async def _load(self, owner: Owner, filename: str, version: int | None) -> Artifact | None:
        kept = _pick(self._kept(owner, filename), version)
        return None if kept is None else kept[0]

    async def _names(self, owner: Owner) -> list[str]:
        return list(self._files.get(owner, {}))

    async def _versions(self, owner: Owner, filename: str) -> list[int]:
        return list(range(len(self._kept(owner, filename))))

    async def _delete(self, owner: Owner, filename: str) -> None:
        files = self._files.get(owner)
        if files is None:
            return
        files.pop(filename, None)
        if not files:
            del self._files[owner]

    async def _delete_owner(self, owner: Owner) -> None:
        self._files.pop(owner, None)

    def _kept(self, owner: Owner, filename: str) -> list[tuple[Artifact, ArtifactVersion]]:
        return self._files.get(owner, {}).get(filename, [])


def check_filename(filename: str) -> None:
    """Refuse an empty filename or one with a `..` path segment (the message says what to use instead)."""
    _check_filename(filename)


def is_user_file(filename: str) -> bool:
    """Whether `filename` names a file of the user's, which every session of that user sees (a `user:` name)."""
    return filename.startswith(_USER_PREFIX)


def _pick(versions: list[_V], version: int | None) -> _V | None:
    """The given version (the latest for None) of a file's `versions`, oldest first; a negative one is none."""
    if not versions:
        return None
    if version is None:
        return versions[-1]
    return versions[version] if 0 <= version < len(versions) else None


def _check_filename(filename: str) -> None:
    name = filename.removeprefix(_USER_PREFIX)
    if not name:
        raise ValueError(
            f"Artifact filename {filename!r} is empty; "
            "pass a name such as 'report.pdf', or 'user:profile.json' for a user-wide file."
        )
    if ".." in _PATH_SEPARATORS.split(name):
        raise ValueError(
            f"Artifact filename {filename!r} contains a '..' path segment; "
            "use a name without parent-directory references, such as 'reports/q3.pdf'."
        )
