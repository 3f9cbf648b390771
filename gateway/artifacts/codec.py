"""How an artifact value is kept in a store: its kind, its media type and its bytes, within a size limit.

A stored artifact comes back as the kind of value it was saved as: `str` (text), `bytes`, `adapters.Media` (bytes
with a media type), or JSON (a dict, list, number, bool or None). Anything else is refused with a `TypeError`
saying what to save instead. A value over the size limit is refused with `ArtifactTooLargeError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from adapters import Media

__all__ = [
    "DEFAULT_MAX_ARTIFACT_BYTES",
    "ArtifactTooLargeError",
    "EncodedArtifact",
    "decode_artifact",
    "decode_metadata",
    "encode_artifact",
    "encode_metadata",
]

DEFAULT_MAX_ARTIFACT_BYTES: Final = 10 * 1024 * 1024
"""The largest artifact a store keeps by default (10 MiB); `maxArtifactBytes` in the config changes it."""

Kind = Literal["text", "bytes", "media", "json"]
_OCTETS: Final = "application/octet-stream"


class ArtifactTooLargeError(ValueError):
    """An artifact is larger than the store's limit (`maxArtifactBytes`)."""


@dataclass(frozen=True)
class EncodedArtifact:
    """An artifact as a store keeps it."""

    kind: Kind
    mime_type: str
    data: bytes


def encode_artifact(filename: str, artifact: object, max_bytes: int) -> EncodedArtifact:
    """`artifact` as a store keeps it.

    Raises:
        TypeError: the value is none of the kinds a store keeps.
        ArtifactTooLargeError: its bytes are more than `max_bytes`.
    """
    if isinstance(artifact, str):
        encoded = EncodedArtifact("text", "text/plain", artifact.encode())
    elif isinstance(artifact, bytes | bytearray):
        encoded = EncodedArtifact("bytes", _OCTETS, bytes(artifact))
    elif isinstance(artifact, Media):
        encoded = EncodedArtifact("media", artifact.mime_type or _OCTETS, artifact.data)
    else:
        try:
            text = json.dumps(artifact, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"Artifact {filename!r} is a {type(artifact).__name__}, which a store cannot keep: save text (str), "
                "bytes, an adapters.Media (bytes with a media type) or a JSON value."
            ) from exc
        encoded = EncodedArtifact("json", "application/json", text.encode())
    if len(encoded.data) > max_bytes:
        raise ArtifactTooLargeError(
            f"Artifact {filename!r} is {len(encoded.data)} bytes, more than the limit of {max_bytes} bytes: save a "
            "smaller file, or raise the limit (maxArtifactBytes in the gateway config)."
        )
    return encoded


def decode_artifact(kind: str, mime_type: str, data: bytes) -> object:
    """The value a stored artifact was saved as."""
    if kind == "text":
        return data.decode()
    if kind == "bytes":
        return data
    if kind == "json":
        return json.loads(data)
    return Media(data=data, mime_type=mime_type)


def encode_metadata(filename: str, custom_metadata: object) -> str:
    """`custom_metadata` as JSON text (an object; None is an empty one).

    Raises:
        TypeError: it is not a JSON object.
    """
    if custom_metadata is None:
        return "{}"
    if not isinstance(custom_metadata, dict):
        raise TypeError(
            f"custom_metadata of artifact {filename!r} must be a dict, not {type(custom_metadata).__name__}."
        )
    try:
        return json.dumps(custom_metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"custom_metadata of artifact {filename!r} is not JSON-serialisable ({exc}).") from exc


def decode_metadata(text: str) -> dict[str, Any]:
    """The custom metadata stored as `text`."""
    value: Any = json.loads(text)
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}
