"""google-adk's built-in `exit_loop` (it sets `escalate` and `skip_summarization`), to be served over MCP."""

from __future__ import annotations

from google.adk.tools import FunctionTool, exit_loop

exit_loop_tool = FunctionTool(exit_loop)
