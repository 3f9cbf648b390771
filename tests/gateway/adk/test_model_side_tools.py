"""google-adk's model-side tools (`google_search`, `url_context`, code execution, ...) are run by the model, not by
a client: serving one fails at start-up, naming it, saying why and what to do instead."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from google.adk.tools import FunctionTool, google_search
from google.adk.tools.base_tool import BaseTool as AdkBaseTool
from google.adk.tools.base_toolset import BaseToolset as AdkBaseToolset
from mcp import Client

from gateway.errors import ToolDefinitionError
from gateway.server import ToolServer
from tests.support.paths import ROOT

MODULE = """\
from google.adk.code_executors import BuiltInCodeExecutor
from google.adk.tools import FunctionTool, google_search, url_context


def get_weather(city: str) -> dict:
    \"\"\"Weather for a city.\"\"\"
    return {"city": city}


SEARCH = [FunctionTool(get_weather), google_search]
URL = url_context
CODE = [BuiltInCodeExecutor()]
"""


def _serve(reference: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "serve", "--transport", "stdio", "--tools", reference],
        input="",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("attr", "named"),
    [("SEARCH", "google_search"), ("URL", "url_context"), ("CODE", "BuiltInCodeExecutor")],
)
def test_serving_a_model_side_tool_fails_at_start_up_naming_it_and_saying_to_serve_an_agent(
    tmp_path: Path, attr: str, named: str
) -> None:
    module = tmp_path / "model_side.py"
    module.write_text(MODULE)

    done = _serve(f"{module}:{attr}")

    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert "the model itself runs" in done.stderr
    assert "--agent" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_tool_server_given_google_search_refuses_it() -> None:
    with pytest.raises(ToolDefinitionError, match="google_search"):
        ToolServer([google_search])


def get_time(city: str) -> dict[str, str]:
    """The time in a city."""
    return {"city": city, "time": "12:00"}


class SearchingToolset(AdkBaseToolset):
    """A google-adk toolset whose tools include the model-side `google_search`."""

    async def get_tools(self, readonly_context: object = None) -> list[AdkBaseTool]:
        del readonly_context
        return [FunctionTool(get_time), google_search]


@pytest.mark.anyio
async def test_a_google_adk_toolsets_model_side_tool_is_left_out_with_one_warning_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="gateway.adk.served_tool"):
        async with ToolServer([SearchingToolset()]) as server, Client(server.server) as client:
            with anyio.fail_after(20):
                listings = [[tool.name for tool in (await client.list_tools()).tools] for _ in range(2)]

    assert listings == [["get_time"], ["get_time"]]
    warnings = [record.getMessage() for record in caplog.records if "google_search" in record.getMessage()]
    assert len(warnings) == 1
    assert "the model itself runs" in warnings[0]
