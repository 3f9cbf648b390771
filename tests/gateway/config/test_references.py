"""Tool references: `module:attr` and `path/to/file.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway import BaseToolset, ConfigError, FunctionTool, LongRunningFunctionTool
from gateway.config.references import load_tools
from tests.support.paths import ROOT


def _names(items: list[object]) -> list[str]:
    return [item.name for item in items if isinstance(item, FunctionTool)]


def test_a_file_publishes_its_all() -> None:
    tools = load_tools(str(ROOT / "examples" / "functions.py"))
    assert _names(tools) == ["convert_temperature", "count_words", "days_between", "remember"]
    assert isinstance(tools[1], LongRunningFunctionTool)


def test_a_file_without_all_publishes_the_public_functions_it_defines(tmp_path: Path) -> None:
    source = tmp_path / "tools.py"
    source.write_text(
        "from os.path import join\n"
        "def greet(name: str) -> str:\n    return 'hi ' + name\n"
        "def _hidden() -> None: ...\n"
        "class Helper: ...\n",
        encoding="utf-8",
    )
    assert _names(load_tools(str(source))) == ["greet"]


def test_module_attr_publishes_one_callable_and_lists_publish_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_tools.py").write_text(
        "def a() -> int:\n    return 1\ndef b() -> int:\n    return 2\nboth = [a, b]\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _names(load_tools("my_tools:a")) == ["a"]
    assert _names(load_tools("my_tools:both")) == ["a", "b"]


def test_a_toolset_object_is_kept_as_a_toolset(tmp_path: Path) -> None:
    source = tmp_path / "sets.py"
    source.write_text(
        "from gateway import BaseToolset\n"
        "class Empty(BaseToolset):\n"
        "    async def get_tools(self, readonly_context=None):\n        return []\n"
        "toolset = Empty()\n",
        encoding="utf-8",
    )
    (item,) = load_tools(f"{source}:toolset")
    assert isinstance(item, BaseToolset)


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("no_such_module_xyz:f", r"Cannot import module 'no_such_module_xyz'"),
        ("missing/file.py", r"Tool file 'missing/file.py' does not exist"),
        ("json:nope", r"module 'json' has no attribute 'nope'. Public names there: .*dumps"),
        ("json:__doc__", r"Expected a function, a BaseTool or a BaseToolset, got str"),
        ("json:JSONDecoder", r"JSONDecoder is a class, not a tool"),
    ],
)
def test_a_wrong_reference_is_a_config_error_naming_it(reference: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_tools(reference)


def test_an_error_inside_a_tool_file_names_the_file(tmp_path: Path) -> None:
    source = tmp_path / "broken.py"
    source.write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"Importing tool file .*broken.py' failed: RuntimeError: boom"):
        load_tools(str(source))


@pytest.mark.parametrize(
    "tool_class",
    ["gateway.FunctionTool", "google.adk.tools.FunctionTool"],
    ids=["ours", "google-adk"],
)
def test_a_function_wrapped_by_a_tool_object_in_the_module_is_published_once_through_the_tool(
    tool_class: str, tmp_path: Path
) -> None:
    module, _, name = tool_class.rpartition(".")
    source = tmp_path / "buckets.py"
    source.write_text(
        f"from {module} import {name}\n"
        "def wipe(bucket: str) -> str:\n    return bucket\n"
        "def keep(bucket: str) -> str:\n    return bucket\n"
        f"wipe_tool = {name}(wipe, require_confirmation=True)\n",
        encoding="utf-8",
    )
    tools = load_tools(str(source))
    assert sorted(tool.name for tool in tools) == ["keep", "wipe"]  # pyright: ignore[reportAttributeAccessIssue]
    (wipe,) = [tool for tool in tools if tool.name == "wipe"]  # pyright: ignore[reportAttributeAccessIssue]
    # The published tool is the one the tool object configures (it asks for confirmation), not the bare function.
    inner = getattr(wipe, "adk_tool", wipe)
    assert inner.func.__name__ == "wipe"
    assert type(inner).__name__ == "FunctionTool"
    assert getattr(inner, "_require_confirmation", None) is True


def test_an_all_naming_both_a_function_and_its_tool_object_publishes_the_tool_only(tmp_path: Path) -> None:
    source = tmp_path / "buckets.py"
    source.write_text(
        "from gateway import FunctionTool\n"
        "__all__ = ['wipe', 'wipe_tool']\n"
        "def wipe(bucket: str) -> str:\n    return bucket\n"
        "wipe_tool = FunctionTool(wipe, require_confirmation=True)\n",
        encoding="utf-8",
    )
    (tool,) = load_tools(str(source))
    assert isinstance(tool, FunctionTool)
    assert tool.require_confirmation is True
