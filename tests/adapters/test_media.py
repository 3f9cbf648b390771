from __future__ import annotations

import dataclasses
import io
import struct
import wave
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.media import Media, sniff_mime_type


def png_bytes() -> bytes:
    """A complete, valid 1x1 grey PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x80")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def wav_bytes() -> bytes:
    """A complete, valid WAV file holding a few silent frames."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(b"\x00\x00" * 8)
    return buffer.getvalue()


KNOWN_SAMPLES = {
    "png": (png_bytes(), "image/png"),
    "jpeg": (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "image/jpeg"),
    "gif87a": (b"GIF87a\x01\x00\x01\x00", "image/gif"),
    "gif89a": (b"GIF89a\x01\x00\x01\x00", "image/gif"),
    "webp": (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
    "bmp": (b"BM" + struct.pack("<I", 58) + b"\x00\x00\x00\x00" + struct.pack("<I", 54), "image/bmp"),
    "wav": (wav_bytes(), "audio/wav"),
    "mp3 with an ID3 tag": (b"ID3\x04\x00\x00\x00\x00\x00\x00", "audio/mpeg"),
    "mp3 frame": (b"\xff\xfb\x90\x44\x00\x00", "audio/mpeg"),
    "ogg": (b"OggS\x00\x02\x00\x00", "audio/ogg"),
    "flac": (b"fLaC\x00\x00\x00\x22", "audio/flac"),
    "pdf": (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "application/pdf"),
}

KNOWN_MIME_TYPES = {mime_type for _, mime_type in KNOWN_SAMPLES.values()} | {"application/octet-stream"}


@pytest.mark.parametrize(("data", "mime_type"), KNOWN_SAMPLES.values(), ids=KNOWN_SAMPLES.keys())
def test_a_known_magic_number_gives_its_media_type(data: bytes, mime_type: str) -> None:
    assert sniff_mime_type(data) == mime_type


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"hello, world",
        b"BMW is a car maker, not a bitmap",
        b"\xff\xf1\x50\x80\x02\x1f\xfc",  # AAC in an ADTS frame: a frame sync, but not MP3's layer bits
        b"RIFF\x24\x00\x00\x00AVI LIST",
        b"\x00" * 32,
        b"\xff",
    ],
    ids=["empty", "text", "text starting with BM", "aac", "avi", "zeros", "one byte"],
)
def test_unrecognised_data_is_an_octet_stream(data: bytes) -> None:
    assert sniff_mime_type(data) == "application/octet-stream"


def test_the_first_bytes_of_a_file_are_enough_to_recognise_it() -> None:
    assert sniff_mime_type(png_bytes()[:8]) == "image/png"
    assert sniff_mime_type(wav_bytes()[:12]) == "audio/wav"


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_give_a_known_media_type_without_raising(data: bytes) -> None:
    assert sniff_mime_type(data) in KNOWN_MIME_TYPES


def test_media_is_a_frozen_value() -> None:
    media = Media(b"abc", "text/plain")

    assert media == Media(b"abc", "text/plain")
    assert hash(media) == hash(Media(b"abc", "text/plain"))
    assert media != Media(b"abc", "application/octet-stream")
    with pytest.raises(dataclasses.FrozenInstanceError):
        media.mime_type = "image/png"  # type: ignore[misc]
