"""The context a tool runs with: `ReadonlyContext` and `ToolContext`, shaped like ADK's.

A `ToolContext` carries the scoped state, the actions a call requests (confirmation, state and artifact
deltas), artifacts, and a seam through which the MCP server lends the tool its client's features (progress,
logging, elicitation, sampling). Outside a server those features raise `ServiceNotConfiguredError` naming
what is missing.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, Required, TypedDict, Unpack

from mcp import types
from pydantic import BaseModel

from gateway.errors import ServiceNotConfiguredError
from gateway.tools.actions import EventActions, ToolConfirmation
from gateway.tools.artifacts import Artifact, ArtifactService, ArtifactVersion
from gateway.tools.auth_config import AuthConfig
from gateway.tools.auth_credential import AuthCredential
from gateway.tools.memory_service import (
    NO_MEMORY_SERVICE,
    MemoryEntry,
    MemoryService,
    SearchMemoryResponse,
    memory_entry,
)
from gateway.tools.state import State

__all__ = [
    "ClientFeatures",
    "InputRequired",
    "ProgressLog",
    "ProgressSink",
    "ReadonlyContext",
    "SamplingOptions",
    "SessionFields",
    "ToolContext",
]

DEFAULT_APP_NAME = "adk-mcp-gateway"
DEFAULT_USER_ID = "local"


class InputRequired(Exception):
    """Raised by `ClientFeatures.elicit`/`sample` when the answer must come in a later round (MCP 2026-07-28).

    The server ends the call with an `InputRequiredResult`; the client answers and retries, and the tool runs
    again from the start, this time receiving the answer.
    """

    def __init__(self, key: str, request: types.ElicitRequest | types.CreateMessageRequest) -> None:
        super().__init__(key)
        self.key = key
        self.request = request


class ProgressSink(Protocol):
    """Receives each intermediate update a long-running tool yields (the server maps them to MCP progress)."""

    async def __call__(self, update: Any, /) -> None: ...


class ProgressLog:
    """The default progress sink: keeps the updates in order, for callers that read them afterwards."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def __call__(self, update: Any, /) -> None:
        self.updates.append(update)


class SamplingOptions(TypedDict, total=False):
    """The keywords of `ClientFeatures.sample` after its messages, for an implementation that passes them on whole
    (as `sampling/createMessage` parameters)."""

    max_tokens: Required[int]
    system_prompt: str | None
    temperature: float | None


