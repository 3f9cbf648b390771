"""Held calls: an upstream tool call kept running across the rounds of a modern (2026-07-28) client's `tools/call`.

A modern client cannot be asked anything in the middle of a call: the server ends the call with an
`InputRequiredResult`, and the client answers by calling again. A local tool simply runs again from the start with
the answers; an upstream tool must not (`tools/call` is never sent twice), and an upstream that asked with a push
`elicitation/create` or `sampling/createMessage` is still waiting for its answer. So the call is *held*: it runs
in a task of the server, each question it asks ends the current round with an `InputRequiredResult` that names
the held call in its (sealed) `requestState`, and the client's next round delivers the answer to the waiting
question and waits for the next question or the result.

A held call belongs to the session that started it; another session cannot resume it. One whose client does not
come back within `ttl` seconds is cancelled (the upstream's question is declined).

A held call lives in the process that started it: with several replicas or workers behind one endpoint, each of
its rounds must reach that process. Its id starts with the process's replica id, so a round that reaches another
replica fails at once with a retryable error (`HELD_ELSEWHERE`, `data.retryable`) instead of waiting for a call
that is not there; sent again, it may reach the right one (a balancer with affinity makes sure it does).
"""

from __future__ import annotations

import logging
import secrets
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import anyio.abc
from mcp import MCPError, types
from mcp.server.context import ServerRequestContext

from gateway.client.sessions.limits import SESSION_LIMIT, SessionLimitError
from gateway.errors import ServiceNotConfiguredError
from gateway.server.client_features import McpClientFeatures
from gateway.server.identity import current_client
from gateway.tools.context import InputRequired

__all__ = ["HELD_CALL_TTL", "HELD_ELSEWHERE", "MAX_HELD_CALLS", "MAX_HELD_CALLS_PER_CLIENT", "HeldCall", "HeldCalls"]

logger = logging.getLogger(__name__)

HELD_CALL_TTL: Final = 600.0
"""Seconds a held call waits for its client's next round before it is cancelled."""

MAX_HELD_CALLS: Final = 256
"""Held calls at once, in all, by default (`maxHeldCalls`)."""
MAX_HELD_CALLS_PER_CLIENT: Final = 32
"""Held calls at once of one client by default (`maxHeldCallsPerClient`)."""

HELD_ELSEWHERE: Final = -32000
"""The JSON-RPC error code of a round that reached a replica other than the one holding its call (retryable)."""

Run = Callable[[], Awaitable[types.CallToolResult]]
_CANCELLED: Final = types.CallToolResult(content=[types.TextContent(text="The call was cancelled.")], is_error=True)


class HeldCall:
    """One call in progress: the question it waits on, or its result."""

    def __init__(self, call_id: str, owner: str, ttl: float, features: McpClientFeatures) -> None:
        self.call_id = call_id
        self.owner = owner
        self.ttl = ttl
        self.features = features
        """The client's features as the call's `ToolContext` holds them; they follow the client from round to round."""
        self.question: InputRequired | None = None
        self.client = ""
        """Whose share of held calls this one counts against (`current_client`)."""
        self.result: types.CallToolResult | None = None
        self.refused: SessionLimitError | None = None
        """Why the call was refused before it reached its upstream (a cap on sessions): the round answers with it."""
        self.cancel_scope = anyio.CancelScope()
        self._answer: Any = None
        self._answered = anyio.Event()
        self._update = anyio.Event()

    async def suspend(self, needed: InputRequired) -> Any:
        """Called by the running tool: publish the question, wait for its answer (at most `ttl` seconds)."""
        self.question, self._answered = needed, anyio.Event()
        self._update.set()
        with anyio.move_on_after(self.ttl):
            await self._answered.wait()
            return self._answer
        raise ServiceNotConfiguredError(f"The client did not answer within {self.ttl:g} s; the call was abandoned.")

    def finish(self, result: types.CallToolResult) -> None:
        """Called when the tool ended: publish its result."""
        self.result = result
        self._update.set()

    def answer(self, responses: dict[str, Any]) -> None:
        """Deliver the client's answer to the waiting question.

        Raises:
            MCPError: the round does not answer the question the call waits on.
        """
        question = self.question
        if question is None or question.key not in responses:
            expected = question.key if question is not None else "(none)"
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"This round must answer the input request {expected!r} of the held call.",
            )
        self.question, self._answer = None, responses[question.key]
        self._answered.set()

    async def next_outcome(self) -> types.CallToolResult | InputRequired:
        """Wait for the call's next question, or its result."""
        await self._update.wait()
        self._update = anyio.Event()
        if self.result is not None:
            return self.result
        assert self.question is not None
        return self.question


