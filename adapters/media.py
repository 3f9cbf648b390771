"""The `Media` value: binary data a tool returns, and how its MIME type is recognised."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Media", "sniff_mime_type"]

_OCTET_STREAM = "application/octet-stream"

# Signatures that are a fixed prefix of the data. Checked in order; none is a prefix of another.
_PREFIXES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"ID3", "audio/mpeg"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"%PDF-", "application/pdf"),
)

# RIFF containers name their format at offset 8.
_RIFF_FORMATS: dict[bytes, str] = {b"WEBP": "image/webp", b"WAVE": "audio/wav"}


@dataclass(frozen=True)
class Media:
    """A binary value a tool returns: an image, a sound, a file.

    Attributes:
        data: The raw bytes.
        mime_type: The IANA media type of `data`, such as `"image/png"`. It decides how the value travels:
            `image/*` as MCP image content, `audio/*` as audio content, anything else as an embedded blob
            resource.
    """

    data: bytes
    mime_type: str


def sniff_mime_type(data: bytes) -> str:
    """Recognise the media type of `data` from its magic number.

    Args:
        data: The raw bytes, or at least their first few dozen.

    Returns:
        The media type of a PNG, JPEG, GIF, WebP or BMP image, a WAV, MP3, Ogg or FLAC sound, or a PDF
        document; `"application/octet-stream"` for anything else.
    """
    for prefix, mime_type in _PREFIXES:
        if data.startswith(prefix):
            return mime_type
    if data.startswith(b"RIFF") and data[8:12] in _RIFF_FORMATS:
        return _RIFF_FORMATS[data[8:12]]
    if _is_bmp(data):
        return "image/bmp"
    if _is_mpeg_audio_frame(data):
        return "audio/mpeg"
    return _OCTET_STREAM


def _is_bmp(data: bytes) -> bool:
    # "BM" alone would also match text; the 14-byte file header has four reserved bytes that are zero.
    return data.startswith(b"BM") and len(data) >= 14 and data[6:10] == b"\x00\x00\x00\x00"


def _is_mpeg_audio_frame(data: bytes) -> bool:
    # An MP3 without an ID3 tag starts with an 11-bit frame sync. Layer bits 00 are reserved in MPEG audio
    # but used by AAC's ADTS header, so they are not MP3.
    return len(data) >= 2 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0 and data[1] & 0x06 != 0