class ClientFeatures(Protocol):
    """What the MCP client on the other end of a call can do for a tool; filled in by the server."""

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send `notifications/progress` for the current call."""
        ...

    async def log(self, level: types.LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client."""
        ...

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> types.ElicitResult:
        """Ask the user for (flat) input through the client."""
        ...

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> types.ElicitResult:
        """Send the user to a URL for an out-of-band interaction (a sign-in, a payment) through the client."""
        ...

    async def sample(
        self,
        messages: list[types.SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
    ) -> types.CreateMessageResult:
        """Ask the client's model for a completion."""
        ...


def _as_state(state: State | Mapping[str, Any] | None) -> State:
    """A `State` over `state`; a plain dict is written through, as ADK's state writes to the session's."""
    if isinstance(state, State):
        return state
    if isinstance(state, dict):
        return State(state)
    return State(dict(state or {}))


class SessionFields(TypedDict, total=False):
    """The keywords of `ReadonlyContext` (see its defaults), which a `ToolContext` takes too and passes on."""

    state: State | Mapping[str, Any] | None
    app_name: str
    user_id: str
    session_id: str
    invocation_id: str | None
    agent_name: str
    credentials: Mapping[str, AuthCredential] | None


class ReadonlyContext:
    """What a toolset or a predicate may read about the current session (ADK's `ReadonlyContext`)."""

    def __init__(
        self,
        *,
        state: State | Mapping[str, Any] | None = None,
        app_name: str = DEFAULT_APP_NAME,
        user_id: str = DEFAULT_USER_ID,
        session_id: str = "",
        invocation_id: str | None = None,
        agent_name: str = "",
        credentials: Mapping[str, AuthCredential] | None = None,
    ) -> None:
        self._state = _as_state(state)
        self._credentials: Mapping[str, AuthCredential] = {} if credentials is None else credentials
        self.app_name = app_name
        self.user_id = user_id
        self.session_id = session_id
        self.invocation_id = invocation_id or f"e-{uuid.uuid4()}"
        self.agent_name = agent_name

    @property
    def state(self) -> Mapping[str, Any]:
        """The session's state, read-only."""
        return self._state.readonly_view()

    def get_credential(self, key: str) -> AuthCredential | None:
        """The user's credential under `key` resolved for this context (ADK's `ReadonlyContext.get_credential`):
        served over MCP, the one stored for the calling principal; lent to an ADK agent, the one ADK resolved."""
        found = self._credentials.get(key)
        return None if found is None else found.model_copy(deep=True)


class ToolContext(ReadonlyContext):
    """Everything a tool call can see and ask for (ADK's `ToolContext`); `session` are `ReadonlyContext`'s keywords."""

    def __init__(
        self,
        *,
        function_call_id: str | None = None,
        tool_confirmation: ToolConfirmation | None = None,
        actions: EventActions | None = None,
        artifact_service: ArtifactService | None = None,
        memory_service: MemoryService | None = None,
        client: ClientFeatures | None = None,
        progress_sink: ProgressSink | None = None,
        **session: Unpack[SessionFields],
    ) -> None:
        super().__init__(**session)
        self.function_call_id: str | None = function_call_id or f"adk-{uuid.uuid4()}"
        self.tool_confirmation = tool_confirmation
        self._actions = EventActions() if actions is None else actions
        self._artifact_service = artifact_service
        self._memory_service = memory_service
        self._client = client
        self.progress_sink: ProgressSink = ProgressLog() if progress_sink is None else progress_sink

    @property
    def state(self) -> State:  # pyright: ignore[reportIncompatibleMethodOverride]
        """The delta-tracking state: session keys, `user:`, `app:` and `temp:` keys."""
        return self._state

    @property
    def actions(self) -> EventActions:
        """The actions this call requests.

        `state_delta` includes every state write and in-place change to a value read from state; keys a caller
        put in `state_delta` directly are kept.
        """
        self._actions.state_delta.update(self._state.delta)
        return self._actions

    def _where(self) -> dict[str, str]:
        """The keywords naming this call's session to a service (its app, user and session)."""
        return {"app_name": self.app_name, "user_id": self.user_id, "session_id": self.session_id}

    # --- confirmation ---------------------------------------------------------------------------------------

    def request_confirmation(self, *, hint: str | None = None, payload: Any | None = None) -> None:
        """Ask a human to confirm this call before it runs; the result should say it awaits approval.

        Raises:
            ValueError: `function_call_id` is None, so there is no call to attach the request to.
        """
        if not self.function_call_id:
            raise ValueError("function_call_id is not set: a confirmation must belong to one function call.")
        self._actions.requested_tool_confirmations[self.function_call_id] = ToolConfirmation(
            hint=hint or "", payload=payload
        )

    # --- credentials ----------------------------------------------------------------------------------------

    def request_credential(self, auth_config: AuthConfig) -> None:
        """Ask for the user's credential for `auth_config`; the tool then returns, and is run again once there is one.

        As in ADK, the tool does not wait: it returns a "needs sign-in" result, and whoever runs it asks the user
        (served over MCP: a URL elicitation to sign in, or a form for an API key or token) and runs the call again,
        when `get_auth_response` has the credential.

        Args:
            auth_config: ours, or google-adk's own `AuthConfig` (converted).

        Raises:
            ValueError: `function_call_id` is None, so there is no call to attach the request to.
        """
        if not self.function_call_id:
            raise ValueError(
                "request_credential requires function_call_id: a credential request must belong to one function call."
            )
        # A google-adk AuthConfig is converted (copied either way: the tool may change its own afterwards).
        self._actions.requested_auth_configs[self.function_call_id] = AuthConfig.model_validate(
            auth_config.model_dump(by_alias=True, mode="json", exclude_none=True)
        )

    def get_auth_response(self, auth_config: AuthConfig) -> AuthCredential | None:
        """The user's credential for `auth_config` (by its `credential_key`), or None if there is none yet.

        Served over MCP, that is the credential stored for the calling principal (refreshed when it had expired);
        otherwise, as in ADK, a credential an ADK flow put in state under `temp:<credential_key>` or
        `<credential_key>`.
        """
        key = AuthConfig.model_validate(auth_config).credential_key
        if not key:
            return None
        found = self.get_credential(key)
        if found is not None:
            return found
        for name in (State.TEMP_PREFIX + key, key):
            value = self._state.get(name)
            if isinstance(value, AuthCredential):
                return value.model_copy(deep=True)
            # A dict, or google-adk's own AuthCredential (what ADK stores once its user answered).
            if isinstance(value, dict | BaseModel):
                return AuthCredential.model_validate(value)
        return None

    # --- artifacts ------------------------------------------------------------------------------------------

    def _artifacts(self) -> ArtifactService:
        if self._artifact_service is None:
            raise ServiceNotConfiguredError(
                "Artifact service is not initialized: this ToolContext has no artifact_service. Pass "
                "artifact_service= to the ToolContext (gateway.tools.InMemoryArtifactService keeps artifacts "
                "in memory)."
            )
        return self._artifact_service

    @property
    def artifact_service(self) -> ArtifactService | None:
        """Where this call's artifacts live (None: the tool runs where there is no artifact service)."""
        return self._artifact_service

    async def save_artifact(
        self, filename: str, artifact: Artifact, custom_metadata: Mapping[str, Any] | None = None
    ) -> int:
        """Store a new version of `filename` (with its `custom_metadata`) and return its version number."""
        version = await self._artifacts().save_artifact(
            **self._where(), filename=filename, artifact=artifact, custom_metadata=custom_metadata
        )
        self._actions.artifact_delta[filename] = version
        return version

    async def load_artifact(self, filename: str, version: int | None = None) -> Artifact | None:
        """Return `filename` at `version` (the latest when None), or None if there is no such artifact."""
        return await self._artifacts().load_artifact(**self._where(), filename=filename, version=version)

    async def get_artifact_version(self, filename: str, version: int | None = None) -> ArtifactVersion | None:
        """What is known of `filename` at `version` (the latest when None): its custom metadata, time, media type."""
        return await self._artifacts().get_artifact_version(**self._where(), filename=filename, version=version)

    async def list_artifacts(self) -> list[str]:
        """The artifact names visible to this session (its own and its user's)."""
        return await self._artifacts().list_artifact_keys(**self._where())

    # --- memory -----------------------------------------------------------------------------------------------

    @property
    def memory_service(self) -> MemoryService | None:
        """The user's long-term memory (None: the tool runs where there is no memory service)."""
        return self._memory_service

    def _memory(self) -> MemoryService:
        if self._memory_service is None:
            raise ServiceNotConfiguredError(NO_MEMORY_SERVICE)
        return self._memory_service

    async def search_memory(self, query: str) -> SearchMemoryResponse:
        """The user's memories that match `query`, best first (ADK's `search_memory`)."""
        return await self._memory().search_memory(app_name=self.app_name, user_id=self.user_id, query=query)

    async def add_memory(
        self, *, memories: Sequence[MemoryEntry | str], custom_metadata: Mapping[str, object] | None = None
    ) -> None:
        """Remember `memories` for the user (ADK's `add_memory`); a str is one text entry."""
        entries = [memory_entry(memory) for memory in memories]
        await self._memory().add_memory(
            app_name=self.app_name, user_id=self.user_id, memories=entries, custom_metadata=custom_metadata
        )

    async def add_session_to_memory(self) -> None:
        """Remember this session's conversation (ADK's `add_session_to_memory`); served, the MCP client has it."""
        await self._memory().add_session_to_memory(**self._where())

    async def delete_memory(self, memory_id: str | None = None) -> None:
        """Forget the user's memory `memory_id` (a `MemoryEntry.id` a search returned)."""
        await self._memory().delete_memory(app_name=self.app_name, user_id=self.user_id, memory_id=memory_id)

    # --- MCP client features --------------------------------------------------------------------------------

    def _client_features(self, what: str) -> ClientFeatures:
        if self._client is None:
            raise ServiceNotConfiguredError(
                f"{what} is not available: this ToolContext has no MCP client (the tool is not running "
                "inside an MCP server session). Pass client= (an object implementing "
                "gateway.tools.ClientFeatures) to the ToolContext."
            )
        return self._client

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress of this call to the MCP client (a no-op if the client sent no progress token)."""
        await self._client_features("Reporting progress").report_progress(progress, total, message)

    async def log(self, level: types.LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the MCP client."""
        await self._client_features("Logging to the client").log(level, data, logger)

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> types.ElicitResult:
        """Ask the user, through the MCP client, to fill a flat form described by `requested_schema`."""
        return await self._client_features("Elicitation").elicit(message, requested_schema)

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> types.ElicitResult:
        """Ask the user, through the MCP client, to visit `url` (MCP's URL-mode elicitation)."""
        return await self._client_features("URL elicitation").elicit_url(message, url, elicitation_id)

    async def sample(
        self,
        messages: str | list[types.SamplingMessage],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
    ) -> types.CreateMessageResult:
        """Ask the MCP client's model for a completion; a str is sent as one user message."""
        if isinstance(messages, str):
            messages = [types.SamplingMessage(role="user", content=types.TextContent(text=messages))]
        return await self._client_features("Sampling").sample(
            messages, max_tokens=max_tokens, system_prompt=system_prompt, temperature=temperature
        )

    async def send_progress(self, update: Any) -> None:
        """Deliver one intermediate update of a long-running tool to the progress sink."""
        await self.progress_sink(update)
