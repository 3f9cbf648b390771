"""Tool references on the command line and in config files: `package.module:attr` or `path/to/file.py`."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import cast

from gateway.adk import adk_kind, from_adk, require_adk
from gateway.adk.acceptance import as_tool
from gateway.errors import ConfigError, MissingExtraError, ToolDefinitionError
from gateway.tools import BaseTool, BaseToolset

__all__ = ["load_agent", "load_object", "load_tools"]


def _on_path(folder: Path) -> None:
    """Let a module import the modules beside it, as `python file.py`, `python -m` and `adk run` do."""
    entry = str(folder.resolve())
    if entry not in sys.path:
        sys.path.insert(0, entry)


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise ConfigError(f"Tool file {str(path)!r} does not exist (resolved to {path.resolve()}).")
    _on_path(path.parent)
    # A name derived from the absolute path keeps two files called tools.py apart.
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"adk_mcp_gateway_tools_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"Tool file {str(path)!r} cannot be imported as a Python module.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(f"Importing tool file {str(path)!r} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _import_module(name: str) -> ModuleType:
    # An installed console script has its own folder on sys.path, not the working directory.
    _on_path(Path(os.getcwd()))
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"Cannot import module {name!r} ({exc}). Check the spelling, install the package, or run from "
            "the directory that contains it."
        ) from exc
    except Exception as exc:
        raise ConfigError(f"Importing module {name!r} failed: {type(exc).__name__}: {exc}") from exc


def _is_path(module_part: str) -> bool:
    return module_part.endswith(".py") or "/" in module_part or "\\" in module_part


def _is_tool_object(value: object) -> bool:
    """Ours or google-adk's `BaseTool`/`BaseToolset` (an ADK agent is published only when named)."""
    return isinstance(value, BaseTool | BaseToolset) or adk_kind(value) in ("tool", "toolset")


def _func(tool: object) -> object:
    """The function a tool object wraps (`FunctionTool(f).func`, ours and google-adk's), or None."""
    return getattr(tool, "func", None) if _is_tool_object(tool) else None


def _wrapped_functions(values: list[object]) -> set[int]:
    """The ids of the functions the given tool objects wrap."""
    return {id(func) for value in values if (func := _func(value))}


def _held_tool_objects(values: list[object]) -> list[object]:
    """Tool objects the given values hold: in lists and tuples, and in google-adk agents' `tools` (sub-agents too)."""
    held: list[object] = []
    pending = list(values)
    seen: set[int] = set()
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, list | tuple):
            held.extend(item for item in cast("list[object] | tuple[object, ...]", value) if _is_tool_object(item))
        elif adk_kind(value) == "agent":
            tools: list[object] = getattr(value, "tools", None) or []
            sub_agents: list[object] = getattr(value, "sub_agents", None) or []
            held.extend(item for item in tools if _is_tool_object(item))
            pending.extend(sub_agents)
    return held


def _module_tools(module: ModuleType, reference: str) -> list[BaseTool | BaseToolset]:
    """The module's `__all__`, else the public functions it defines and the tool objects it holds.

    A function that a tool object of the same selection wraps is published through that tool only: a module with
    `def wipe(...)` and `wipe_tool = FunctionTool(wipe, require_confirmation=True)` publishes one tool, as the tool
    object configures it. A function wrapped by a tool object the module holds elsewhere (in a list, or in an ADK
    agent's `tools`) is published through that tool object, never bare: its confirmation would be lost.
    """
    exported: list[str] | None = getattr(module, "__all__", None)
    if exported is not None:
        chosen = [(name, getattr(module, name)) for name in exported]
    else:
        chosen = [
            (name, value)
            for name, value in vars(module).items()
            if not name.startswith("_")
            and (_is_tool_object(value) or (inspect.isfunction(value) and value.__module__ == module.__name__))
        ]
    wrapped = _wrapped_functions([value for _, value in chosen])
    holders = {id(func): tool for tool in _held_tool_objects(list(vars(module).values())) if (func := _func(tool))}
    chosen = [(name, holders.get(id(value), value)) for name, value in chosen if id(value) not in wrapped]
    found = [_coerce(value, f"{reference}:{name}") for name, value in chosen]
    if not found and exported is None:
        raise ConfigError(f"{reference!r} defines no public functions or tools to publish.")
    return found


def _coerce(value: object, reference: str) -> BaseTool | BaseToolset:
    try:
        return as_tool(value)
    except (ToolDefinitionError, MissingExtraError) as exc:
        raise ConfigError(f"{reference!r}: {exc}") from exc


def load_tools(reference: str) -> list[BaseTool | BaseToolset]:
    """Load the tools a reference names.

    `path/to/file.py` and `package.module` publish the module's `__all__`, or else every public function defined
    in it and every tool or toolset object it holds; `package.module:attr` publishes one callable, tool,
    toolset, or a list of them.

    Raises:
        ConfigError: the reference cannot be resolved; the message says what was found instead.
    """
    module_part, _, attr = reference.partition(":")
    module = _import_file(Path(module_part)) if _is_path(module_part) else _import_module(module_part)
    if not attr:
        return _module_tools(module, reference)
    if not hasattr(module, attr):
        public = sorted(name for name in vars(module) if not name.startswith("_"))
        raise ConfigError(
            f"{reference!r}: module {module_part!r} has no attribute {attr!r}. Public names there: "
            f"{', '.join(public) or '(none)'}."
        )
    value = getattr(module, attr)
    if isinstance(value, list | tuple):
        return [_coerce(item, f"{reference}[{index}]") for index, item in enumerate(value)]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    return [_coerce(value, reference)]


def load_object(reference: str) -> object:
    """The object `package.module:attr` (or `path/to/file.py:attr`) names.

    Raises:
        ConfigError: the module cannot be imported or has no such attribute.
    """
    module_part, _, attr = reference.rpartition(":")
    module = _import_file(Path(module_part)) if _is_path(module_part) else _import_module(module_part)
    if not attr or not hasattr(module, attr):
        raise ConfigError(f"{reference!r}: module {module_part!r} has no attribute {attr!r}.")
    return getattr(module, attr)


def load_agent(reference: str) -> BaseTool | BaseToolset:
    """Load the google-adk agent `package.module:attr` (or `path/to/file.py:attr`) as one tool that runs it.

    Raises:
        MissingExtraError: google-adk is not installed (the message names the extra).
        ConfigError: the reference cannot be resolved or is not a google-adk agent.
    """
    require_adk(f"Serving the agent {reference!r}")
    module_part, _, attr = reference.partition(":")
    if not attr:
        raise ConfigError(f"{reference!r}: name the agent as 'package.module:attr' or 'path/to/file.py:attr'.")
    module = _import_file(Path(module_part)) if _is_path(module_part) else _import_module(module_part)
    value = getattr(module, attr, None)
    if adk_kind(value) != "agent":
        raise ConfigError(
            f"{reference!r} is {type(value).__name__ if hasattr(module, attr) else 'missing'}, not a google-adk "
            "agent (an LlmAgent or another BaseAgent); use --tools for functions, tools and toolsets."
        )
    return from_adk(value)
