"""Artifacts that survive a restart: stores beside the state store (SQLite, Redis), their codec and their URIs.

`artifact_service_for(state_store)` gives the artifact store that lives where the state does; the `ArtifactService`
protocol and the in-memory store are in `gateway.tools.artifacts`.
"""

from gateway.artifacts._stored import StoredArtifactService
from gateway.artifacts.codec import DEFAULT_MAX_ARTIFACT_BYTES, ArtifactTooLargeError
from gateway.artifacts.placement import artifact_service_for
from gateway.artifacts.sqlite_artifacts import SqliteArtifactService
from gateway.artifacts.uri import ARTIFACT_SCHEME, artifact_uri, parse_artifact_uri

__all__ = [
    "ARTIFACT_SCHEME",
    "DEFAULT_MAX_ARTIFACT_BYTES",
    "ArtifactTooLargeError",
    "SqliteArtifactService",
    "StoredArtifactService",
    "artifact_service_for",
    "artifact_uri",
    "parse_artifact_uri",
]
