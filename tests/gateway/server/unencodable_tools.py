"""Tools whose results cannot be written as UTF-8 JSON, and one that can (for the bad-input tests)."""

from __future__ import annotations

from typing import Any


def file_name() -> str:
    """A file name as `os.fsdecode` reads one whose bytes are not UTF-8: it holds a lone surrogate."""
    return "report-\udcff.txt"


def echo(text: str) -> str:
    """Say `text` back."""
    return text


TOOLS: list[Any] = [file_name, echo]
"""What `adk-mcp-gateway serve --tools tests/gateway/server/unencodable_tools.py:TOOLS` publishes."""
