"""The bridge to real google-adk, both ways. Needs the `adk` extra: `pip install "adk-mcp-gateway[adk]"`.

- `from_adk(obj)`: a google-adk `BaseTool`, `BaseToolset` or agent as one of our tools or toolsets, so that a
  `ToolServer` publishes it over MCP. `serve --tools`, `serve --agent`, `ToolServer(tools=[...])` and a config's
  `tools` call it for you on any google-adk object they are given.
- `to_adk(obj)`: one of our tools or toolsets (an `McpToolset` above all) as a google-adk `BaseTool` or
  `BaseToolset`, which an `LlmAgent(tools=[...])` accepts.

This package is the only part of the project that imports google-adk, and it does so only when one of these
functions is called: without the extra everything else works, and these raise `MissingExtraError` saying what to
install. `adk_kind` recognises a google-adk object without importing google-adk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.adk._kind import MODEL_SIDE_HINT, AdkKind, adk_kind, is_code_executor, is_memory_service
from gateway.errors import MissingExtraError

if TYPE_CHECKING:
    from gateway.tools import BaseTool, BaseToolset

__all__ = [
    "INSTALL_HINT",
    "MODEL_SIDE_HINT",
    "AdkKind",
    "adk_kind",
    "from_adk",
    "is_code_executor",
    "is_memory_service",
    "require_adk",
    "to_adk",
]

INSTALL_HINT = 'pip install "adk-mcp-gateway[adk]"'


def require_adk(what: str) -> None:
    """Check that google-adk can be imported.

    Raises:
        MissingExtraError: it cannot; the message names `what` needs it and the pip command that installs it.
    """
    try:
        import google.adk  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError as exc:
        raise MissingExtraError(
            f"{what} needs google-adk, which is not installed ({exc}). Install the adk extra: {INSTALL_HINT}"
        ) from exc


def from_adk(obj: object) -> BaseTool | BaseToolset:
    """A google-adk tool, toolset or agent as one of our tools or toolsets, ready to be served.

    A `BaseTool` runs through its own `run_async` with a real google-adk `ToolContext` over the MCP session's
    state; a `BaseToolset` offers its tools that way; an agent becomes one tool taking a `request` string, run by
    an ADK `Runner` whose session is the MCP session.

    Raises:
        MissingExtraError: google-adk is not installed.
        ToolDefinitionError: `obj` is a tool without a function declaration, such as `google_search`, which the
            model runs itself (`MODEL_SIDE_HINT`).
        TypeError: `obj` is not a google-adk tool, toolset or agent.
    """
    require_adk("from_adk()")
    from gateway.adk._bridge import from_adk as convert

    return convert(obj)


def to_adk(obj: object) -> Any:
    """One of our tools or toolsets as a google-adk `BaseTool` or `BaseToolset`, for `LlmAgent(tools=[...])`.

    Typed `Any` because google-adk is optional here; the result is a `gateway.adk.lent_tools.LentTool` or
    `LentToolset`. An `McpToolset` gives the agent what ADK's own lacks: both protocol eras, separate connect and
    call timeouts, reconnection that never retries a call, cached listings refreshed on `list_changed`, and its
    server's confirmations (elicitation) as ADK's native `adk_request_confirmation`.

    Raises:
        MissingExtraError: google-adk is not installed.
        TypeError: `obj` is not one of our `BaseTool`s or `BaseToolset`s.
    """
    require_adk("to_adk()")
    from gateway.adk._bridge import to_adk as convert

    return convert(obj)
