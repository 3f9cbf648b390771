"""An upstream MCP server, written with the SDK's `MCPServer`, that serves the conformance suite's whole contract.

`test_gateway_conformance.py` puts it behind the gateway (`"prefix": ""`) and runs the suite's server scenarios
against the gateway, so every name, text and behaviour here is fixed by `@modelcontextprotocol/conformance`
0.1.16 (`conformance list --server`); the tool texts are those of `fixture_tools.py`.

    python tests/conformance/fixture_upstream.py stdio [--push]
    python tests/conformance/fixture_upstream.py http PORT [--push]     # http://127.0.0.1:PORT/mcp

It serves both protocol eras. Elicitation and sampling go through `Resolve`, so a handshake-era client gets an
`elicitation/create` / `sampling/createMessage` request in the middle of the call and a 2026-07-28 client gets an
`InputRequiredResult`. With `--push` they are pushed instead (`ctx.elicit`, `ctx.session.create_message`), as
most servers written before 2026-07-28 do: only a handshake-era session can answer them.

`MCPServer` has no handlers for the handshake-era `resources/subscribe`, `resources/unsubscribe` and
`logging/setLevel`; a server middleware serves them (and advertises them in the `initialize` result) for
handshake-era sessions only.

Depends on nothing but the `mcp` package: it stands for a third-party server. Load it by path, never with
`from fixture_upstream import ...`: pytest would collect the imported `test_*` functions as tests.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import io
import json
import struct
import sys
import warnings
import wave
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Final, Literal

import anyio
from mcp import MCPDeprecationWarning, types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve, Sample, UserMessage
from mcp.server.mcpserver.tools import Tool
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

__all__ = ["SERVER_NAME", "build_server", "main"]

SERVER_NAME: Final = "conformance-upstream"

# --- texts (tools: the same as fixture_tools.py) -----------------------------------------------------------------

SIMPLE_TEXT: Final = "This is a simple text response for testing."
ERROR_TEXT: Final = "This tool intentionally returns an error for testing"
EMBEDDED_TEXT: Final = "This is an embedded resource content."
LOG_MESSAGES: Final = ("Tool execution started", "Tool processing data", "Tool execution completed")
PROGRESS_STEPS: Final = (0.0, 50.0, 100.0)
PROGRESS_TOTAL: Final = 100.0
STEP_DELAY_SECONDS: Final = 0.05
SAMPLING_MAX_TOKENS: Final = 100
JSON_SCHEMA_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"
RECONNECTION_TEXT: Final = "Reconnection test completed"
RECONNECT_WAIT_SECONDS: Final = 0.2
RETRY_INTERVAL_MS: Final = 100

STATIC_TEXT: Final = "This is the content of the static text resource."
WATCHED_TEXT: Final = "Watched resource content"
SIMPLE_PROMPT_TEXT: Final = "This is a simple prompt for testing."
PROMPT_RESOURCE_TEXT: Final = "Embedded resource content for testing."
ARG1_COMPLETIONS: Final = ("test", "testing", "tested", "value1", "value2")

JSON_SCHEMA_TOOL_SCHEMA: Final[dict[str, Any]] = {
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
"""SEP-1613 and SEP-2106: 2020-12 keywords a gateway must not drop (composition, conditionals, `$anchor`)."""


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


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _image() -> types.ImageContent:
    return types.ImageContent(data=_b64(RED_PIXEL_PNG), mime_type="image/png")


# --- content tools --------------------------------------------------------------------------------------------


def test_simple_text() -> str:
    """Return a fixed sentence as text."""
    return SIMPLE_TEXT


def test_image_content() -> types.ImageContent:
    """Return a 1x1 red PNG image."""
    return _image()


def test_audio_content() -> types.AudioContent:
    """Return a short silent WAV sound."""
    return types.AudioContent(data=_b64(SILENT_WAV), mime_type="audio/wav")


def test_embedded_resource() -> types.EmbeddedResource:
    """Return a text resource embedded in the result."""
    return types.EmbeddedResource(
        resource=types.TextResourceContents(uri="test://embedded-resource", mime_type="text/plain", text=EMBEDDED_TEXT)
    )


def test_multiple_content_types() -> list[types.ContentBlock]:
    """Return text, an image and an embedded JSON resource in one result."""
    resource = types.TextResourceContents(
        uri="test://mixed-content-resource",
        mime_type="application/json",
        text=json.dumps({"test": "data", "value": 123}),
    )
    return [types.TextContent(text="Multiple content types test:"), _image(), types.EmbeddedResource(resource=resource)]


def test_error_handling() -> types.CallToolResult:
    """Always fail, with an `isError` result carrying exactly the error text."""
    return types.CallToolResult(content=[types.TextContent(text=ERROR_TEXT)], is_error=True)


# --- client-feature tools --------------------------------------------------------------------------------------


async def test_tool_with_logging(ctx: Context) -> str:
    """Send three info log messages to the client while running."""
    for index, message in enumerate(LOG_MESSAGES):
        if index:
            await anyio.sleep(STEP_DELAY_SECONDS)
        await ctx.log("info", message, logger_name="conformance")  # pyright: ignore[reportDeprecated] - the contract
    return f"Sent {len(LOG_MESSAGES)} log messages."


async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress 0, 50 and 100 of 100 while running."""
    for index, progress in enumerate(PROGRESS_STEPS):
        if index:
            await anyio.sleep(STEP_DELAY_SECONDS)
        await ctx.report_progress(progress, PROGRESS_TOTAL, f"Step {index + 1} of {len(PROGRESS_STEPS)}")
    return f"Reported progress {len(PROGRESS_STEPS)} times."


