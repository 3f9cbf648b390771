"""The `_meta` keys this project adds to MCP messages (all under the `adk-mcp-gateway/` prefix).

One home for them: the server writes them, the client and the gateway read them.
"""

from __future__ import annotations

from typing import Final

__all__ = ["LONG_RUNNING_META_KEY", "RAW_OUTPUT_META_KEY", "RETRY_AFTER_META_KEY", "SESSION_META_KEY"]

LONG_RUNNING_META_KEY: Final = "adk-mcp-gateway/longRunning"
"""On a tool: its calls report intermediate progress and may take long."""

RAW_OUTPUT_META_KEY: Final = "adk-mcp-gateway/rawOutputSchema"
"""On a tool: the response schema as declared, when the published `outputSchema` had to be wrapped or dropped."""

RETRY_AFTER_META_KEY: Final = "adk-mcp-gateway/retryAfterSeconds"
"""On a `tools/call` result refused by a rate limit (`isError`): seconds until a retry would be accepted."""

SESSION_META_KEY: Final = "adk-mcp-gateway/session"
"""On a request: a client-chosen session key (state and isolated upstream sessions follow it)."""
