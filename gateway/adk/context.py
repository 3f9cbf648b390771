"""A call's context both ways: a real google-adk `ToolContext` over one of ours, and one of ours over ADK's.

Serving an ADK tool, the ADK context's session is the MCP session: its state is the session's state as our server
loaded it from the store (all four scopes), and what the tool asks for afterwards (state delta, confirmation,
skipped summarization, a transfer, an escalation) is copied back onto our context, which the server writes to the
store, turns into elicitation and into its result's `_meta` keys. Handing our tool to an ADK agent, the same copy
runs the other way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.live_request_queue import LiveRequestQueue
from google.adk.agents.readonly_context import ReadonlyContext as AdkReadonlyContext
from google.adk.artifacts import BaseArtifactService
from google.adk.auth.auth_credential import AuthCredential as AdkAuthCredential
from google.adk.memory import BaseMemoryService
from google.adk.sessions import BaseSessionService, Session
from google.adk.tools.tool_confirmation import ToolConfirmation as AdkToolConfirmation
from google.adk.tools.tool_context import ToolContext as AdkToolContext

from gateway.adk._lent_context import LentToolContext
from gateway.adk.artifact_service import AdkArtifactService, RunnerArtifacts
from gateway.adk.auth import auth_config_from_adk, auth_config_to_adk, auth_credential_from_adk, auth_credential_to_adk
from gateway.adk.memory_bridge import RunnerMemory, adk_memory_service
from gateway.tools import AuthCredential, ClientFeatures, ReadonlyContext, State, ToolConfirmation, ToolContext

__all__ = [
    "adk_credentials",
    "adk_readonly_context",
    "adk_tool_context",
    "copy_agent_actions",
    "gateway_readonly_context",
    "gateway_tool_context",
    "settle_in_adk",
    "settle_in_gateway",
]

_SESSIONLESS = "mcp"
"""The ADK session id of a context that names no session (a tool run outside any MCP session)."""


def _invocation(
    context: ReadonlyContext,
    state: Mapping[str, Any],
    sessions: BaseSessionService,
    *,
    streaming: bool = False,
    memory: BaseMemoryService | None = None,
    artifacts: BaseArtifactService | None = None,
) -> InvocationContext:
    session = Session(
        id=context.session_id or _SESSIONLESS, app_name=context.app_name, user_id=context.user_id, state=dict(state)
    )
    return InvocationContext(
        session_service=sessions,
        memory_service=memory,
        artifact_service=artifacts,
        invocation_id=context.invocation_id,
        session=session,
        live_request_queue=LiveRequestQueue() if streaming else None,
    )


def adk_readonly_context(context: ReadonlyContext | None, sessions: BaseSessionService) -> AdkReadonlyContext | None:
    """An ADK `ReadonlyContext` over the same session and state (for a toolset's filter and headers)."""
    if context is None:
        return None
    return AdkReadonlyContext(_invocation(context, context.state, sessions))


class _ServedToolContext(AdkToolContext):
    """google-adk's `ToolContext` whose credential requests and answers go to our context (and so to our server).

    ADK's own `request_credential` strips the OAuth2 client secret from what it records (in ADK it travels to the
    client); served, the request stays in the server, which needs the secret to exchange the code.
    """

    def __init__(self, *args: Any, gateway_context: ToolContext, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gateway_context = gateway_context

    def request_credential(self, auth_config: Any) -> None:
        """Record the request on our context (see `gateway.tools.ToolContext.request_credential`)."""
        self._gateway_context.request_credential(auth_config_from_adk(auth_config))

    def get_auth_response(self, auth_config: Any) -> Any:
        """The user's credential our server holds for `auth_config`, else what ADK finds in state."""
        found = self._gateway_context.get_auth_response(auth_config_from_adk(auth_config))
        return auth_credential_to_adk(found) if found is not None else super().get_auth_response(auth_config)


def adk_tool_context(context: ToolContext, sessions: BaseSessionService, *, streaming: bool = False) -> AdkToolContext:
    """A real google-adk `ToolContext` for one call: same session, state, call id, confirmation and credentials.

    `streaming` makes it a live (streaming) invocation, in which a google-adk `FunctionTool` over a generator
    function hands its generator back from `run_async` instead of running it as a workflow node.
    """
    confirmation = context.tool_confirmation
    return _ServedToolContext(
        _invocation(
            context,
            context.state.to_dict(),
            sessions,
            streaming=streaming,
            memory=adk_memory_service(context.memory_service, app_name=context.app_name),
            artifacts=None if context.artifact_service is None else AdkArtifactService(context.artifact_service),
        ),
        gateway_context=context,
        function_call_id=context.function_call_id,
        tool_confirmation=None
        if confirmation is None
        else AdkToolConfirmation(
            hint=confirmation.hint, confirmed=confirmation.confirmed, payload=confirmation.payload
        ),
    )


def settle_in_gateway(adk_context: AdkToolContext, context: ToolContext) -> None:
    """Copy what an ADK tool asked for onto our context: state writes, confirmation and credential requests, and
    the actions its caller's agent acts on."""
    actions = adk_context.actions
    for key, value in actions.state_delta.items():
        context.state[key] = value
    for call_id, requested in actions.requested_auth_configs.items():
        # Set on the actions directly rather than through `request_credential` (which ours records already).
        if call_id not in context.actions.requested_auth_configs:
            context.request_credential(auth_config_from_adk(requested))
    for request in actions.requested_tool_confirmations.values():
        context.request_confirmation(hint=request.hint, payload=request.payload)
    copy_agent_actions(actions, context.actions)


def copy_agent_actions(source: Any, target: Any) -> None:
    """Copy the actions a caller's agent acts on (skip_summarization, transfer_to_agent and its reason, escalate,
    artifact_delta) from one `EventActions` to another, ours or google-adk's; what `source` left unset stays."""
    if source.skip_summarization:
        target.skip_summarization = True
    if source.transfer_to_agent:
        target.transfer_to_agent = source.transfer_to_agent
        target.transfer_reason = source.transfer_reason or target.transfer_reason
    if source.escalate:
        target.escalate = True
    target.artifact_delta.update(source.artifact_delta)


def adk_credentials(adk_context: AdkReadonlyContext, keys: Iterable[str]) -> dict[str, AuthCredential]:
    """The credentials ADK resolved for `keys` in this context, as ours.

    ADK's toolset auth resolves a toolset's credential before listing (`get_credential`); an auth response ADK
    stored for a call is in the session state under `temp:<key>` (then `<key>`). One without a token is left out.
    """
    found: dict[str, AuthCredential] = {}
    for key in keys:
        candidates: list[Any] = [adk_context.get_credential(key)]
        candidates += [adk_context.state.get(name) for name in (State.TEMP_PREFIX + key, key)]
        for candidate in candidates:
            credential = AdkAuthCredential.model_validate(candidate) if isinstance(candidate, dict) else candidate
            if isinstance(credential, AdkAuthCredential) and _has_token(credential):
                found[key] = auth_credential_from_adk(credential)
                break
    return found


def _has_token(credential: AdkAuthCredential) -> bool:
    if credential.oauth2 is not None:
        return bool(credential.oauth2.access_token)
    return credential.api_key is not None or credential.http is not None


def gateway_readonly_context(
    adk_context: AdkReadonlyContext | None, credential_keys: Iterable[str] = ()
) -> ReadonlyContext | None:
    """Our `ReadonlyContext` over an ADK one's session and state (and the credentials ADK resolved for
    `credential_keys`)."""
    if adk_context is None:
        return None
    session = adk_context.session
    return ReadonlyContext(
        credentials=adk_credentials(adk_context, credential_keys),
        state=dict(adk_context.state),
        app_name=session.app_name,
        user_id=session.user_id,
        session_id=session.id,
        invocation_id=adk_context.invocation_id,
        agent_name=adk_context.agent_name,
    )


def gateway_tool_context(
    adk_context: AdkToolContext, client: ClientFeatures, credential_keys: Iterable[str] = ()
) -> ToolContext:
    """Our `ToolContext` for a call an ADK agent makes: the ADK session's state, call id and confirmation (and
    the credentials ADK resolved for `credential_keys`)."""
    confirmation = adk_context.tool_confirmation
    session = adk_context.session
    return LentToolContext(
        adk_context,
        credentials=adk_credentials(adk_context, credential_keys),
        state=State(adk_context.state.to_dict()),
        function_call_id=adk_context.function_call_id,
        tool_confirmation=None
        if confirmation is None
        else ToolConfirmation(hint=confirmation.hint, confirmed=confirmation.confirmed, payload=confirmation.payload),
        client=client,
        memory_service=RunnerMemory(adk_context),
        artifact_service=RunnerArtifacts(adk_context),
        app_name=session.app_name,
        user_id=session.user_id,
        session_id=session.id,
        invocation_id=adk_context.invocation_id,
        agent_name=adk_context.agent_name,
    )


def settle_in_adk(context: ToolContext, adk_context: AdkToolContext) -> None:
    """Copy what our tool asked for onto the ADK context, where ADK's flow acts on it."""
    actions = context.actions
    for key, value in actions.state_delta.items():
        adk_context.state[key] = value
    for request in actions.requested_tool_confirmations.values():
        adk_context.request_confirmation(hint=request.hint, payload=request.payload)
    for requested in actions.requested_auth_configs.values():
        # ADK's own request: it adds the authorization URL, and its flow emits `adk_request_credential`.
        adk_context.request_credential(auth_config_to_adk(requested))
    copy_agent_actions(actions, adk_context.actions)
