"""The `_meta` keys this project adds to MCP messages (all under the `adk-mcp-gateway/` prefix).

One home for them: the server writes them, the client and the gateway read them.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ARTIFACT_DELTA_META_KEY",
    "ESCALATE_META_KEY",
    "LONG_RUNNING_META_KEY",
    "RAW_OUTPUT_META_KEY",
    "RETRY_AFTER_META_KEY",
    "SERVER_CARD_AUTH_META_KEY",
    "SESSION_META_KEY",
    "SKIP_SUMMARIZATION_META_KEY",
    "TRANSFER_REASON_META_KEY",
    "TRANSFER_TO_AGENT_META_KEY",
]

LONG_RUNNING_META_KEY: Final = "adk-mcp-gateway/longRunning"
"""On a tool: its calls report intermediate progress and may take long."""

RAW_OUTPUT_META_KEY: Final = "adk-mcp-gateway/rawOutputSchema"
"""On a tool: the response schema as declared, when the published `outputSchema` had to be wrapped or dropped."""

RETRY_AFTER_META_KEY: Final = "adk-mcp-gateway/retryAfterSeconds"
"""On a `tools/call` result refused by a rate limit (`isError`): seconds until a retry would be accepted."""

SERVER_CARD_AUTH_META_KEY: Final = "adk-mcp-gateway/auth"
"""On the HTTP front's server card (SEP-2127), whose schema has no field for it: how a client authenticates
(`required`, `schemes`; with OAuth `protectedResourceMetadata`, `authorizationServers`, `scopes`)."""

SESSION_META_KEY: Final = "adk-mcp-gateway/session"
"""On a request: a client-chosen session key (state and isolated upstream sessions follow it). On the `tools/call`
result of an anonymous sessionless caller: the key the server issued for the call's session, which the client may
echo on its next requests to continue that session."""

# The EventActions a tool call can set that a caller's agent acts on, on a `tools/call` result. Each is present only
# when the tool set it; an MCP client that does not know them ignores them (`adapters.event_actions` translates).

TRANSFER_TO_AGENT_META_KEY: Final = "adk-mcp-gateway/transferToAgent"
"""On a `tools/call` result: the agent the conversation goes to next (ADK's `actions.transfer_to_agent`), a string."""

TRANSFER_REASON_META_KEY: Final = "adk-mcp-gateway/transferReason"
"""On a `tools/call` result: why it is handed over (ADK's `actions.transfer_reason`), a string."""

ESCALATE_META_KEY: Final = "adk-mcp-gateway/escalate"
"""On a `tools/call` result: the agent hands control back to its parent, e.g. a loop ends (ADK's `actions.escalate`)."""

SKIP_SUMMARIZATION_META_KEY: Final = "adk-mcp-gateway/skipSummarization"
"""On a `tools/call` result: show the result as it is, without a model turn about it (ADK's
`actions.skip_summarization`)."""

ARTIFACT_DELTA_META_KEY: Final = "adk-mcp-gateway/artifactDelta"
"""On a `tools/call` result: the artifacts the call saved, `{filename: version}` (ADK's `actions.artifact_delta`);
they live in the serving side's artifact service."""
