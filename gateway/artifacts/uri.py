"""The URIs of artifacts as MCP resources: `artifact://<filename>`, `artifact://<filename>?version=N`.

The filename is percent-encoded, except its `/` and `:` (so `user:profile.json` reads as it is). Without a version
the URI names the latest one. A URI names an artifact of the session that reads it: the same URI read in another
session (or by another principal) names that session's file, if it has one.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qs, quote, unquote

__all__ = ["ARTIFACT_SCHEME", "artifact_uri", "parse_artifact_uri"]

ARTIFACT_SCHEME: Final = "artifact"
_PREFIX: Final = f"{ARTIFACT_SCHEME}://"


def artifact_uri(filename: str, version: int | None = None) -> str:
    """The URI of `filename` (at `version`; the latest when None)."""
    uri = _PREFIX + quote(filename, safe="/:")
    return uri if version is None else f"{uri}?version={version}"


def parse_artifact_uri(uri: str) -> tuple[str, int | None] | None:
    """The filename and version an artifact URI names; None for a URI of another scheme or a malformed one."""
    if not uri.startswith(_PREFIX):
        return None
    path, _, query = uri.removeprefix(_PREFIX).partition("?")
    filename = unquote(path)
    if not filename:
        return None
    versions = parse_qs(query).get("version")
    if not versions:
        return filename, None
    try:
        version = int(versions[0])
    except ValueError:
        return None
    return (filename, version) if version >= 0 else None
