"""Tool results, both ways: an MCP `CallToolResult` and an ADK function response.

An ADK function response is a plain JSON-able dict. Its data is the tool's structured content (an object
as it is, anything else under `"result"`), or `{"error": "<message>"}` when the tool failed: the convention
ADK models are tuned to. Media and every other non-text content block travel beside the data, under
`"parts"`, as typed parts: each block's `model_dump(mode="json", exclude_none=True)`, for example
`{"type": "image", "data": "<base64>", "mime_type": "image/png"}`. Nothing is dropped and no media is turned
into text, so a result survives the trip to ADK and back.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, Final, TypeGuard

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)
from pydantic import Field, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from adapters.media import Media, sniff_mime_type

__all__ = ["mcp_result_to_response", "response_to_mcp_result"]

_ERROR_WITHOUT_MESSAGE: Final = "The tool reported an error without a message."
_CONTENT_BLOCKS: Final = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
_PARTS: Final = TypeAdapter(list[Annotated[ContentBlock, Field(discriminator="type")]])


def mcp_result_to_response(result: CallToolResult) -> dict[str, Any]:
    """Turn an MCP tool result into an ADK function response.

    Args:
        result: What an MCP server answered to `tools/call`.

    Returns:
        `{"error": ...}` if the tool failed; otherwise its structured content, or else its text parsed as JSON
        where it is JSON, with any non-object value under `"result"`. Non-text blocks, and text blocks that
        are more than a copy of the structured content, are added under `"parts"`; if the data has a
        `"parts"` key of its own, it is nested as `{"result": data, "parts": [...]}`.
    """
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    parts = [_part(block) for block in result.content if not isinstance(block, TextContent)]
    if result.is_error:
        body: dict[str, Any] = {"error": _error_message(texts, result.structured_content)}
    elif result.structured_content is not None:
        structured = _jsonable(result.structured_content, strict=False)
        body = structured if _is_object(structured) else {"result": structured}
        # Text that is more than a copy of the structured content is kept too, in its place among the blocks.
        parts = [
            _part(block)
            for block in result.content
            if not (isinstance(block, TextContent) and _restates(block.text, structured))
        ]
    else:
        body = _body_from_texts(texts)
    if not parts:
        return body
    if "parts" in body:
        return {"result": body, "parts": parts}
    return {**body, "parts": parts}


def response_to_mcp_result(value: Any) -> CallToolResult:
    """Turn what a Python tool returned, or an ADK function response, into an MCP tool result.

    Args:
        value: `None`; `{"error": ...}` (optionally with `"parts"`), which becomes an error result; `bytes`,
            `Media` or an MCP content block, or a non-empty list of them (also inside ADK's `{"result": ...}`
            wrapper), which become content blocks; a dict
            with typed `"parts"`, which become content blocks beside the rest of the dict; or any value
            `pydantic_core.to_jsonable_python` understands, which becomes structured content (under
            `"result"` unless it is an object) and its text.

    Returns:
        The `CallToolResult` to answer `tools/call` with.

    Raises:
        TypeError: `value` contains something that cannot be converted to JSON.
    """
    if _is_object(value) and value.keys() == {"result"}:
        # ADK wraps a non-dict return as {"result": value}; media inside it are still media.
        inner = value["result"]
        if _is_media(inner) or (_is_sequence(inner) and inner and all(_is_media(item) for item in inner)):
            value = inner
        elif not _is_object(inner) and inner is not None:
            # The text block carries the value itself (a str as it is), exactly as for an unwrapped return.
            return _data_result(inner, [])
    if value is None:
        return CallToolResult(content=[])
    if _is_media(value):
        return CallToolResult(content=[_media_block(value, 0)])
    if _is_sequence(value) and value and all(_is_media(item) for item in value):
        return CallToolResult(content=[_media_block(item, index) for index, item in enumerate(value)])
    if _is_object(value):
        return _dict_to_result(value)
    return _data_result(value, [])


def _part(block: ContentBlock) -> dict[str, Any]:
    return block.model_dump(mode="json", exclude_none=True)


def _error_message(texts: list[str], structured: Any) -> str:
    message = "\n".join(texts)
    if message.strip():
        return message
    if structured is None:
        return _ERROR_WITHOUT_MESSAGE
    dumped = json.dumps(_jsonable(structured, strict=False), ensure_ascii=False)
    return f"{_ERROR_WITHOUT_MESSAGE} Its structured content: {dumped}"


def _body_from_texts(texts: list[str]) -> dict[str, Any]:
    if not texts:
        return {}
    if len(texts) > 1:
        return {"result": texts}
    try:
        value = json.loads(texts[0])
    except (ValueError, RecursionError):
        return {"result": texts[0]}
    return value if _is_object(value) else {"result": value}


def _restates(text: str, structured: Any) -> bool:
    """Whether a text block only repeats the structured content, as servers send it for older clients.

    A non-object value is wrapped as `{"result": value}` in structured content, while the text holds the value
    itself (`"3"`, or a string as it is), so the wrapped value counts too.
    """
    candidates = [structured]
    if _is_object(structured) and structured.keys() == {"result"}:
        candidates.append(structured["result"])
    if text in (candidate for candidate in candidates if isinstance(candidate, str)):
        return True
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return any(_json_equal(parsed, candidate) for candidate in candidates)


def _json_equal(left: Any, right: Any) -> bool:
    # Python's == says True == 1 == 1.0; JSON's true and 1 are different values.
    if _is_object(left) and _is_object(right):
        return left.keys() == right.keys() and all(_json_equal(left[key], right[key]) for key in left)
    if _is_array(left) and _is_array(right):
        return len(left) == len(right) and all(map(_json_equal, left, right))
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return left == right


def _is_media(value: Any) -> bool:
    return isinstance(value, (bytes, bytearray, memoryview, Media, *_CONTENT_BLOCKS))


def _media_block(item: Any, index: int) -> ContentBlock:
    if isinstance(item, _CONTENT_BLOCKS):
        return item
    media = item if isinstance(item, Media) else _sniffed(bytes(item))
    data = base64.b64encode(media.data).decode("ascii")
    kind = media.mime_type.lower()
    if kind.startswith("image/"):
        return ImageContent(data=data, mime_type=media.mime_type)
    if kind.startswith("audio/"):
        return AudioContent(data=data, mime_type=media.mime_type)
    resource = BlobResourceContents(uri=f"resource://inline/{index}", mime_type=media.mime_type, blob=data)
    return EmbeddedResource(resource=resource)


def _sniffed(data: bytes) -> Media:
    return Media(data, sniff_mime_type(data))


def _dict_to_result(value: dict[str, Any]) -> CallToolResult:
    blocks = _typed_parts(value["parts"]) if "parts" in value else []
    if blocks is None:
        # A "parts" key of the tool's own, not one this module wrote: plain data.
        return _data_result(value, [])
    rest = {key: item for key, item in value.items() if key != "parts"}
    if rest.keys() == {"error"}:
        return CallToolResult(content=[TextContent(text=_error_text(rest["error"])), *blocks], is_error=True)
    return _data_result(rest, blocks)


def _typed_parts(parts: Any) -> list[ContentBlock] | None:
    if not _is_array(parts) or not parts:
        return None
    try:
        return _PARTS.validate_python(parts)
    except ValidationError:
        return None


def _error_text(error: Any) -> str:
    return error if isinstance(error, str) else json.dumps(_jsonable(error, strict=False), ensure_ascii=False)


def _data_result(value: Any, blocks: list[ContentBlock]) -> CallToolResult:
    data = _jsonable(value, strict=True)
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    structured = data if _is_object(data) else {"result": data}
    return CallToolResult(content=[TextContent(text=text), *blocks], structured_content=structured)


def _jsonable(value: Any, *, strict: bool) -> Any:
    """`value` as JSON-able data; `strict` refuses unknown types instead of falling back to `str`."""
    try:
        return to_jsonable_python(value, bytes_mode="base64", inf_nan_mode="null", serialize_unknown=not strict)
    except PydanticSerializationError as exc:
        raise TypeError(
            f"A tool result of type {type(value).__name__} cannot be converted to JSON: {exc}. "
            "Return JSON data, a pydantic model, a dataclass, bytes or Media instead."
        ) from exc


# isinstance() on an `Any` narrows to dict[Unknown, Unknown], which strict pyright rejects.
def _is_object(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def _is_array(value: Any) -> TypeGuard[list[Any]]:
    return isinstance(value, list)


def _is_sequence(value: Any) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    return isinstance(value, list | tuple)
