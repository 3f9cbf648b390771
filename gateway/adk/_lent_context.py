"""Our `ToolContext` for a call a google-adk agent makes, whose credential answers come from ADK.

ADK keeps an OAuth2 client secret out of the credential request it sends its client app and out of the session
state; the app answers with the redirect the user's sign-in landed on, and ADK's own `get_auth_response` exchanges
that code for a token with the secret from the tool's `AuthConfig`. Our tool asks the same way, so its context asks
ADK, as google-adk's own tools do.
"""

from __future__ import annotations

from typing import Any

from google.adk.tools.tool_context import ToolContext as AdkToolContext

from gateway.adk.auth import auth_config_to_adk, auth_credential_from_adk
from gateway.tools import AuthConfig, AuthCredential, ToolContext

__all__ = ["LentToolContext"]


class LentToolContext(ToolContext):
    """Our `ToolContext` over a google-adk one (see the module docstring); `kwargs` are `ToolContext`'s."""

    def __init__(self, adk_context: AdkToolContext, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._adk_context = adk_context

    def get_auth_response(self, auth_config: AuthConfig) -> AuthCredential | None:
        """The user's credential as ADK's own tools get it (an answered OAuth2 code exchanged with the client secret
        of `auth_config`), else what this context holds (`ToolContext.get_auth_response`)."""
        config = AuthConfig.model_validate(auth_config)
        answered = self._adk_context.get_auth_response(auth_config_to_adk(config))
        if answered is not None:
            return auth_credential_from_adk(answered)
        return super().get_auth_response(config)
