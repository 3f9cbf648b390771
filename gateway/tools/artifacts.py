"""The artifact service seam a tool saves files through, and an in-memory implementation.

As in ADK, artifacts are versioned per filename (the first save is version 0) and live in a session, except
that a filename starting with `user:` belongs to the user: every session of that user sees it.
"""

from __future__ import annotations

import re
from typing import Protocol, TypeAlias

__all__ = ["Artifact", "ArtifactService", "InMemoryArtifactService"]

Artifact: TypeAlias = object
"""Any artifact value (bytes, text or a media object); services store and return it as given."""

_USER_PREFIX = "user:"
"""A filename with this prefix is shared by every session of its user."""

_PATH_SEPARATORS = re.compile(r"[/\\]")


class ArtifactService(Protocol):
    """Where a tool's artifacts are kept, keyed by app, user, session and filename."""

    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Artifact
    ) -> int:
        """Store `artifact` as the next version of `filename` and return that version (0 for the first)."""
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

    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Artifact
    ) -> int:
        """Store `artifact` as the next version of `filename` and return that version (0 for the first)."""
        namespace = _namespace(app_name, user_id, session_id, filename)
        versions = self._files.setdefault(namespace, {}).setdefault(filename, [])
        versions.append(artifact)
        return len(versions) - 1

    async def load_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Artifact | None:
        """The given version of `filename` (the latest when `version` is None), or None if there is none.

        A negative `version` is no version at all (None), not an index from the end.
        """
        versions = self._versions(app_name, user_id, session_id, filename)
        if not versions:
            return None
        if version is None:
            return versions[-1]
        if 0 <= version < len(versions):
            return versions[version]
        return None

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
        if not files:
            del self._files[namespace]

    def _versions(self, app_name: str, user_id: str, session_id: str, filename: str) -> list[Artifact]:
        namespace = _namespace(app_name, user_id, session_id, filename)
        return self._files.get(namespace, {}).get(filename, [])


def _namespace(app_name: str, user_id: str, session_id: str, filename: str) -> _Namespace:
    _check_filename(filename)
    if filename.startswith(_USER_PREFIX):
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
