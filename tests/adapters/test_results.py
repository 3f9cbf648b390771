from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import io
import json
import math
import wave
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.types import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from adapters.media import Media
from adapters.results import mcp_result_to_response, response_to_mcp_result

QUICK = settings(max_examples=200, deadline=None)

IMAGE = ImageContent(data=base64.b64encode(b"\x89PNG\r\n\x1a\n").decode(), mime_type="image/png")
AUDIO = AudioContent(data=base64.b64encode(b"OggS").decode(), mime_type="audio/ogg")
BLOB = EmbeddedResource(
    resource=BlobResourceContents(uri="file:///report.pdf", mime_type="application/pdf", blob="JVBERi0=")
)
TEXT_RESOURCE = EmbeddedResource(resource=TextResourceContents(uri="file:///notes.md", text="# Notes"))
LINK = ResourceLink(uri="file:///big.csv", name="big.csv", mime_type="text/csv")


def png_bytes() -> bytes:
    """The signature and IHDR chunk of a real 1x1 greyscale PNG."""
    return bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010800000000") + b"\x3a\x7e\x9b\x55"


def wav_bytes() -> bytes:
    """A complete WAV file holding a few silent frames."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(8000)
        writer.writeframes(b"\x00\x00" * 8)
    return buffer.getvalue()


def text(value: str) -> TextContent:
    return TextContent(text=value)


def non_text(content: list[ContentBlock]) -> list[ContentBlock]:
    return [block for block in content if not isinstance(block, TextContent)]


# --- Strategies -------------------------------------------------------------------------------------------

json_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(
    st.text(max_size=8).filter(lambda key: key not in {"error", "parts"}), json_values, max_size=5
)
json_non_objects = json_values.filter(lambda value: value is not None and not isinstance(value, dict))

mime_types = st.sampled_from(["image/png", "image/jpeg", "audio/wav", "application/pdf", "text/csv"])
base64_data = st.binary(max_size=24).map(lambda data: base64.b64encode(data).decode())
uris = st.sampled_from(["file:///a.txt", "https://example.com/b", "resource://inline/0"])
annotations = st.none() | st.builds(
    Annotations,
    audience=st.none() | st.just(["user"]),
    priority=st.none() | st.floats(min_value=0, max_value=1),
)
metas = st.none() | st.dictionaries(st.text(min_size=1, max_size=6), json_scalars, max_size=2)

image_blocks = st.builds(ImageContent, data=base64_data, mime_type=mime_types, annotations=annotations, meta=metas)
audio_blocks = st.builds(AudioContent, data=base64_data, mime_type=mime_types, annotations=annotations)
resource_blocks = st.builds(
    EmbeddedResource,
    resource=st.builds(BlobResourceContents, uri=uris, mime_type=st.none() | mime_types, blob=base64_data)
    | st.builds(TextResourceContents, uri=uris, mime_type=st.none() | mime_types, text=st.text(max_size=12)),
    annotations=annotations,
)
link_blocks = st.builds(
    ResourceLink,
    uri=uris,
    name=st.text(min_size=1, max_size=8),
    description=st.none() | st.text(max_size=12),
    mime_type=st.none() | mime_types,
    size=st.none() | st.integers(min_value=0, max_value=10**9),
)
non_text_blocks = image_blocks | audio_blocks | resource_blocks | link_blocks
text_blocks = st.builds(TextContent, text=st.text(max_size=16))
any_results = st.builds(
    CallToolResult,
    content=st.lists(text_blocks | non_text_blocks, max_size=4),
    structured_content=st.none() | json_values,
    is_error=st.booleans(),
)


# --- MCP result → ADK response: errors --------------------------------------------------------------------


def test_an_error_result_becomes_an_error_dict_with_its_texts_joined_by_newlines() -> None:
    result = CallToolResult(content=[text("Error executing tool add"), text("a must be an int")], is_error=True)

    assert mcp_result_to_response(result) == {"error": "Error executing tool add\na must be an int"}


def test_an_error_result_without_text_says_that_the_tool_gave_no_message() -> None:
    result = CallToolResult(content=[], is_error=True)

    assert mcp_result_to_response(result) == {"error": "The tool reported an error without a message."}


def test_an_error_result_with_only_blank_text_counts_as_one_without_a_message() -> None:
    result = CallToolResult(content=[text(""), text("  ")], is_error=True)

    assert mcp_result_to_response(result) == {"error": "The tool reported an error without a message."}


def test_an_error_result_without_text_shows_its_structured_content_as_json() -> None:
    result = CallToolResult(content=[], structured_content={"code": 404, "why": "ünknown"}, is_error=True)

    message = mcp_result_to_response(result)["error"]

    assert message.startswith("The tool reported an error without a message.")
    assert message.endswith('{"code": 404, "why": "ünknown"}')


def test_an_error_result_keeps_its_non_text_blocks_as_parts() -> None:
    result = CallToolResult(content=[text("partial failure"), IMAGE, LINK], is_error=True)

    assert mcp_result_to_response(result) == {
        "error": "partial failure",
        "parts": [
            {"type": "image", "data": IMAGE.data, "mime_type": "image/png"},
            {"type": "resource_link", "uri": "file:///big.csv", "name": "big.csv", "mime_type": "text/csv"},
        ],
    }


# --- MCP result → ADK response: structured content ---------------------------------------------------------


def test_object_structured_content_is_the_response_and_its_json_text_is_dropped() -> None:
    structured = {"temperature": 21.5, "unit": "C"}
    result = CallToolResult(content=[text(json.dumps(structured))], structured_content=structured)

    assert mcp_result_to_response(result) == structured


def test_the_response_is_a_copy_of_the_structured_content() -> None:
    structured: dict[str, Any] = {"items": [1, 2]}
    result = CallToolResult(content=[IMAGE], structured_content=structured)

    response = mcp_result_to_response(result)
    response["items"].append(3)

    assert structured == {"items": [1, 2]}
    assert "parts" not in structured


def test_non_object_structured_content_is_wrapped_under_result() -> None:
    result = CallToolResult(content=[text("[1, 2]")], structured_content=[1, 2])

    assert mcp_result_to_response(result) == {"result": [1, 2]}


@pytest.mark.parametrize(
    ("structured", "restating_text"),
    [({"result": 3}, "3"), ({"result": "hi"}, "hi"), ({"result": "3"}, "3"), ({"result": None}, "null")],
)
def test_a_text_holding_the_wrapped_value_is_dropped_as_a_duplicate(structured: Any, restating_text: str) -> None:
    result = CallToolResult(content=[text(restating_text)], structured_content=structured)

    assert mcp_result_to_response(result) == structured


def test_a_text_that_says_something_else_is_kept_as_a_text_part() -> None:
    structured = {"rows": 2}
    result = CallToolResult(
        content=[text(json.dumps(structured)), text("Query took 3 ms")], structured_content=structured
    )

    assert mcp_result_to_response(result) == {
        "rows": 2,
        "parts": [{"type": "text", "text": "Query took 3 ms"}],
    }


def test_json_true_does_not_restate_the_number_one() -> None:
    result = CallToolResult(content=[text("true")], structured_content={"result": 1})

    assert mcp_result_to_response(result) == {"result": 1, "parts": [{"type": "text", "text": "true"}]}


# --- MCP result → ADK response: text only ------------------------------------------------------------------


def test_a_single_json_object_text_is_the_response() -> None:
    result = CallToolResult(content=[text('{"city": "Zürich", "open": true}')])

    assert mcp_result_to_response(result) == {"city": "Zürich", "open": True}


@pytest.mark.parametrize(("raw", "value"), [("42", 42), ("[1, 2]", [1, 2]), ('"quoted"', "quoted"), ("null", None)])
def test_a_single_json_non_object_text_is_wrapped_under_result(raw: str, value: Any) -> None:
    assert mcp_result_to_response(CallToolResult(content=[text(raw)])) == {"result": value}


def test_a_single_text_that_is_not_json_is_the_result_as_it_is() -> None:
    result = CallToolResult(content=[text("It is 14:03 in Paris.")])

    assert mcp_result_to_response(result) == {"result": "It is 14:03 in Paris."}


def test_several_texts_become_a_list_of_strings() -> None:
    result = CallToolResult(content=[text("first"), text('{"second": 2}')])

    assert mcp_result_to_response(result) == {"result": ["first", '{"second": 2}']}


def test_a_result_without_content_is_an_empty_response() -> None:
    assert mcp_result_to_response(CallToolResult(content=[])) == {}


# --- MCP result → ADK response: parts ----------------------------------------------------------------------


def test_non_text_blocks_become_typed_snake_case_parts() -> None:
    result = CallToolResult(content=[text("four files"), IMAGE, AUDIO, BLOB, TEXT_RESOURCE, LINK])

    assert mcp_result_to_response(result) == {
        "result": "four files",
        "parts": [
            {"type": "image", "data": IMAGE.data, "mime_type": "image/png"},
            {"type": "audio", "data": AUDIO.data, "mime_type": "audio/ogg"},
            {
                "type": "resource",
                "resource": {"uri": "file:///report.pdf", "mime_type": "application/pdf", "blob": "JVBERi0="},
            },
            {"type": "resource", "resource": {"uri": "file:///notes.md", "text": "# Notes"}},
            {"type": "resource_link", "uri": "file:///big.csv", "name": "big.csv", "mime_type": "text/csv"},
        ],
    }


def test_annotations_and_meta_of_a_block_are_kept_in_its_part() -> None:
    image = IMAGE.model_copy(update={"annotations": Annotations(priority=0.5), "meta": {"page": 2}})

    part = mcp_result_to_response(CallToolResult(content=[image]))["parts"][0]

    assert part["annotations"] == {"priority": 0.5}
    assert part["meta"] == {"page": 2}


def test_a_result_of_only_media_is_a_response_of_only_parts() -> None:
    response = mcp_result_to_response(CallToolResult(content=[IMAGE]))

    assert response == {"parts": [{"type": "image", "data": IMAGE.data, "mime_type": "image/png"}]}


def test_data_with_a_parts_key_of_its_own_is_nested_when_parts_are_added() -> None:
    structured = {"parts": ["wheel", "bolt"], "count": 2}
    result = CallToolResult(content=[text(json.dumps(structured)), IMAGE], structured_content=structured)

    assert mcp_result_to_response(result) == {
        "result": structured,
        "parts": [{"type": "image", "data": IMAGE.data, "mime_type": "image/png"}],
    }


def test_data_with_a_parts_key_of_its_own_is_left_alone_when_there_is_nothing_to_add() -> None:
    structured = {"parts": ["wheel", "bolt"]}
    result = CallToolResult(content=[text(json.dumps(structured))], structured_content=structured)

    assert mcp_result_to_response(result) == structured


@QUICK
@given(any_results)
def test_every_response_can_be_dumped_as_json(result: CallToolResult) -> None:
    response = mcp_result_to_response(result)

    assert json.loads(json.dumps(response)) == response


# --- Tool return value → MCP result: errors ----------------------------------------------------------------


def test_an_error_dict_becomes_an_error_result_without_structured_content() -> None:
    result = response_to_mcp_result({"error": "This tool call is rejected."})

    assert result.is_error
    assert result.content == [text("This tool call is rejected.")]
    assert result.structured_content is None


def test_an_error_dict_with_parts_keeps_their_blocks_after_the_message() -> None:
    parts = [IMAGE.model_dump(mode="json", exclude_none=True)]

    result = response_to_mcp_result({"error": "see the screenshot", "parts": parts})

    assert result.is_error
    assert result.content == [text("see the screenshot"), IMAGE]


def test_an_error_that_is_not_a_string_is_written_as_json() -> None:
    result = response_to_mcp_result({"error": {"code": 7, "detail": "ünknown"}})

    assert result.is_error
    assert result.content == [text('{"code": 7, "detail": "ünknown"}')]


def test_a_dict_with_an_error_key_and_other_data_is_data_not_an_error() -> None:
    value: dict[str, Any] = {"error": None, "rows": []}

    result = response_to_mcp_result(value)

    assert not result.is_error
    assert result.structured_content == value


# --- Tool return value → MCP result: media -----------------------------------------------------------------


def test_png_bytes_become_image_content() -> None:
    png = png_bytes()

    result = response_to_mcp_result(png)

    assert result.content == [ImageContent(data=base64.b64encode(png).decode(), mime_type="image/png")]
    assert result.structured_content is None


def test_wav_bytes_become_audio_content() -> None:
    wav = wav_bytes()

    result = response_to_mcp_result(bytearray(wav))

    assert result.content == [AudioContent(data=base64.b64encode(wav).decode(), mime_type="audio/wav")]


def test_a_memoryview_is_read_as_bytes() -> None:
    (block,) = response_to_mcp_result(memoryview(png_bytes())).content

    assert isinstance(block, ImageContent)
    assert base64.b64decode(block.data) == png_bytes()


def test_other_bytes_become_an_inline_blob_resource() -> None:
    result = response_to_mcp_result(b"%PDF-1.7\n")

    assert result.content == [
        EmbeddedResource(
            resource=BlobResourceContents(
                uri="resource://inline/0",
                mime_type="application/pdf",
                blob=base64.b64encode(b"%PDF-1.7\n").decode(),
            )
        )
    ]


def test_unrecognised_bytes_are_an_octet_stream_resource() -> None:
    (block,) = response_to_mcp_result(b"\x00\x01\x02").content

    assert isinstance(block, EmbeddedResource)
    assert block.resource.mime_type == "application/octet-stream"


def test_media_keeps_the_mime_type_it_was_given() -> None:
    (block,) = response_to_mcp_result(Media(b"not really a jpeg", "IMAGE/JPEG")).content

    assert block == ImageContent(data=base64.b64encode(b"not really a jpeg").decode(), mime_type="IMAGE/JPEG")


def test_a_content_block_is_passed_through() -> None:
    assert response_to_mcp_result(LINK).content == [LINK]


def test_a_list_of_media_becomes_several_blocks_numbered_by_position() -> None:
    result = response_to_mcp_result([png_bytes(), Media(b"a,b\n", "text/csv"), LINK, (b"\x00",)[0]])

    assert [type(block) for block in result.content] == [
        ImageContent,
        EmbeddedResource,
        ResourceLink,
        EmbeddedResource,
    ]
    assert [block.resource.uri for block in result.content if isinstance(block, EmbeddedResource)] == [
        "resource://inline/1",
        "resource://inline/3",
    ]
    assert result.structured_content is None


def test_a_tuple_of_media_becomes_several_blocks() -> None:
    assert response_to_mcp_result((IMAGE, AUDIO)).content == [IMAGE, AUDIO]


def test_a_list_mixing_media_and_data_is_data_with_bytes_in_base64() -> None:
    result = response_to_mcp_result([b"\x00\xff", 1])

    assert result.structured_content == {"result": ["AP8=", 1]}


def test_an_empty_list_is_data_not_media() -> None:
    result = response_to_mcp_result([])

    assert result.content == [text("[]")]
    assert result.structured_content == {"result": []}


# --- Tool return value → MCP result: typed parts -----------------------------------------------------------


def test_typed_parts_become_blocks_beside_the_rest_of_the_dict() -> None:
    parts = [block.model_dump(mode="json", exclude_none=True) for block in (IMAGE, TEXT_RESOURCE, LINK)]

    result = response_to_mcp_result({"pages": 3, "parts": parts})

    assert result.content == [text('{"pages": 3}'), IMAGE, TEXT_RESOURCE, LINK]
    assert result.structured_content == {"pages": 3}
    assert not result.is_error


def test_a_dict_of_only_typed_parts_has_empty_structured_content() -> None:
    # An MCP result with media and `{}` as structured content gives the same response as one with media only.
    result = response_to_mcp_result({"parts": [{"type": "audio", "data": "T2dnUw==", "mime_type": "audio/ogg"}]})

    assert result.content == [text("{}"), AUDIO]
    assert result.structured_content == {}


@pytest.mark.parametrize(
    "own_parts",
    [["wheel", "bolt"], [], [{"type": "image"}], [{"type": "video", "url": "x"}], "all of them"],
    ids=["strings", "empty", "incomplete block", "unknown type", "not a list"],
)
def test_a_parts_key_that_is_not_typed_parts_is_plain_data(own_parts: Any) -> None:
    value = {"parts": own_parts, "count": 2}

    result = response_to_mcp_result(value)

    assert result.structured_content == value
    assert result.content == [text(json.dumps(value))]


# --- Tool return value → MCP result: data ------------------------------------------------------------------


def test_a_dict_is_the_structured_content_and_its_json_the_text() -> None:
    result = response_to_mcp_result({"city": "Zürich", "temperature": 21.5})

    assert result.structured_content == {"city": "Zürich", "temperature": 21.5}
    assert result.content == [text('{"city": "Zürich", "temperature": 21.5}')]
    assert not result.is_error


def test_a_string_is_the_text_itself_and_wrapped_as_structured_content() -> None:
    result = response_to_mcp_result('{"looks": "like json"}')

    assert result.content == [text('{"looks": "like json"}')]
    assert result.structured_content == {"result": '{"looks": "like json"}'}


def test_a_number_is_json_text_and_wrapped_as_structured_content() -> None:
    result = response_to_mcp_result(3)

    assert result.content == [text("3")]
    assert result.structured_content == {"result": 3}


def test_none_is_a_result_without_content() -> None:
    result = response_to_mcp_result(None)

    assert result.content == []
    assert result.structured_content is None
    assert not result.is_error
    assert mcp_result_to_response(result) == {}


class Colour(enum.Enum):
    RED = "red"


class Weather(pydantic.BaseModel):
    city: str
    observed: datetime.datetime


@dataclasses.dataclass
class Point:
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "structured"),
    [
        (
            Weather(city="Oslo", observed=datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)),
            {"city": "Oslo", "observed": "2025-01-02T03:04:05Z"},
        ),
        (Point(1, 2), {"x": 1, "y": 2}),
        (datetime.date(2025, 1, 2), {"result": "2025-01-02"}),
        (Colour.RED, {"result": "red"}),
        ({3}, {"result": [3]}),
        ((1, "a"), {"result": [1, "a"]}),
        (Path("reports/q3.pdf"), {"result": "reports/q3.pdf"}),
        ({"when": datetime.time(12, 30), 1: "one"}, {"when": "12:30:00", "1": "one"}),
        (math.nan, {"result": None}),
    ],
    ids=["pydantic model", "dataclass", "date", "enum", "set", "tuple", "path", "nested and int keys", "nan"],
)
def test_python_values_are_made_json_able(value: Any, structured: dict[str, Any]) -> None:
    result = response_to_mcp_result(value)

    assert result.structured_content == structured
    assert mcp_result_to_response(result) == structured


def test_a_value_that_cannot_be_json_is_a_type_error_naming_its_type() -> None:
    class Opaque:
        pass

    with pytest.raises(TypeError, match="Opaque"):
        response_to_mcp_result(Opaque())


# --- Round trips -------------------------------------------------------------------------------------------


@QUICK
@given(json_objects)
def test_a_json_object_survives_the_trip_through_mcp(value: dict[str, Any]) -> None:
    assert mcp_result_to_response(response_to_mcp_result(value)) == value


@QUICK
@given(json_non_objects)
def test_any_other_json_value_comes_back_wrapped_under_result(value: Any) -> None:
    assert mcp_result_to_response(response_to_mcp_result(value)) == {"result": value}


@QUICK
@given(json_objects, st.lists(non_text_blocks, max_size=4))
def test_an_mcp_result_with_structured_content_and_media_survives_the_trip_through_adk(
    structured: dict[str, Any], blocks: list[ContentBlock]
) -> None:
    original = CallToolResult(content=[text(json.dumps(structured)), *blocks], structured_content=structured)

    again = response_to_mcp_result(mcp_result_to_response(original))

    assert again.structured_content == original.structured_content
    assert again.is_error == original.is_error
    assert non_text(again.content) == non_text(original.content)


@QUICK
@given(st.text(min_size=1, max_size=20).filter(str.strip), st.lists(non_text_blocks, max_size=3))
def test_an_mcp_error_with_media_survives_the_trip_through_adk(message: str, blocks: list[ContentBlock]) -> None:
    original = CallToolResult(content=[text(message), *blocks], is_error=True)

    again = response_to_mcp_result(mcp_result_to_response(original))

    assert again == original


@pytest.mark.parametrize(
    ("data", "block_type", "mime_type"),
    [(png_bytes(), ImageContent, "image/png"), (wav_bytes(), AudioContent, "audio/wav")],
    ids=["png", "wav"],
)
def test_media_bytes_survive_the_trip_through_adk(
    data: bytes, block_type: type[ImageContent | AudioContent], mime_type: str
) -> None:
    encoded = base64.b64encode(data).decode()

    response = mcp_result_to_response(response_to_mcp_result(data))
    (block,) = non_text(response_to_mcp_result(response).content)

    assert response == {"parts": [{"type": ANY, "data": encoded, "mime_type": mime_type}]}
    assert block == block_type(data=encoded, mime_type=mime_type)


def test_media_inside_adks_result_wrapper_are_still_media() -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    result = response_to_mcp_result({"result": png})
    assert result.structured_content is None
    assert [block.type for block in result.content] == ["image"]
    assert isinstance(result.content[0], ImageContent)
    assert result.content[0].mime_type == "image/png"
    several = response_to_mcp_result({"result": [Media(b"abc", "text/plain"), png]})
    assert [block.type for block in several.content] == ["resource", "image"]


def test_adks_result_wrapper_around_a_scalar_gives_the_scalar_as_text() -> None:
    result = response_to_mcp_result({"result": "This is a simple text response."})
    assert result.structured_content == {"result": "This is a simple text response."}
    assert [block.text for block in result.content if isinstance(block, TextContent)] == [
        "This is a simple text response."
    ]
    assert response_to_mcp_result({"result": 3}).content[0] == TextContent(text="3")
    assert mcp_result_to_response(response_to_mcp_result({"result": [1, 2]})) == {"result": [1, 2]}
