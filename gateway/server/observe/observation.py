"""One place that observes every request a `ToolServer` answers: what it was, how long it took, how it ended.

`RequestObservation` is a middleware of the SDK's low-level `Server` (it sees every request, `initialize` and
unknown methods included). It fills a `RequestRecord` per request — the method, the tool and its upstream once
the server resolved them (`note_tool`), the calling session (`note_session`), the outcome and the duration — and
hands it to its observers when the request ends (metrics, a request log line). It also puts the gateway's
attributes on the request's OpenTelemetry span (`gateway.server.observe.tracing`).

Every label value a record carries is bounded: a method the protocol does not define is `_other`; a tool is named
only once the catalog found it (an unknown name is `_unknown`); outcomes are a small fixed set. Tool arguments,
tokens and session keys never enter a record (the session is kept only for the span, as a digest).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Final, Protocol

import anyio
from mcp import MCPError, types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types.methods import SPEC_CLIENT_METHODS
from pydantic import ValidationError

from gateway.server.observe import tracing
from gateway.server.running_calls import REQUEST_CANCELLED

__all__ = [
    "OTHER_METHOD",
    "UNKNOWN_TOOL",
    "RequestObservation",
    "RequestObserver",
    "RequestRecord",
    "error_outcome",
    "note_session",
    "note_tool",
]

logger = logging.getLogger(__name__)

OTHER_METHOD: Final = "_other"
"""The method of a request whose method the protocol does not define."""
UNKNOWN_TOOL: Final = "_unknown"
"""The tool of a `tools/call` whose tool the server did not find (or could not look up)."""
_KNOWN_METHODS: Final = frozenset(SPEC_CLIENT_METHODS)
_OUTCOMES: Final = {
    types.INVALID_PARAMS: "invalid_params",
    types.METHOD_NOT_FOUND: "method_not_found",
    types.INVALID_REQUEST: "invalid_request",
    types.PARSE_ERROR: "invalid_request",
    types.INTERNAL_ERROR: "internal_error",
    REQUEST_CANCELLED: "cancelled",
}
"""JSON-RPC error codes by outcome name; any other code is `error`."""


@dataclass(slots=True)
class RequestRecord:
    """What one request was and how it went (filled in while it runs).

    Outcomes: `ok`, `tool_error` (a `tools/call` result with `isError`), `input_required` (a modern client is asked
    for input and calls again), `unknown_tool` (a `tools/call` of a tool the server does not have), `invalid_params`,
    `method_not_found`, `invalid_request`, `internal_error` (also an exception), `error` (another JSON-RPC error)
    and `cancelled`.
    """

    method: str
    name: str = ""
    """The tool name a `tools/call` asked for, as sent (for the log; a client may send anything here)."""
    tool: str = ""
    """The published tool name of a `tools/call` (`UNKNOWN_TOOL` until the catalog found it); else empty."""
    upstream: str = ""
    """The upstream serving the tool (its config key); empty for local tools and other methods."""
    outcome: str = "ok"
    duration: float = 0.0
    """Seconds from the request's arrival to its answer."""
    error_code: int | None = None
    """The JSON-RPC error code the request was answered with, if any."""
    session_owner: str | None = None
    """The calling session (`principal/session key`): a secret, kept only to digest it for the trace."""


class RequestObserver(Protocol):
    """Hears of each request when it ended (must not block: it runs on the request's path)."""

    def request_done(self, record: RequestRecord) -> None:
        """A request ended."""
        ...


_current: contextvars.ContextVar[RequestRecord | None] = contextvars.ContextVar(
    "adk_mcp_gateway_request_record", default=None
)


def note_tool(tool: str, upstream: str | None) -> None:
    """The request in progress calls `tool` (found in the catalog), served by `upstream` (None: a local tool)."""
    record = _current.get()
    if record is not None:
        record.tool = tool
        record.upstream = upstream or ""


def note_session(session_owner: str) -> None:
    """The request in progress belongs to session `session_owner`."""
    record = _current.get()
    if record is not None:
        record.session_owner = session_owner


