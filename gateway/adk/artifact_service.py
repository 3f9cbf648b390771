"""Artifacts across the ADK bridge, both ways: google-adk's artifact service over ours, and ours over ADK's.

Served, a google-adk tool or agent gets `AdkArtifactService`, a real google-adk `BaseArtifactService` over the
server's own artifact store, so what it saves is the MCP session's (its resources, its `resource_link`s). Lent to a
google-adk Runner, our tool gets `RunnerArtifacts`, our `ArtifactService` over the ADK call's context, so it saves
into the Runner's own artifact service and ADK records the `artifact_delta` as for its own tools.

A genai `Part` with text is our `str`; one with inline data is our `adapters.Media`. Our bytes and JSON values go to
ADK as inline data (`application/octet-stream`, `application/json`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

from google.adk.artifacts.base_artifact_service import ArtifactVersion as AdkArtifactVersion
from google.adk.artifacts.base_artifact_service import BaseArtifactService, ensure_part
from google.adk.tools.tool_context import ToolContext as AdkToolContext
from google.genai import types as genai_types

from adapters import Media
from gateway.artifacts.uri import artifact_uri
from gateway.errors import ServiceNotConfiguredError
from gateway.tools.artifacts import Artifact, ArtifactService, ArtifactVersion

_T = TypeVar("_T")

__all__ = ["AdkArtifactService", "RunnerArtifacts", "artifact_from_part", "artifact_to_part"]

_NOT_INITIALIZED = (
    "Artifact service is not initialized: the google-adk Runner this tool runs in has none. Give the Runner an "
    "artifact_service (google.adk.artifacts.InMemoryArtifactService, or GcsArtifactService)."
)


def artifact_from_part(filename: str, part: genai_types.Part) -> Artifact:
    """Our value of an ADK artifact part: its text, or its inline data as `Media`.

    Raises:
        ValueError: the part holds neither (a `file_data` reference, say), which our stores cannot keep.
    """
    if part.text is not None:
        return part.text
    blob = part.inline_data
    if blob is not None and blob.data is not None:
        return Media(data=blob.data, mime_type=blob.mime_type or "application/octet-stream")
    raise ValueError(
        f"Artifact {filename!r} is a part without text or inline data; save its bytes (Part.from_bytes) or its text."
    )


def artifact_to_part(value: Artifact) -> genai_types.Part:
    """An ADK artifact part for one of our values."""
    if isinstance(value, str):
        return genai_types.Part(text=value)
    if isinstance(value, Media):
        return genai_types.Part.from_bytes(data=value.data, mime_type=value.mime_type)
    if isinstance(value, bytes | bytearray):
        return genai_types.Part.from_bytes(data=bytes(value), mime_type="application/octet-stream")
    return genai_types.Part.from_bytes(data=json.dumps(value, default=str).encode(), mime_type="application/json")


def _adk_version(filename: str, described: ArtifactVersion) -> AdkArtifactVersion:
    return AdkArtifactVersion(
        version=described.version,
        canonical_uri=artifact_uri(filename, described.version),
        custom_metadata=described.custom_metadata,
        create_time=described.create_time,
        mime_type=described.mime_type,
    )


class AdkArtifactService(BaseArtifactService):
    """google-adk's `BaseArtifactService` over one of our `ArtifactService`s (see the module docstring).

    Args:
        service: ours (the server's); None until `bind` (an agent's Runner is built before any call).
        app_name: the app whose files these are (the server's name), whatever app name ADK passes (an agent's
            Runner names its own app); None keeps ADK's.
    """

    def __init__(self, service: ArtifactService | None = None, *, app_name: str | None = None) -> None:
        self._service = service
        self._app_name = app_name

    def bind(self, service: ArtifactService | None, app_name: str) -> None:
        """Use `service` for the files of `app_name` from now on."""
        self._service, self._app_name = service, app_name

    def _ours(self) -> ArtifactService:
        if self._service is None:
            raise ValueError("Artifact service is not initialized: the MCP server serving this tool has none.")
        return self._service

    def _where(self, app_name: str, user_id: str, session_id: str | None) -> dict[str, str]:
        # ADK's session None is the user's own files: ours keep them under an empty session.
        return {"app_name": self._app_name or app_name, "user_id": user_id, "session_id": session_id or ""}

    async def save_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        artifact: genai_types.Part | dict[str, Any],
        session_id: str | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> int:
        value = artifact_from_part(filename, ensure_part(artifact))
        return await self._ours().save_artifact(
            **self._where(app_name, user_id, session_id),
            filename=filename,
            artifact=value,
            custom_metadata=custom_metadata,
        )

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> genai_types.Part | None:
        where = self._where(app_name, user_id, session_id)
        value = await self._ours().load_artifact(**where, filename=filename, version=version)
        return None if value is None else artifact_to_part(value)

    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str | None = None) -> list[str]:
        return await self._ours().list_artifact_keys(**self._where(app_name, user_id, session_id))

    async def delete_artifact(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> None:
        await self._ours().delete_artifact(**self._where(app_name, user_id, session_id), filename=filename)

    async def list_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[int]:
        return await self._ours().list_versions(**self._where(app_name, user_id, session_id), filename=filename)

    async def list_artifact_versions(
        self, *, app_name: str, user_id: str, filename: str, session_id: str | None = None
    ) -> list[AdkArtifactVersion]:
        where = self._where(app_name, user_id, session_id)
        found: list[AdkArtifactVersion] = []
        for version in await self._ours().list_versions(**where, filename=filename):
            described = await self._ours().get_artifact_version(**where, filename=filename, version=version)
            if described is not None:
                found.append(_adk_version(filename, described))
        return found

    async def get_artifact_version(
        self,
        *,
        app_name: str,
        user_id: str,
        filename: str,
        session_id: str | None = None,
        version: int | None = None,
    ) -> AdkArtifactVersion | None:
        where = self._where(app_name, user_id, session_id)
        described = await self._ours().get_artifact_version(**where, filename=filename, version=version)
        return None if described is None else _adk_version(filename, described)


class RunnerArtifacts:
    """Our `ArtifactService` over one ADK call's context: the Runner's own artifact service (see the module docstring).

    The call's app, user and session are ADK's; the names passed in are ignored. ADK's context offers no
    `list_versions` or `delete_artifact`: they answer from `get_artifact_version`, and refuse.
    """

    def __init__(self, adk_context: AdkToolContext) -> None:
        self._adk = adk_context

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
        del app_name, user_id, session_id
        metadata = None if custom_metadata is None else dict(custom_metadata)
        return await self._call(self._adk.save_artifact(filename, artifact_to_part(artifact), metadata))

    async def load_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> Artifact | None:
        del app_name, user_id, session_id
        part = await self._call(self._adk.load_artifact(filename, version))
        return None if part is None else artifact_from_part(filename, part)

    async def get_artifact_version(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, version: int | None = None
    ) -> ArtifactVersion | None:
        del app_name, user_id, session_id
        described = await self._call(self._adk.get_artifact_version(filename, version))
        if described is None:
            return None
        return ArtifactVersion(
            described.version, dict(described.custom_metadata), described.create_time, described.mime_type
        )

    async def list_artifact_keys(self, *, app_name: str, user_id: str, session_id: str) -> list[str]:
        del app_name, user_id, session_id
        return await self._call(self._adk.list_artifacts())

    async def list_versions(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> list[int]:
        latest = await self.get_artifact_version(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=filename
        )
        return [] if latest is None else list(range(latest.version + 1))

    async def delete_artifact(self, *, app_name: str, user_id: str, session_id: str, filename: str) -> None:
        del app_name, user_id, session_id
        raise ServiceNotConfiguredError(
            f"Cannot delete artifact {filename!r}: a tool an ADK agent calls has no delete in ADK's ToolContext."
        )

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        del app_name, user_id, session_id  # the Runner's sessions are ADK's to end

    async def _call(self, pending: Awaitable[_T]) -> _T:
        try:
            return await pending
        except ValueError as exc:
            if "Artifact service is not initialized" in str(exc):
                raise ServiceNotConfiguredError(_NOT_INITIALIZED) from exc
            raise