async def ask_model(prompt: str) -> Sample:
    """The sampling request of `test_sampling` (a resolver: it sees the tool's `prompt` argument)."""
    message = types.SamplingMessage(role="user", content=types.TextContent(text=prompt))
    return Sample([message], max_tokens=SAMPLING_MAX_TOKENS)


async def test_sampling(
    prompt: Annotated[str, Field(description="the prompt sent to the model")],
    answer: Annotated[types.CreateMessageResult, Resolve(ask_model)],
) -> str:
    """Ask the client's model to answer a prompt."""
    del prompt
    content = answer.content
    text = content.text if isinstance(content, types.TextContent) else content.model_dump_json(by_alias=True)
    return f"LLM response: {text}"


class UserInfo(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


class Defaults(BaseModel):
    """SEP-1034: every primitive type, each with a default."""

    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: Literal["active", "inactive", "pending"] = Field(default="active", description="User status")
    verified: bool = Field(default=True, description="Verification status")


class Enums(BaseModel):
    """SEP-1330: the five enum shapes, all optional (the camelCase field names are the suite's)."""

    untitledSingle: Literal["option1", "option2", "option3"] | None = None
    titledSingle: str | None = Field(
        default=None,
        json_schema_extra={
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ]
        },
    )
    legacyEnum: Literal["opt1", "opt2", "opt3"] | None = Field(
        default=None, json_schema_extra={"enumNames": ["Option One", "Option Two", "Option Three"]}
    )
    untitledMulti: list[Literal["option1", "option2", "option3"]] | None = None
    titledMulti: list[Literal["value1", "value2", "value3"]] | None = Field(
        default=None,
        json_schema_extra={
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            }
        },
    )


def _outcome(outcome: ElicitationResult[Any]) -> tuple[str, str]:
    """The action and the accepted content (JSON, keys sorted) of an elicitation."""
    if outcome.action == "accept":
        return outcome.action, json.dumps(outcome.data.model_dump(mode="json"), sort_keys=True)
    return outcome.action, "null"


async def ask_user(message: str) -> Elicit[UserInfo]:
    """The elicitation of `test_elicitation` (a resolver: it sees the tool's `message` argument)."""
    return Elicit(message, UserInfo)


async def test_elicitation(
    message: Annotated[str, Field(description="the message shown to the user")],
    answer: Annotated[ElicitationResult[UserInfo], Resolve(ask_user)],
) -> str:
    """Ask the user for a user name and an email address."""
    del message
    action, content = _outcome(answer)
    return f"User response: action={action}, content={content}"


async def ask_defaults() -> Elicit[Defaults]:
    return Elicit("Please review and update the form fields", Defaults)


async def test_elicitation_sep1034_defaults(
    answer: Annotated[ElicitationResult[Defaults], Resolve(ask_defaults)],
) -> str:
    """Ask the user for fields of every primitive type, each with a default (SEP-1034)."""
    action, content = _outcome(answer)
    return f"Elicitation completed: action={action}, content={content}"


async def ask_enums() -> Elicit[Enums]:
    return Elicit("Please choose from the options", Enums)


async def test_elicitation_sep1330_enums(answer: Annotated[ElicitationResult[Enums], Resolve(ask_enums)]) -> str:
    """Ask the user to choose from the five enum shapes of SEP-1330."""
    action, content = _outcome(answer)
    return f"Elicitation completed: action={action}, content={content}"


async def test_reconnection(ctx: Context) -> str:
    """Close the call's SSE stream mid-call (SEP-1699), then answer: the client resumes with `Last-Event-ID`.

    Only handshake-era streamable HTTP with an event store has such a stream; elsewhere this just answers.
    """
    await ctx.close_sse_stream()
    await anyio.sleep(RECONNECT_WAIT_SECONDS)
    return RECONNECTION_TEXT