class HeldCalls:
    """The held calls of one server, run in its task group."""

    def __init__(
        self,
        ttl: float = HELD_CALL_TTL,
        *,
        max_calls: int = MAX_HELD_CALLS,
        max_per_client: int = MAX_HELD_CALLS_PER_CLIENT,
    ) -> None:
        self.ttl = ttl
        self.max_calls = max_calls
        """Held calls at once, in all (`maxHeldCalls`)."""
        self.max_per_client = max_per_client
        """Held calls at once of one client: its principal, else its address (`maxHeldCallsPerClient`)."""
        self.replica = secrets.token_hex(4)
        """This process's part of every held call id: a round elsewhere can tell that the call is not gone."""
        self._calls: dict[str, HeldCall] = {}
        self._task_group: anyio.abc.TaskGroup | None = None

    def bind(self, task_group: anyio.abc.TaskGroup | None) -> None:
        """Run held calls in `task_group` (the server's, for as long as it serves); None stops accepting them."""
        self._task_group = task_group

    def __len__(self) -> int:
        return len(self._calls)

    async def start(
        self,
        owner: str,
        features: McpClientFeatures,
        run: Run,
        on_error: Callable[[BaseException], types.CallToolResult],
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Start `run` as a held call of session `owner` whose questions `features` ask; its first round's outcome.

        Raises:
            ServiceNotConfiguredError: the server is not serving (no task group to hold the call in).
        """
        if self._task_group is None:
            raise ServiceNotConfiguredError("Held calls need a running server (use the ToolServer as a context).")
        client = current_client()
        self._make_room(client)
        held = HeldCall(f"{self.replica}-{uuid.uuid4().hex}", owner, self.ttl, features)
        held.client = client
        features.suspend = held.suspend
        self._calls[held.call_id] = held

        async def hold() -> None:
            result = _CANCELLED
            try:
                with held.cancel_scope:
                    result = await run()
            except SessionLimitError as exc:
                # A refusal, not a failure of the tool: the client gets the JSON-RPC error (HTTP 429) as it would
                # had the session been refused before the call was held.
                held.refused = exc
            except Exception as exc:  # noqa: BLE001 - becomes the call's error result
                result = on_error(exc)
            finally:
                self._calls.pop(held.call_id, None)
                held.finish(result)

        self._task_group.start_soon(hold, name=f"held call {held.call_id}")
        return await self._round(held)

    def _make_room(self, client: str) -> None:
        """Refuse a new held call past a cap (the calls already held keep waiting for their clients).

        Raises:
            MCPError: `SESSION_LIMIT`, naming the cap that is reached.
        """
        mine = sum(1 for held in self._calls.values() if held.client == client)
        for count, cap, name in (
            (mine, self.max_per_client, "maxHeldCallsPerClient"),
            (len(self._calls), self.max_calls, "maxHeldCalls"),
        ):
            if count >= cap:
                raise MCPError(
                    code=SESSION_LIMIT,
                    message=(
                        f"{count} upstream calls are already held waiting for answers"
                        f"{f' for {client}' if name.endswith('Client') else ''}: the limit {name} ({cap}) is "
                        "reached. Answer or cancel a waiting call, or raise the limit."
                    ),
                    data={"limit": name, "retryable": True},
                )

    async def resume(
        self, ctx: ServerRequestContext[Any, Any], round_features: McpClientFeatures, owner: str
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A client's next round of the held call its `requestState` names: deliver the answer, wait for more.

        Raises:
            MCPError: the call is held by another replica (`HELD_ELSEWHERE`, retryable); no such call in this
                session (it ended, expired, or belongs to another session); or the round does not answer the
                question the call waits on.
        """
        call_id = round_features.held_call or ""
        held = self._calls.get(call_id)
        holder, separator, _ = call_id.partition("-")
        if held is None and separator and holder != self.replica:
            raise MCPError(
                code=HELD_ELSEWHERE,
                message=(
                    f"This round continues an upstream call held open by another gateway replica ({holder}), not "
                    f"this one ({self.replica}); send the same round again so that it reaches that replica (route "
                    "a client's requests to one replica to avoid this), or call the tool again if it is gone."
                ),
                data={"retryable": True, "heldBy": holder, "replica": self.replica},
            )
        if held is None or held.owner != owner:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message="The held call this round answers is gone (it ended or expired); call the tool again.",
            )
        held.answer(round_features.answers)
        # No await in between: the call resumes only after its features follow the client into this round.
        held.features.attach(ctx)
        return await self._round(held)

    @staticmethod
    async def _round(held: HeldCall) -> types.CallToolResult | types.InputRequiredResult:
        """The round's outcome: the call's next question as an `InputRequiredResult`, or its result.

        A round cancelled by its client cancels the call.
        """
        try:
            outcome = await held.next_outcome()
        except anyio.get_cancelled_exc_class():
            held.cancel_scope.cancel()
            raise
        finally:
            held.features.attach(None)
        if isinstance(outcome, InputRequired):
            return types.InputRequiredResult(
                input_requests={outcome.key: outcome.request}, request_state=held.features.request_state(held.call_id)
            )
        if held.refused is not None:
            raise held.refused
        return outcome
