"""`LongRunningFunctionTool`: a function tool whose intermediate updates reach the caller as progress."""

from __future__ import annotations

from adapters import FunctionDeclaration
from gateway.tools.function_tool import FunctionTool

__all__ = ["LONG_RUNNING_NOTE", "LongRunningFunctionTool"]

LONG_RUNNING_NOTE = (
    "NOTE: This is a long-running operation. Do not call this tool again if it has already returned some "
    "intermediate or pending status."
)
"""ADK's sentence appended to a long-running tool's description."""


class LongRunningFunctionTool(FunctionTool):
    """A function tool for work that takes a while (ADK's `LongRunningFunctionTool`).

    `func` may be a plain (sync or async) function or a generator: the generator's return value, or else its last
    yielded value, is the result, and every other value it yields is delivered to `tool_context.progress_sink`
    (the MCP server turns each into `notifications/progress`) — a progress report (`{"progress": n, ...}`) as it
    happens, any other value once the generator goes on past it (`gateway.tools.tool_updates`). google-adk 2.13
    gives the same result for every generator it can run: it takes the one yield as the result, drops a return
    value and fails on a second yield (its docs promise the return value, even None).
    """

    _long_running = True

    def _get_declaration(self) -> FunctionDeclaration:
        declaration = super()._get_declaration()
        description = declaration.description
        noted = f"{description}\n\n{LONG_RUNNING_NOTE}" if description else LONG_RUNNING_NOTE
        return declaration.model_copy(update={"description": noted})
