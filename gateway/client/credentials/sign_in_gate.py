"""`SignInGate`: what an `McpToolset` whose upstream needs each user's sign-in offers a user, signed in or not.

A user without a usable credential (never signed in, or the upstream refused their token) is offered the
`sign_in` tool alone (`gateway.tools.auth_sign_in`): the upstream lists its tools only to a signed-in user, and
they may differ per user, so nothing is listed on anyone else's behalf. A call of a tool the same user listed
before still finds that tool, so a refused token leads to a new sign-in within that call (the tool asks with
`request_credential`) instead of an unknown-tool error.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Final

from gateway.client.credentials.adk_scheme import UserSignIn
from gateway.errors import UpstreamUnavailableError
from gateway.tools import BaseTool, ReadonlyContext
from gateway.tools.auth_sign_in import SIGN_IN, SignInTool, ToolNames

__all__ = ["SignInGate"]

_USERS_KEPT: Final = 1024
"""Users whose last listing is remembered (the least recent go first)."""


class SignInGate:
    """The sign-in tool of one toolset, and the tools each user last listed (see the module docstring).

    Args:
        sign_in: the toolset's user credential.
        source: the upstream, for the tool's description.
        tool_names: the toolset's tool names in a context that holds the user's credential.
    """

    def __init__(self, sign_in: UserSignIn, source: str, tool_names: ToolNames) -> None:
        self._sign_in = sign_in
        self.tool = SignInTool(sign_in.auth_config, source, tool_names)
        self._listed: OrderedDict[str, dict[str, BaseTool]] = OrderedDict()

    def signed_out(self, context: ReadonlyContext | None) -> bool:
        """Whether the user of `context` has yet to sign in (a context-less listing is the toolset's own)."""
        return context is not None and not self._sign_in.signed_in(context)

    def remember(self, context: ReadonlyContext | None, tools: list[BaseTool]) -> None:
        """Note the tools a user was just listed."""
        user = self._sign_in.identity(context)
        self._listed[user] = {tool.name: tool for tool in tools}
        self._listed.move_to_end(user)
        if len(self._listed) > _USERS_KEPT:
            self._listed.popitem(last=False)

    async def for_call(
        self, context: ReadonlyContext | None, listing: Callable[[], Awaitable[list[BaseTool]]]
    ) -> list[BaseTool]:
        """The tools a call can name: the upstream's (`listing`) and `sign_in` (a 2026-07-28 client's next round
        of the `sign_in` call that signed the user in); for a signed-out user, `sign_in` and the tools they were
        listed before.

        Raises:
            UpstreamUnavailableError: `listing` failed, and not because the upstream refused the user's token.
        """
        if not self.signed_out(context):
            try:
                tools = await listing()
            except UpstreamUnavailableError:
                if not self.signed_out(context):
                    raise
                # The upstream refused the user's token just now: a new sign-in, within the call.
            else:
                return tools if any(tool.name == SIGN_IN for tool in tools) else [*tools, self.tool]
        known = self._listed.get(self._sign_in.identity(context), {})
        return [self.tool, *(tool for name, tool in known.items() if name != SIGN_IN)]