async def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> dict[str, Any]:
    """Tool with JSON Schema 2020-12 features"""
    given = {"name": name, "address": address, "contactMethod": contactMethod, "phone": phone, "email": email}
    return {"received": {key: value for key, value in given.items() if value is not None}}


# --- the same four tools, asking with push requests (`--push`) ------------------------------------------------


async def push_sampling(prompt: Annotated[str, Field(description="the prompt sent to the model")], ctx: Context) -> str:
    """Ask the client's model to answer a prompt."""
    message = types.SamplingMessage(role="user", content=types.TextContent(text=prompt))
    asking = ctx.session.create_message(  # pyright: ignore[reportDeprecated] - the handshake era's push request
        [message], max_tokens=SAMPLING_MAX_TOKENS, related_request_id=ctx.request_id
    )
    content = (await asking).content
    text = content.text if isinstance(content, types.TextContent) else content.model_dump_json(by_alias=True)
    return f"LLM response: {text}"


async def push_elicitation(
    message: Annotated[str, Field(description="the message shown to the user")], ctx: Context
) -> str:
    """Ask the user for a user name and an email address."""
    action, content = _outcome(await ctx.elicit(message, UserInfo))
    return f"User response: action={action}, content={content}"


async def push_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Ask the user for fields of every primitive type, each with a default (SEP-1034)."""
    action, content = _outcome(await ctx.elicit("Please review and update the form fields", Defaults))
    return f"Elicitation completed: action={action}, content={content}"


async def push_elicitation_sep1330_enums(ctx: Context) -> str:
    """Ask the user to choose from the five enum shapes of SEP-1330."""
    action, content = _outcome(await ctx.elicit("Please choose from the options", Enums))
    return f"Elicitation completed: action={action}, content={content}"


PUSH_TOOLS: Final[dict[str, Callable[..., Any]]] = {
    "test_sampling": push_sampling,
    "test_elicitation": push_elicitation,
    "test_elicitation_sep1034_defaults": push_elicitation_sep1034_defaults,
    "test_elicitation_sep1330_enums": push_elicitation_sep1330_enums,
}
"""Tools replaced under `--push`, by name."""


def _json_schema_tool() -> Tool:
    """`json_schema_2020_12_tool` with its input schema verbatim: a signature cannot produce `$schema`."""
    tool = Tool.from_function(json_schema_2020_12_tool, structured_output=False)
    return tool.model_copy(update={"parameters": JSON_SCHEMA_TOOL_SCHEMA})


TOOLS: Final[tuple[Callable[..., Any], ...]] = (
    test_simple_text,
    test_image_content,
    test_audio_content,
    test_embedded_resource,
    test_multiple_content_types,
    test_error_handling,
    test_tool_with_logging,
    test_tool_with_progress,
    test_sampling,
    test_elicitation,
    test_elicitation_sep1034_defaults,
    test_elicitation_sep1330_enums,
    test_reconnection,
)

# --- resources ------------------------------------------------------------------------------------------------


def static_text() -> str:
    """A static text resource."""
    return STATIC_TEXT


def static_binary() -> bytes:
    """A static binary resource: a 1x1 red PNG."""
    return RED_PIXEL_PNG


def template_data(id: str) -> str:
    """JSON data for an ID, from the template `test://template/{id}/data`."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


def watched() -> str:
    """A resource clients can subscribe to."""
    return WATCHED_TEXT


# --- prompts --------------------------------------------------------------------------------------------------


def test_simple_prompt() -> list[UserMessage]:
    """A simple prompt without arguments."""
    return [UserMessage(SIMPLE_PROMPT_TEXT)]


def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="the first argument")],
    arg2: Annotated[str, Field(description="the second argument")],
) -> list[UserMessage]:
    """A prompt with two required arguments."""
    return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="the URI of the embedded resource")],
) -> list[UserMessage]:
    """A prompt embedding a resource (`resourceUri` is the suite's argument name)."""
    resource = types.TextResourceContents(uri=resourceUri, mime_type="text/plain", text=PROMPT_RESOURCE_TEXT)
    return [
        UserMessage(types.EmbeddedResource(resource=resource)),
        UserMessage("Please process the embedded resource above."),
    ]


def test_prompt_with_image() -> list[UserMessage]:
    """A prompt with an image."""
    return [UserMessage(_image()), UserMessage("Please analyze the image above.")]


async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion:
    """Complete `arg1` of `test_prompt_with_arguments` from a fixed list; nothing else has completions."""
    del context
    if isinstance(ref, types.PromptReference) and ref.name == "test_prompt_with_arguments" and argument.name == "arg1":
        values = [value for value in ARG1_COMPLETIONS if value.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), has_more=False)
    return types.Completion(values=[], total=0, has_more=False)


