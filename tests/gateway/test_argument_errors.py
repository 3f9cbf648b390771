"""An argument a tool does not take is refused, naming it, by our tools, google-adk's tools and `call` alike."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from google.adk.tools import FunctionTool as AdkFunctionTool

from gateway.adk.served_tool import AdkTool
from gateway.tools import FunctionTool

pytestmark = pytest.mark.anyio

REFUSAL = "Parameter 'bogus': the tool takes no such argument (its arguments: name)"

calls: list[str] = []


def greet(name: str) -> str:
    """Greet someone."""
    calls.append(name)
    return f"hello {name}"


def greet_anything(name: str, **more: Any) -> str:
    """Greet someone, with whatever else is said."""
    return f"hello {name} {sorted(more)}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize("kind", ["ours", "google-adk"])
async def test_an_unknown_argument_is_refused_naming_it_and_the_function_is_not_called(kind: str) -> None:
    tool = FunctionTool(greet) if kind == "ours" else AdkTool(AdkFunctionTool(greet))
    calls.clear()
    response: dict[str, str] = await tool.run_async(args={"name": "ada", "bogus": 1}, tool_context=None)
    error = response["error"]
    assert error.startswith("Invoking `greet()` failed due to argument validation errors:\n")
    assert f"\n{REFUSAL} (got 1)\n" in error
    assert calls == []


async def test_a_function_taking_keyword_arguments_gets_the_unknown_ones() -> None:
    response = await FunctionTool(greet_anything).run_async(args={"name": "ada", "bogus": 1}, tool_context=None)
    assert response == {"result": "hello ada ['bogus']"}


@pytest.mark.parametrize("arguments", [["name=ada", "bogus=1"], ["--args", '{"name": "ada", "bogus": 1}']])
def test_call_refuses_an_unknown_argument_in_the_same_words(tmp_path: Path, arguments: list[str]) -> None:
    (tmp_path / "greeting.py").write_text('def greet(name: str) -> str:\n    """Greet."""\n    return name\n')
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "call", "--tools", "greeting.py", "greet", *arguments],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert REFUSAL in done.stderr + done.stdout, done.stderr + done.stdout
    assert "hello" not in done.stdout
