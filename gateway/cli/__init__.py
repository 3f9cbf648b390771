"""The `adk-mcp-gateway` command line (`serve`, `tools`, `call`, `check`).

Exit codes: 0 success; 1 a runtime failure (an upstream that does not work, a tool call that returned an error);
2 bad usage, configuration or tool reference; 130 interrupted.
"""

from gateway.cli._main import main

__all__ = ["main"]