# --- handshake-era methods MCPServer has no handlers for --------------------------------------------------------


class HandshakeExtras:
    """Serves `resources/subscribe`, `resources/unsubscribe` and `logging/setLevel` to handshake-era sessions.

    `MCPServer` registers no handlers for them (2026-07-28 removed them) and offers no public way to add one, so
    this server middleware answers them before method lookup, and adds `resources.subscribe` and `logging` to
    the capabilities of the `initialize` result. Requests of 2026-07-28 sessions pass through untouched.
    """

    def __init__(self) -> None:
        self.subscriptions: set[str] = set()
        self.log_level: types.LoggingLevel | None = None

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: Callable[..., Awaitable[HandlerResult]]
    ) -> HandlerResult:
        if ctx.method == "initialize":
            result = await call_next(ctx)
            if isinstance(result, dict):
                capabilities = result.setdefault("capabilities", {})
                capabilities.setdefault("resources", {})["subscribe"] = True
                capabilities.setdefault("logging", {})
            return result
        if ctx.request_id is None or ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return await call_next(ctx)
        params = dict(ctx.params or {})
        if ctx.method == "resources/subscribe":
            self.subscriptions.add(types.SubscribeRequestParams.model_validate(params).uri)
        elif ctx.method == "resources/unsubscribe":
            self.subscriptions.discard(types.UnsubscribeRequestParams.model_validate(params).uri)
        elif ctx.method == "logging/setLevel":
            self.log_level = types.SetLevelRequestParams.model_validate(params).level
        else:
            return await call_next(ctx)
        return {}


# --- the server -----------------------------------------------------------------------------------------------


def _modern_features() -> ModuleType:
    """`fixture_modern.py`, loaded by path (this script may run with `python -I`, without its directory on sys.path)."""
    path = Path(__file__).resolve().with_name("fixture_modern.py")
    spec = importlib.util.spec_from_file_location("conformance_fixture_modern", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before running it: pydantic resolves the annotations of its functions through sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build_server(*, push: bool = False) -> MCPServer:
    """The fixture server, every tool, resource, prompt and completion registered (`push`: see `PUSH_TOOLS`)."""
    modern = _modern_features()
    server = MCPServer(
        SERVER_NAME,
        log_level="WARNING",
        tools=[_json_schema_tool(), *modern.modern_tools()],
        middleware=[HandshakeExtras()],
    )
    for tool in TOOLS:
        replaced = PUSH_TOOLS.get(tool.__name__) if push else None
        server.add_tool(replaced or tool, name=tool.__name__, structured_output=False)
    server.resource("test://static-text", name="static-text", mime_type="text/plain")(static_text)
    server.resource("test://static-binary", name="static-binary", mime_type="image/png")(static_binary)
    server.resource("test://template/{id}/data", name="template-data", mime_type="application/json")(template_data)
    server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")(watched)
    for prompt in (
        test_simple_prompt,
        test_prompt_with_arguments,
        test_prompt_with_embedded_resource,
        test_prompt_with_image,
    ):
        server.prompt()(prompt)
    server.completion()(complete)
    modern.add_modern_features(server)
    return server


class MemoryEventStore(EventStore):
    """Every event of the process, for SSE resumption (`test_reconnection`): replays one stream after an ID."""

    def __init__(self) -> None:
        self._events: list[tuple[StreamId, types.JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        self._events.append((stream_id, message))
        return str(len(self._events))

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        if not last_event_id.isdigit() or not 0 < int(last_event_id) <= len(self._events):
            return None
        stream_id = self._events[int(last_event_id) - 1][0]
        for index in range(int(last_event_id), len(self._events)):
            event_stream, message = self._events[index]
            if event_stream == stream_id and message is not None:
                await send_callback(EventMessage(message, str(index + 1)))
        return stream_id


def main(argv: list[str]) -> int:
    """`stdio`, or `http PORT` (streamable HTTP at http://127.0.0.1:PORT/mcp); `--push` last: see `PUSH_TOOLS`."""
    # The fixture deliberately serves the handshake-era features 2026-07-28 deprecates (logging, sampling).
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    push = argv[-1:] == ["--push"]
    argv = argv[:-1] if push else argv
    server = build_server(push=push)
    if argv == ["stdio"]:
        anyio.run(server.run_stdio_async)
        return 0
    if len(argv) == 2 and argv[0] == "http" and argv[1].isdigit():
        run = functools.partial(
            server.run_streamable_http_async,
            host="127.0.0.1",
            port=int(argv[1]),
            event_store=MemoryEventStore(),
            retry_interval=RETRY_INTERVAL_MS,
        )
        anyio.run(run)
        return 0
    print(f"usage: {sys.argv[0]} stdio | http PORT", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
