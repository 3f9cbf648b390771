"""One `tools/call` of a `ToolServer`: run the tool with a `ToolContext`, confirm through the client, shape the result.

The tool runs with the caller's scoped state and the client's features; a confirmation it requests is asked of the
client through elicitation (a `confirm` box and the confirmation's payload to edit, `gateway.tools.confirmation`)
and the tool runs again, confirmed, with the edited payload; the state delta is
written back unless the tool raised; the response becomes a `CallToolResult` through the adapters, carrying the
actions an agent acts on (`transfer_to_agent`, `escalate`, ...) as documented `_meta` keys.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import pydantic
from mcp import MCPError, types
from mcp.server.context import ServerRequestContext

from adapters import response_to_mcp_result
from adapters.event_actions import CARRIED_ACTIONS, actions_to_meta
from adapters.mcp_tool import is_wrapped_output_schema
from gateway.errors import ServiceNotConfiguredError, StateConflictError
from gateway.server.catalog import CatalogEntry
from gateway.server.client_features import McpClientFeatures
from gateway.server.identity import CallIdentity
from gateway.server.resources.artifact_resources import artifact_links
from gateway.server.sign_in.credential_requests import CallCredentials, no_credential_store
from gateway.state import StateScope, StateStore
from gateway.tools import ArtifactService, AuthCredential, EventActions, MemoryService, State, ToolConfirmation
from gateway.tools.confirmation import (
    CONFIRM_FIELD,
    CONFIRMATION_REJECTED,
    CONFIRMATION_REQUIRED,
    confirmation_form,
    confirmed_payload,
)
from gateway.tools.context import ClientFeatures, InputRequired, ToolContext
from gateway.tools.state import scope_of
from gateway.tools.tool_updates import is_progress_report

__all__ = [
    "CONFIRM_FIELD",
    "Invoke",
    "ProgressReporter",
    "ResolvedCall",
    "RoundEnded",
    "StaleState",
    "ToolCall",
    "error_result",
    "schema_errors",
    "to_result",
    "with_actions",
]

logger = logging.getLogger(__name__)


def confirmation_schema() -> dict[str, Any]:
    """The yes/no form of a confirmation without a payload."""
    return confirmation_form()


def confirmation_message(name: str, args: dict[str, Any], confirmation: ToolConfirmation) -> str:
    shown = ", ".join(f"{key}={value!r}" for key, value in args.items())
    message = f"Allow the tool call {name}({shown})?"
    # ADK's default hint addresses a model ("respond with a FunctionResponse"); a person sees only custom hints.
    if confirmation.hint and "FunctionResponse" not in confirmation.hint:
        message += f"\n\n{confirmation.hint}"
    return message


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _is_number(_checker: object, instance: object) -> bool:
    if isinstance(instance, bool) or not isinstance(instance, int | float):
        return False
    return isinstance(instance, int) or math.isfinite(instance)


def _is_integer(checker: object, instance: object) -> bool:
    return _is_number(checker, instance) and (isinstance(instance, int) or float(cast("float", instance)).is_integer())


@functools.cache
def _validator() -> Any:
    """The argument validator class, built on first use: jsonschema (a few MiB) is imported only by a server whose
    calls need it (a gateway's upstream tools are checked upstream).

    JSON has no NaN or Infinity, yet Python's parser reads `NaN`, `Infinity` and `1e999` as floats: here they are
    not numbers. Booleans are not numbers either (as in jsonschema's own checker).
    """
    import jsonschema  # lazy, see above
    from jsonschema.validators import extend  # pyright: ignore[reportUnknownVariableType]

    return extend(  # pyright: ignore[reportUnknownVariableType] - jsonschema ships no types for it
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(
            {"number": _is_number, "integer": _is_integer}
        ),
    )


def _error_text(error: Any) -> str:
    where = ".".join(str(part) for part in error.absolute_path) or "(arguments)"
    instance = error.instance
    if error.validator == "type" and isinstance(instance, float) and not math.isfinite(instance):
        return f"'{where}': {instance} is not a finite number (JSON has no NaN or Infinity)"
    return f"'{where}': {error.message}"


def schema_errors(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Where `arguments` break `schema`, one line per error naming its field."""
    validator = _validator()(schema)
    return [
        _error_text(error) for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    ]


class ProgressReporter:
    """Turns a long-running tool's yields into monotonic MCP progress."""

    def __init__(self, features: ClientFeatures) -> None:
        self._features = features
        self._last = 0.0

    async def __call__(self, update: object, /) -> None:
        total: float | None = None
        progress = self._last + 1.0
        message: str | None
        if is_progress_report(update):
            fields = cast("dict[str, Any]", update)
            # Progress must never go backwards, whatever the tool reports.
            progress = max(float(fields["progress"]), self._last)
            total_value = fields.get("total")
            total = float(total_value) if isinstance(total_value, int | float) else None
            message = str(fields["message"]) if "message" in fields else None
        else:
            message = update if isinstance(update, str) else pydantic.TypeAdapter(Any).dump_json(update).decode()
        self._last = progress
        await self._features.report_progress(progress, total, message)


class StaleState(Exception):
    """The tool ran on state another call changed meanwhile; nothing was written. Run the call again.

    Attributes:
        conflict: the store's refusal, naming the keys.
        confirmation: the confirmation the run had, for the next run (the user is not asked twice).
    """

    def __init__(self, conflict: StateConflictError, confirmation: ToolConfirmation | None) -> None:
        super().__init__(str(conflict))
        self.conflict = conflict
        self.confirmation = confirmation


class RoundEnded(Exception):
    """Raised by an `Invoke`: the call's round ends with this result, sent as it is: an `InputRequiredResult`, or
    a task's `CreateTaskResult` (wire form).

    A gateway relaying a modern upstream's questions to a modern client ends the round this way, and one handing
    out an upstream's task.
    """

    def __init__(self, result: types.InputRequiredResult | dict[str, Any]) -> None:
        super().__init__("input required" if isinstance(result, types.InputRequiredResult) else "task")
        self.result = result


Invoke = Callable[[ToolContext], Awaitable[types.CallToolResult]]
"""Run a call's tool with a `ToolContext` and give its MCP result (default: `run_async`, then `to_result`)."""


@dataclass(frozen=True)
class ResolvedCall:
    """A `tools/call` the server resolved: the request, the tool's catalog entry, its arguments, the caller, and
    what the caller's client offers mid-call."""

    ctx: ServerRequestContext[Any, Any]
    entry: CatalogEntry
    arguments: dict[str, Any]
    identity: CallIdentity
    features: McpClientFeatures


@dataclass(frozen=True)
class ToolCall(ResolvedCall):
    """One call run the server's way: a resolved call and the caller's loaded state."""

    loaded: dict[str, Any]

    async def run(
        self,
        *,
        app_name: str,
        artifact_service: ArtifactService,
        state_store: StateStore,
        scope: StateScope,
        confirmation: ToolConfirmation | None = None,
        invoke: Invoke | None = None,
        credentials: CallCredentials | None = None,
        memory_service: MemoryService | None = None,
    ) -> types.CallToolResult:
        """Run the tool (again when it asks for a confirmation the client gives, or a credential); errors: `isError`.

        Args:
            app_name: the server's name.
            artifact_service: where the tool's artifacts live.
            state_store: where its state lives.
            scope: the owners of its state.
            confirmation: a confirmation an earlier run of this call already has.
            invoke: runs the tool another way than `run_async` and the adapters (a gateway forwards an upstream's
                result as it is, and passes an upstream's JSON-RPC error on); confirmation and state stay the same.
            credentials: the caller's credentials (`get_auth_response`) and the way to obtain one the tool requests
                (`request_credential`); None on a server without a credential key.
            memory_service: the users' long-term memory (`tool_context.search_memory`), if the server has one.

        Raises:
            InputRequired: a modern-era client must answer a question first (the call ends with its request).
            RoundEnded: `invoke` ended the round with an `InputRequiredResult` of its own.
            StaleState: the tool read state that another call changed meanwhile; nothing was written.
        """
        outcome = await self._attempt(
            confirmation, app_name, artifact_service, invoke, credentials, memory_service=memory_service
        )
        if isinstance(outcome, types.CallToolResult):
            return outcome
        result, context = outcome
        actions = context.actions
        # As google-adk saves a function response's state delta: direct `actions.state_delta` writes included, and
        # also when the tool answered `{"error": ...}` (a tool that raised never gets here).
        delta = {key: value for key, value in actions.state_delta.items() if scope_of(key) != "temp"}
        try:
            await state_store.apply(scope, delta, expected=context.state.reads())
        except StateConflictError as conflict:
            raise StaleState(conflict, context.tool_confirmation) from conflict
        if invoke is not None:
            return result  # a forwarded result crosses as its server sent it, its action keys included
        linked = await artifact_links(context, actions.artifact_delta)
        if linked:
            result = result.model_copy(update={"content": [*result.content, *linked]})
        return with_actions(result, actions)

    async def _run_async(self, context: ToolContext) -> types.CallToolResult:
        response = await self.entry.tool.run_async(args=self.arguments, tool_context=context)
        return to_result(response, self.entry.mcp_tool.output_schema)

    async def _attempt(
        self,
        confirmation: ToolConfirmation | None,
        app_name: str,
        artifact_service: ArtifactService,
        invoke: Invoke | None,
        credentials: CallCredentials | None,
        *,
        memory_service: MemoryService | None = None,
    ) -> types.CallToolResult | tuple[types.CallToolResult, ToolContext]:
        """One run of the tool (more when it asks for a confirmation or a credential): a final result, or its result
        and context."""
        forwarded = invoke is not None
        run = invoke or self._run_async
        tool, arguments, features, identity, loaded = (
            self.entry.tool,
            self.arguments,
            self.features,
            self.identity,
            self.loaded,
        )
        call_id = f"mcp-{self.ctx.request_id}"
        held: dict[str, AuthCredential] = dict(credentials.loaded) if credentials is not None else {}

        def new_context(confirmation: ToolConfirmation | None) -> ToolContext:
            return ToolContext(
                state=State(dict(loaded)),
                function_call_id=call_id,
                tool_confirmation=confirmation,
                artifact_service=artifact_service,
                memory_service=memory_service,
                client=features,
                progress_sink=ProgressReporter(features),
                credentials=held,
                app_name=app_name,
                user_id=identity.principal,
                session_id=identity.session_key,
            )

        context = new_context(confirmation)
        try:
            result = await run(context)
            while (wanted := context.actions.requested_auth_configs.get(call_id)) is not None:
                if credentials is None:
                    return no_credential_store(tool.name)
                obtained = await credentials.obtain(wanted)
                if isinstance(obtained, types.CallToolResult):
                    return obtained
                held[wanted.credential_key or ""] = obtained
                context = new_context(confirmation)
                result = await run(context)
            requested = context.actions.requested_tool_confirmations.get(call_id)
            if requested is not None:
                try:
                    answer = await features.elicit(
                        confirmation_message(tool.name, arguments, requested), confirmation_form(requested.payload)
                    )
                except ServiceNotConfiguredError as exc:
                    return error_result(f"{CONFIRMATION_REQUIRED} {exc} The tool was not run.")
                content = answer.content or {}
                if answer.action != "accept" or not content.get(CONFIRM_FIELD):
                    return error_result(CONFIRMATION_REJECTED)
                try:
                    # As ADK's client answers a confirmation: the payload the user filled or edited.
                    payload = confirmed_payload(requested.payload, content)
                except ValueError as exc:
                    return error_result(f"{CONFIRMATION_REJECTED} {exc}")
                context = new_context(ToolConfirmation(hint=requested.hint, confirmed=True, payload=payload))
                result = await run(context)
        except (InputRequired, RoundEnded):
            raise
        except ServiceNotConfiguredError as exc:
            return error_result(str(exc))
        except Exception as exc:
            if forwarded and isinstance(exc, MCPError):
                raise  # the JSON-RPC error of the server that ran the tool, passed on as it is
            logger.exception("Tool %s raised", tool.name)
            return error_result(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        return result, context


def with_actions(result: types.CallToolResult, actions: EventActions) -> types.CallToolResult:
    """`result` carrying the actions an agent acts on as its documented `_meta` keys (`adapters.event_actions`)."""
    carried = actions_to_meta(actions.model_dump(include=set(CARRIED_ACTIONS)))
    if not carried:
        return result
    return result.model_copy(update={"meta": {**(result.meta or {}), **carried}})


def to_result(response: Any, output_schema: dict[str, Any] | None) -> types.CallToolResult:
    fields = cast("dict[str, Any]", response) if isinstance(response, dict) else None
    is_error = fields is not None and "error" in fields
    wrapped = output_schema is not None and is_wrapped_output_schema(output_schema)
    if wrapped and not is_error and not (fields is not None and set(fields) == {"result"}):
        return response_to_mcp_result({"result": response})
    return response_to_mcp_result(response)
