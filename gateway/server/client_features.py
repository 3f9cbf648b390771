"""The MCP client's features, lent to a tool through its `ToolContext` for the length of one call.

Elicitation and sampling reach the client in whichever way the connection allows:

* handshake era with a back channel (stdio, SSE, stateful streamable HTTP): a push request
  (`elicitation/create`, `sampling/createMessage`) in the middle of the call;
* modern era (2026-07-28): the call ends with an `InputRequiredResult`; the client answers and retries, the tool
  runs again from the start and this time receives the answers, in the order it asked (answers from earlier
  rounds travel in the sealed `requestState`).

Anything else (a client without the capability, stateless or JSON-response HTTP in the handshake era) raises
`ServiceNotConfiguredError` with a sentence saying why.

`CallFeatures` is what every call's features share, whatever wire carries them: the log level the client set, the
capability each feature needs (and the sentence when it is missing), the requests' shapes. `McpClientFeatures` is
its wire through the SDK's session; the hub's fast lane has another, its call's own stream
(`gateway.hub.forwarding._call_stream`).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Final, Unpack

from mcp import MCPDeprecationWarning, types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from gateway.errors import ServiceNotConfiguredError
from gateway.server.identity import CallIdentity
from gateway.server.round_state import RoundState, question_digest
from gateway.tools.context import InputRequired, SamplingOptions

__all__ = ["CallFeatures", "McpClientFeatures", "Suspend", "client_declares", "deprecated_in_2026"]

Suspend = Callable[[InputRequired], Awaitable[Any]]
"""Ask the client a question and wait for the answer (as the JSON object the client sent)."""

_LOG_LEVELS: Final[tuple[types.LoggingLevel, ...]] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


class CallFeatures:
    """`ClientFeatures` for one `tools/call`: the part every wire shares. A subclass is one wire: it says what the
    client declared (`_declares`) and carries progress, log messages and requests (`_progress`, `_log`, `_ask_for`).

    Args:
        log_level: the least severe level the calling session asked for (None: every level).
    """

    def __init__(self, log_level: types.LoggingLevel | None) -> None:
        self._log_threshold = _LOG_LEVELS.index(log_level) if log_level else 0

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send `notifications/progress` on the call's own stream (a no-op without a progress token)."""
        await self._progress(progress, total, message)

    async def log(self, level: types.LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send `notifications/message` on the call's own stream (unless below the level the client set)."""
        if _LOG_LEVELS.index(level) >= self._log_threshold:
            await self._log(level, data, logger)

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> types.ElicitResult:
        """Ask the user to fill a flat form."""
        self._require("Elicitation", types.ClientCapabilities(elicitation=types.ElicitationCapability()), "elicitation")
        params = types.ElicitRequestFormParams(message=message, requested_schema=requested_schema)  # pyright: ignore[reportArgumentType]
        return types.ElicitResult.model_validate(await self._ask_for("elicit", types.ElicitRequest(params=params)))

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> types.ElicitResult:
        """Send the user to a URL (URL-mode elicitation; the client must declare `elicitation.url`)."""
        capability = types.ClientCapabilities(elicitation=types.ElicitationCapability(url={}))  # pyright: ignore[reportArgumentType]
        self._require("URL elicitation", capability, "elicitation.url")
        params = types.ElicitRequestURLParams(message=message, url=url, elicitation_id=elicitation_id)
        return types.ElicitResult.model_validate(await self._ask_for("elicit", types.ElicitRequest(params=params)))

    async def sample(
        self, messages: list[types.SamplingMessage], **options: Unpack[SamplingOptions]
    ) -> types.CreateMessageResult:
        """Ask the client's model for a completion."""
        self._require("Sampling", types.ClientCapabilities(sampling=types.SamplingCapability()), "sampling")
        params = types.CreateMessageRequestParams(messages=messages, **options)
        request = types.CreateMessageRequest(params=params)
        return types.CreateMessageResult.model_validate(await self._ask_for("sample", request))

    def _require(self, what: str, capability: types.ClientCapabilities, name: str) -> None:
        self._reachable(what)
        if not self._declares(capability):
            raise ServiceNotConfiguredError(
                f"{what} is not available: the MCP client did not declare the '{name}' capability."
            )

    # --- the wire -----------------------------------------------------------------------------------------------

    def _reachable(self, what: str) -> None:
        """Raise `ServiceNotConfiguredError` saying why, when `what` cannot reach the client on this wire at all."""

    def _declares(self, capability: types.ClientCapabilities) -> bool:
        """Whether the client declared `capability`."""
        raise NotImplementedError

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        raise NotImplementedError

    async def _log(self, level: types.LoggingLevel, data: Any, logger: str | None) -> None:
        raise NotImplementedError

    async def _ask_for(self, kind: str, request: types.ElicitRequest | types.CreateMessageRequest) -> Any:
        """The client's answer to `request` (its result, or the result model); `kind` names the question."""
        raise NotImplementedError


class McpClientFeatures(CallFeatures):
    """`ClientFeatures` for one `tools/call`, bound to its request context."""

    def __init__(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        *,
        earlier: RoundState | None = None,
        session: CallIdentity | None = None,
        log_level: types.LoggingLevel | None = None,
    ) -> None:
        super().__init__(log_level)
        self._ctx = ctx
        self._attached = True
        self._modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if earlier is None:
            earlier = RoundState.parse(params.request_state)
        # Only answers to the questions this call asked count; anything else the client sent is ignored.
        self._answers = earlier.accepted(params.input_responses)
        self._session = session
        self._asking: dict[str, str] = {}
        self.held_call: str | None = earlier.held
        """The held call this round continues (see `gateway.hub.held_calls`), if any."""
        self.relayed = earlier.relayed
        """Whether this round continues a call relayed to a modern upstream round by round (`gateway.hub.hub`)."""
        self.upstream_state = earlier.upstream
        """The upstream's `requestState` of the round before, for a relayed call."""
        self.input_responses = params.input_responses
        """The client's answers exactly as sent (a relayed call hands them to the upstream, which judges them)."""
        self.suspend: Suspend | None = None
        """Set for a held call: a modern client's answers are awaited in place instead of by running again."""
        self._asked = 0

    @property
    def answers(self) -> dict[str, Any]:
        """Every answer the client gave so far in this call's rounds, to questions this call asked."""
        return {key: answer for key, (_, answer) in self._answers.items()}

    @property
    def modern(self) -> bool:
        """Whether the client speaks MCP 2026-07-28 (questions end the round instead of being pushed)."""
        return self._modern

    def request_state(self, held_call: str | None = None) -> str:
        """The plaintext carried to the next round (sealed by the SDK's `RequestStateBoundary`).

        It names the question this round ends with, so that the next round's answer counts for it alone.
        """
        return RoundState(session=self._session, asked=self._asking, answers=self._answers, held=held_call).dump()

    def relayed_state(self, upstream: str | None) -> str:
        """The plaintext carried to the next round of a relayed call: its session and the upstream's state."""
        return RoundState(session=self._session, relayed=True, upstream=upstream).dump()

    @property
    def capabilities(self) -> dict[str, Any] | None:
        """The capabilities the client declared (wire form), if it declared any."""
        declared = self._ctx.session.client_capabilities
        return None if declared is None else declared.model_dump(by_alias=True, mode="json", exclude_none=True)

    def attach(self, ctx: ServerRequestContext[Any, Any] | None) -> None:
        """Follow a held call into its client's next round (None between rounds: progress and logs are dropped)."""
        if ctx is not None:
            self._ctx = ctx
        self._attached = ctx is not None

    # --- the wire -----------------------------------------------------------------------------------------------

    def _reachable(self, what: str) -> None:
        # Asked first: a connection without a back channel (stateless HTTP) never saw the client's `initialize`, so
        # its capabilities look empty, and "did not declare the capability" would be the wrong reason.
        if not self._modern and not self._ctx.session.can_send_request:
            raise ServiceNotConfiguredError(
                f"{what} is not available on this connection: it has no channel for server-to-client requests "
                "(stateless or JSON-response HTTP). Use a stateful streamable HTTP, SSE or stdio connection."
            )

    def _declares(self, capability: types.ClientCapabilities) -> bool:
        return client_declares(self._ctx.session, capability)

    async def _progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._attached:
            await self._ctx.session.report_progress(progress, total, message)

    async def _log(self, level: types.LoggingLevel, data: Any, logger: str | None) -> None:
        if not self._attached:
            return
        with deprecated_in_2026():
            sending = self._ctx.session.send_log_message(  # pyright: ignore[reportDeprecated]
                level=level, data=data, logger=logger, related_request_id=self._ctx.request_id
            )
        await sending

    async def _ask_for(self, kind: str, request: types.ElicitRequest | types.CreateMessageRequest) -> Any:
        """Modern era: the answer of an earlier round, or the round ends with the question; else a push request."""
        key = self._next_key(kind)
        if self._modern:
            return await self._ask(InputRequired(key, request))
        session, related = self._ctx.session, self._ctx.request_id
        params = request.params
        if isinstance(params, types.ElicitRequestFormParams):
            return await session.elicit_form(
                message=params.message, requested_schema=params.requested_schema, related_request_id=related
            )
        if isinstance(params, types.ElicitRequestURLParams):  # its id is always set (`elicit_url` made it)
            return await session.elicit_url(
                message=params.message,
                url=params.url,
                elicitation_id=params.elicitation_id or "",
                related_request_id=related,
            )
        with deprecated_in_2026():
            asking = session.create_message(  # pyright: ignore[reportDeprecated]
                messages=params.messages,
                max_tokens=params.max_tokens,
                system_prompt=params.system_prompt,
                temperature=params.temperature,
                related_request_id=related,
            )
        return await asking

    async def complete_url_elicitation(self, elicitation_id: str) -> None:
        """Send `notifications/elicitation/complete` (handshake era; 2026-07-28 has no such notification)."""
        if not self._modern and self._attached:
            await self._ctx.session.send_elicit_complete(elicitation_id, related_request_id=self._ctx.request_id)

    # --- helpers ------------------------------------------------------------------------------------------------

    async def _ask(self, needed: InputRequired) -> Any:
        """A modern client's answer to a question: given in an earlier round for this very question, or asked now.

        Raises:
            InputRequired: the question must be asked (the round ends with it; not for a held call).
        """
        digest = question_digest(needed.request)
        given = self._answers.get(needed.key)
        if given is not None and given[0] == digest:
            return given[1]
        self._asking = {needed.key: digest}
        if self.suspend is None:
            raise needed
        return await self.suspend(needed)

    def _next_key(self, kind: str) -> str:
        key = f"{kind}-{self._asked}"
        self._asked += 1
        return key


def client_declares(session: ServerSession, needed: types.ClientCapabilities) -> bool:
    """Whether the client of `session` declared `needed`, elicitation modes included.

    The SDK's check takes any `elicitation` for every mode; but `elicitation: {}` declares form mode alone (as
    before URL mode existed), and a client that declared only `url` has no forms.
    """
    return session.check_client_capability(needed) and _elicitation_modes(needed) <= _elicitation_modes(
        session.client_capabilities
    )


def _elicitation_modes(capabilities: types.ClientCapabilities | None) -> set[str]:
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return set()
    if elicitation.form is None and elicitation.url is None:
        return {"form"}
    return {mode for mode, declared in (("form", elicitation.form), ("url", elicitation.url)) if declared is not None}


@contextlib.contextmanager
def deprecated_in_2026() -> Generator[None]:
    """Silence the SDK's `MCPDeprecationWarning` for logging and sampling, features this server still offers.

    They are deprecated only from 2026-07-28 on, yet the SDK warns on every call (a `UserWarning`, so users see
    it; under `-W error` it fails the tool). The warning is raised when the method is called, not awaited, so
    the filter spans no await: no other task runs while it is in place.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield
