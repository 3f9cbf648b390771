"""The artifact service seam a tool saves files through, and an in-memory implementation.

As in ADK, artifacts are versioned per filename (the first save is version 0) and live in a session, except
that a filename starting with `user:` belongs to the user: every session of that user sees it. Each version
may carry `custom_metadata` (a JSON object), read back with `get_artifact_version`. The stores that survive a
restart (SQLite, Redis) live in `gateway.artifacts`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypeVar

__all__ = ["Artifact", "ArtifactService", "ArtifactVersion", "InMemoryArtifactService"]

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


# A user's shared files are kept under session None.
_Namespace: TypeAlias = tuple[str, str, str | None]


class InMemoryArtifactService:
    """An `ArtifactService` in a dict, for tests and single-process use; everything is lost on exit.

    Each method does its reads and writes without awaiting in between, so concurrent tasks on one event loop
    never see or hand out the same version twice. It is not thread-safe. After a delete, versions of that
    filename start again at 0, as in ADK's in-memory service.
    """

    def __init__(self) -> None:
        self._files: dict[_Namespace, dict[str, list[Artifact]]] = {}
        self._versions_of: dict[tuple[_Namespace, str], list[ArtifactVersion]] = {}

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
        namespace = _namespace(app_name, user_id, session_id, filename)
        versions = self._files.setdefault(namespace, {}).setdefault(filename, [])
        versions.append(artifact)
        described = ArtifactVersion(len(versions) - 1, dict(custom_metadata or {}), time.time())
        self._versions_of.setdefault((namespace, filename), []).append(described)
        return len(versions) - 1

    async def get_artifact_version(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> ArtifactVersion | None:
        """What is known of the given version of `filename` (the latest when `version` is None), or None."""
        return _pick(
            self._versions_of.get((_namespace(app_name, user_id, session_id, filename), filename), []), version
        )

    async def load_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Artifact | None:
        """The given version of `filename` (the latest when `version` is None), or None if there is none.

        A negative `version` is no version at all (None), not an index from the end.
        """
        return _pick(self._versions(app_name, user_id, session_id, filename), version)

    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        """The sorted filenames the session sees: its own and its user's `user:` files."""
        session_files = self._files.get((app_name, user_id, session_id), {})
        user_files = self._files.get((app_name, user_id, None), {})
        return sorted({*session_files, *user_files})

    async def list_versions(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> list[int]:
        """The versions of `filename` in ascending order, empty if it does not exist."""
        return list(range(len(self._versions(app_name, user_id, session_id, filename))))

    async def delete_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None:
        """Delete every version of `filename`; deleting a missing file does nothing."""
        namespace = _namespace(app_name, user_id, session_id, filename)
        files = self._files.get(namespace)
        if files is None:
            return
        files.pop(filename, None)
        self._versions_of.pop((namespace, filename), None)
        if not files:
            del self._files[namespace]

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Forget every file of a session that ended; its user's `user:` files stay."""
        namespace = (app_name, user_id, session_id)
        for filename in self._files.pop(namespace, {}):
            self._versions_of.pop((namespace, filename), None)

    def _versions(self, app_name: str, user_id: str, session_id: str, filename: str) -> list[Artifact]:
        namespace = _namespace(app_name, user_id, session_id, filename)
        return self._files.get(namespace, {}).get(filename, [])


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


def _namespace(app_name: str, user_id: str, session_id: str, filename: str) -> _Namespace:
    _check_filename(filename)
    if is_user_file(filename):
        return (app_name, user_id, None)
    return (app_name, user_id, session_id)


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
