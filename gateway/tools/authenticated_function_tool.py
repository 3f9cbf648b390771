"""`AuthenticatedFunctionTool`: a function tool that runs only with its user's credential (ADK's, same arguments)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.tools.auth_config import AuthConfig
from gateway.tools.auth_credential import AuthCredential, AuthCredentialTypes
from gateway.tools.context import ToolContext
from gateway.tools.function_tool import FunctionTool

__all__ = ["AuthenticatedFunctionTool"]

PENDING_AUTHORIZATION = "Pending User Authorization."


def _ready(credential: AuthCredential | None) -> bool:
    """Whether a configured credential is usable as it is (an API key, an HTTP token or password)."""
    if credential is None:
        return False
    if credential.auth_type is AuthCredentialTypes.API_KEY:
        return bool(credential.api_key)
    if credential.auth_type is AuthCredentialTypes.HTTP and credential.http is not None:
        return bool(credential.http.credentials.token or credential.http.credentials.password)
    return False


class AuthenticatedFunctionTool(FunctionTool):
    """A `FunctionTool` whose function gets the user's credential in its `credential` parameter.

    Without a credential yet, the call requests one (`tool_context.request_credential(auth_config)`) and answers
    `response_for_auth_required` (ADK's default: "Pending User Authorization."); served over MCP, the server then
    signs the user in and runs the call again. A credential already complete in `auth_config.raw_auth_credential`
    (an API key the tool configures) is used as it is. The `credential` parameter is hidden from the model.

    Args:
        func: the function; it may take `credential: AuthCredential` and `tool_context`.
        auth_config: what to ask for; None runs the function unauthenticated (`credential=None`).
        response_for_auth_required: the answer while the user has not signed in.
    """

    _passed_parameters = frozenset({"credential"})

    def __init__(
        self,
        *,
        func: Callable[..., Any],
        auth_config: AuthConfig | None = None,
        response_for_auth_required: dict[str, Any] | str | None = None,
    ) -> None:
        super().__init__(func)
        self.auth_config = auth_config
        self.response_for_auth_required = response_for_auth_required

    @property
    def needs_credentials(self) -> bool:
        """Whether the tool asks its user for a credential (it has an `auth_config` that is not complete)."""
        return self.auth_config is not None and not _ready(self.auth_config.raw_auth_credential)

    @property
    def uses_state(self) -> bool:
        """Yes when it asks for credentials: the credential request travels on the call's context."""
        return self.auth_config is not None or super().uses_state

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext | None) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Run the function with the credential, or request one and answer that the user must sign in."""
        context = ToolContext() if tool_context is None else tool_context
        credential: AuthCredential | None = None
        config = self.auth_config
        if config is not None:
            raw = config.raw_auth_credential
            credential = raw.model_copy(deep=True) if raw is not None and _ready(raw) else None
            credential = credential or context.get_auth_response(config)
            if credential is None:
                context.request_credential(config)
                return self.response_for_auth_required or PENDING_AUTHORIZATION
        return await super().run_async(args={**args, "credential": credential}, tool_context=context)
