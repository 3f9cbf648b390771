"""Third-party libraries of tool search log at the level the command line asked for, not their own."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from mcp import types

from gateway.cli._logs import configure_logging
from gateway.search.tool_index import ToolIndex


@pytest.fixture
def root_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("root_logging")
def test_building_an_index_at_log_level_warning_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    configure_logging("warning", "text", tracebacks=False)
    tools = [types.Tool(name="send_email", description="Send an email.", input_schema={"type": "object"})]

    ToolIndex(tools, semantic=False).search("send an email", 1)

    assert capfd.readouterr().err == ""
