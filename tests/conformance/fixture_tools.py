"""The tools the MCP conformance suite's server scenarios call, written with this project's tool API.

`test_server_conformance.py` serves this file with `python -m gateway.cli serve --tools <this file>`; the
suite fixes every name and behaviour here (see `@modelcontextprotocol/conformance` 0.1.16, `conformance list
--server`). Plain functions become `FunctionTool`s; the one tool whose input schema a function signature cannot
express is a small `BaseTool`.

Load it by path (as the server and the test do), never with `from fixture_tools import ...`: pytest would
collect the imported `test_*` functions as tests.
"""

from __future__ import annotations

import io
import json
import struct
import wave
import zlib
from typing import Any, Final

import anyio
from mcp import types

from adapters import FunctionDeclaration, Media
from gateway import BaseTool, ToolContext

__all__ = [
    "json_schema_2020_12_tool",
    "test_audio_content",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "test_embedded_resource",
    "test_error_handling",
    "test_image_content",
    "test_multiple_content_types",
    "test_reconnection",
    "test_sampling",
    "test_simple_text",
    "test_tool_with_logging",
    "test_tool_with_progress",
]

SIMPLE_TEXT: Final = "This is a simple text response for testing."
ERROR_TEXT: Final = "This tool intentionally returns an error for testing"
EMBEDDED_TEXT: Final = "This is an embedded resource content."
LOG_MESSAGES: Final = ("Tool execution started", "Tool processing data", "Tool execution completed")
PROGRESS_STEPS: Final = (0.0, 50.0, 100.0)
PROGRESS_TOTAL: Final = 100.0
STEP_DELAY_SECONDS: Final = 0.05
SAMPLING_MAX_TOKENS: Final = 100
JSON_SCHEMA_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _red_pixel_png() -> bytes:
    """A 1x1 red PNG: 8-bit RGB, one scanline with filter byte 0."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", pixels) + _png_chunk(b"IEND", b"")


def _silent_wav() -> bytes:
    """A tenth of a second of 8 kHz mono 16-bit silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(8000)
        sound.writeframes(b"\x00\x00" * 800)
    return buffer.getvalue()


RED_PIXEL_PNG: Final = _red_pixel_png()
SILENT_WAV: Final = _silent_wav()


def _elicitation_text(result: types.ElicitResult) -> str:
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content, sort_keys=True)}"


# --- content --------------------------------------------------------------------------------------------------


def test_simple_text() -> str:
    """Return a fixed sentence as text."""
    return SIMPLE_TEXT


def test_image_content() -> Media:
    """Return a 1x1 red PNG image."""
    return Media(RED_PIXEL_PNG, "image/png")


def test_audio_content() -> Media:
    """Return a short silent WAV sound."""
    return Media(SILENT_WAV, "audio/wav")


def test_embedded_resource() -> types.EmbeddedResource:
    """Return a text resource embedded in the result."""
    return types.EmbeddedResource(
        resource=types.TextResourceContents(uri="test://embedded-resource", mime_type="text/plain", text=EMBEDDED_TEXT)
    )


def test_multiple_content_types() -> list[types.TextContent | Media | types.EmbeddedResource]:
    """Return text, an image and an embedded JSON resource in one result."""
    resource = types.TextResourceContents(
        uri="test://mixed-content-resource",
        mime_type="application/json",
        text=json.dumps({"test": "data", "value": 123}),
    )
    return [
        types.TextContent(text="Multiple content types test:"),
        Media(RED_PIXEL_PNG, "image/png"),
        types.EmbeddedResource(resource=resource),
    ]


def test_error_handling() -> dict[str, str]:
    """Always fail, with ADK's error dict (published as an `isError` result)."""
    return {"error": ERROR_TEXT}


# --- client features --------------------------------------------------------------------------------------------


async def test_tool_with_logging(tool_context: ToolContext) -> str:
    """Send three info log messages to the client while running."""
    for index, message in enumerate(LOG_MESSAGES):
        if index:
            await anyio.sleep(STEP_DELAY_SECONDS)
        await tool_context.log("info", message, logger="conformance")
    return f"Sent {len(LOG_MESSAGES)} log messages."


async def test_tool_with_progress(tool_context: ToolContext) -> str:
    """Report progress 0, 50 and 100 of 100 while running."""
    for index, progress in enumerate(PROGRESS_STEPS):
        if index:
            await anyio.sleep(STEP_DELAY_SECONDS)
        await tool_context.report_progress(progress, PROGRESS_TOTAL, f"Step {index + 1} of {len(PROGRESS_STEPS)}")
    return f"Reported progress {len(PROGRESS_STEPS)} times."


async def test_sampling(prompt: str, tool_context: ToolContext) -> str:
    """Ask the client's model to answer a prompt.

    Args:
        prompt: the prompt sent to the model.
    """
    result = await tool_context.sample(prompt, max_tokens=SAMPLING_MAX_TOKENS)
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else content.model_dump_json(by_alias=True)
    return f"LLM response: {text}"


async def test_elicitation(message: str, tool_context: ToolContext) -> str:
    """Ask the user for a user name and an email address.

    Args:
        message: the message shown to the user.
    """
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    result = await tool_context.elicit(message, schema)
    return f"User response: action={result.action}, content={json.dumps(result.content, sort_keys=True)}"


async def test_elicitation_sep1034_defaults(tool_context: ToolContext) -> str:
    """Ask the user for fields of every primitive type, each with a default (SEP-1034)."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    }
    return _elicitation_text(await tool_context.elicit("Please review and update the form fields", schema))


async def test_elicitation_sep1330_enums(tool_context: ToolContext) -> str:
    """Ask the user to choose from the five enum shapes of SEP-1330."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
        "required": [],
    }
    return _elicitation_text(await tool_context.elicit("Please choose from the options", schema))


async def test_reconnection() -> str:
    """Answer on the call's own stream.

    The pending `server-sse-polling` scenario calls this and hopes the server closes the SSE stream mid-call
    (SEP-1699); a `ToolContext` has no way to do that, so the answer arrives on the POST stream and the suite
    records that, as INFO, instead of a call to an unknown tool.
    """
    return "Reconnection test completed"


# --- schemas ----------------------------------------------------------------------------------------------------


class JsonSchema2020_12Tool(BaseTool):
    """A tool whose input schema uses 2020-12 keywords verbatim (`$schema`, `$defs`, `$anchor`, `allOf`, `if`)."""

    SCHEMA: Final[dict[str, Any]] = {
        "$schema": JSON_SCHEMA_2020_12,
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        super().__init__(name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features")

    def _get_declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(name=self.name, description=self.description, parameters_json_schema=self.SCHEMA)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        del tool_context
        return {"received": args}


json_schema_2020_12_tool = JsonSchema2020_12Tool()
