"""`SignInTool`: the one tool a toolset offers a user who has not signed in to its source yet.

A source that answers only a signed-in user (an MCP server behind OAuth authorization code) cannot say which tools
it has until the user signs in, and may show each user other tools. So the toolset offers a user without a
credential this tool alone (`sign_in`, prefixed like the toolset's tools). Calling it asks for the credential the
ADK way (`tool_context.request_credential`): a server signs the user in through a URL elicitation and runs it
again, an ADK agent's app sees `adk_request_credential`. Once signed in, it answers with the tools now there, and
the toolset lists them in place of this one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from gateway.tools.auth_config import AuthConfig
from gateway.tools.base_tool import FixedSchemaTool
from gateway.tools.context import ReadonlyContext, ToolContext

__all__ = ["SIGN_IN", "SignInTool"]

SIGN_IN: Final = "sign_in"

ToolNames = Callable[[ReadonlyContext], Awaitable[list[str]]]
"""The names of the tools the source offers in a context that holds the user's credential."""


class SignInTool(FixedSchemaTool):
    """Signs the calling user in to `source` (see the module docstring).

    Args:
        auth_config: what to sign in with (its `credential_key` names the credential).
        source: the source, for the description (e.g. the upstream's URL).
        tool_names: the tools the source offers once the user has signed in.
    """

    def __init__(self, auth_config: AuthConfig, source: str, tool_names: ToolNames) -> None:
        super().__init__(
            name=SIGN_IN,
            description=(
                f"Sign in to {source}. Its tools are listed only after the user has signed in: call this when the "
                "user wants anything done there; the user is sent to a sign-in page, and the answer lists the "
                "tools then available."
            ),
            parameters={"type": "object", "properties": {}},
        )
        self.auth_config = auth_config
        self._source = source
        self._tool_names = tool_names

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any]:
        """Ask for the user's credential; once there is one, name the tools it opens."""
        del args
        if tool_context.get_auth_response(self.auth_config) is None:
            tool_context.request_credential(self.auth_config)
            return {"pending": f"Waiting for the user to sign in to {self._source}."}
        names = await self._tool_names(tool_context)
        return {"signed_in": self._source, "tools": names}