def error_outcome(code: int) -> str:
    """The outcome of a request answered with the JSON-RPC error `code`."""
    return _OUTCOMES.get(code, "error")


def _outcome_of(result: HandlerResult) -> str:
    """A result's outcome; results reach the middleware as models or already in their wire shape."""
    if isinstance(result, dict):
        if result.get("isError") is True:
            return "tool_error"
        return "input_required" if result.get("resultType") == "input_required" else "ok"
    if isinstance(result, types.CallToolResult) and result.is_error:
        return "tool_error"
    if isinstance(result, types.InputRequiredResult):
        return "input_required"
    return "ok"


class RequestObservation:
    """Middleware (`Server.middleware`): a `RequestRecord` per request, handed to `observers` when it ends."""

    def __init__(self) -> None:
        self.observers: list[RequestObserver] = []

    @contextlib.contextmanager
    def relayed(self, method: str, name: str = "", *, started: float | None = None) -> Generator[RequestRecord]:
        """Observe a request the fast lane answers (`gateway.hub.forwarding.fast_lane`), as the middleware would.

        `name` is the tool a `tools/call` names. The caller sets the record's `outcome` (and `error_code`); an
        exception leaving the block is an `internal_error`, a cancellation `cancelled`. There is no SDK server span
        to annotate on the fast lane. `started`: when the request arrived (`time.perf_counter()`; default: now).
        """
        record = RequestRecord(method=method, name=name, tool=UNKNOWN_TOOL if method == "tools/call" else "")
        with self._observed(record, time.perf_counter() if started is None else started):
            yield record

    @contextlib.contextmanager
    def _observed(
        self, record: RequestRecord, started: float, ctx: ServerRequestContext[Any, Any] | None = None
    ) -> Generator[None]:
        """`record` is the request in progress while the block runs; told to the observers when it ends.

        With `ctx` (the middleware's request) a JSON-RPC error leaving the block is the request's answer, and the
        SDK's span gets the gateway's attributes; without it (the fast lane) any exception is an `internal_error`.
        """
        token = _current.set(record)
        try:
            yield
        except anyio.get_cancelled_exc_class():
            record.outcome = "cancelled"
            raise
        except Exception as exc:
            _note_failure(record, exc if ctx is not None else None)
            raise
        finally:
            record.duration = time.perf_counter() - started
            _current.reset(token)
            if ctx is not None:
                tracing.annotate_server_span(ctx, record.upstream, record.session_owner)
            self._tell(record)

    def _tell(self, record: RequestRecord) -> None:
        for observer in self.observers:
            try:
                observer.request_done(record)
            except Exception:
                # An observer's bug must not turn an answered request into a failed one.
                logger.exception("Request observer %r failed", observer)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:
            # A notification: nothing answers it, so there is no outcome or duration to tell.
            return await call_next(ctx)
        record = RequestRecord(method=ctx.method if ctx.method in _KNOWN_METHODS else OTHER_METHOD)
        if record.method == "tools/call":
            record.tool = UNKNOWN_TOOL
            name = ctx.params.get("name") if ctx.params else None
            record.name = name if isinstance(name, str) else ""
        with self._observed(record, time.perf_counter(), ctx):
            result = await call_next(ctx)
            record.outcome = _outcome_of(result)
            return result


def _note_failure(record: RequestRecord, answer: Exception | None) -> None:
    """How a request ended that raised: with its JSON-RPC error `answer`, else an `internal_error`."""
    if isinstance(answer, MCPError):
        record.error_code = answer.error.code
        record.outcome = error_outcome(answer.error.code)
        if record.outcome == "invalid_params" and record.tool == UNKNOWN_TOOL:
            record.outcome = "unknown_tool"
    elif isinstance(answer, ValidationError):
        record.error_code = types.INVALID_PARAMS
        record.outcome = "invalid_params"
    else:
        record.error_code = types.INTERNAL_ERROR
        record.outcome = "internal_error"
