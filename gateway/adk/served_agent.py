"""A google-adk agent served as one MCP tool: `AgentToolset`.

The tool takes a `request` string (as google-adk's `AgentTool` does) and runs the agent with an ADK `Runner` whose
ADK session is the MCP session: the session id is the MCP session's key, the user is the caller's principal, and
the state is the MCP session's state from our store (all four scopes), handed to the ADK session before each run
and written back from the events' state deltas after it. The conversation itself (the ADK events) lives in the ADK
session service, in memory unless one is given, for as long as the MCP session does. Each intermediate event is sent
as an MCP progress message; the final text is the result, parsed into structured output when the agent has an
`output_schema`; when the agent itself escalates (google-adk's `exit_loop`), so does the result (its `_meta` key).
When one of the agent's tools needs a confirmation (ADK's `adk_request_confirmation`), the MCP client is asked
through elicitation and the agent resumes with the answer; a modern-era client answers in a new round, which
resumes the paused run instead of starting the request again. When one of them needs the user's credential (ADK's
`adk_request_credential`), the server signs the user in as for a served tool that asks (`_agent_credentials`).
"""

from __future__ import annotations

import json
import re
from contextlib import aclosing
from typing import Any, Final, cast

import pydantic
from google.adk.agents import BaseAgent, LlmAgent
from google.adk.events import Event
from google.adk.memory import BaseMemoryService
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, InMemorySessionService
from google.genai import types as genai_types
from google.genai.types import FunctionCall

from adapters import FunctionDeclaration
from gateway.adk._agent_credentials import CREDENTIAL_CALL, credential_answer
from gateway.adk.artifact_service import AdkArtifactService
from gateway.adk.declarations import json_schema_of
from gateway.adk.memory_bridge import AdkMemoryService, adk_memory_service
from gateway.adk.served_tool import media_list, typed_part
from gateway.tools import BaseTool, BaseToolset, ReadonlyContext, ToolContext
from gateway.tools.confirmation import CONFIRM_FIELD, confirmation_form, confirmed_payload

__all__ = ["AgentToolset"]

_SESSIONLESS: Final = "mcp"
_TEMP_PREFIX: Final = "temp:"
_CODE_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
_CONFIRMATION_CALL: Final = "adk_request_confirmation"
_PAUSING_CALLS: Final = frozenset({_CONFIRMATION_CALL, CREDENTIAL_CALL})
_REQUEST_SCHEMA: Final = {
    "type": "object",
    "properties": {"request": {"type": "string", "description": "What to ask the agent, in plain words."}},
    "required": ["request"],
}


def _output_schema(agent: BaseAgent) -> Any:
    """The agent's `output_schema` (an `LlmAgent`'s, else its last sub-agent's), or None."""
    if isinstance(agent, LlmAgent):
        return agent.output_schema
    return _output_schema(agent.sub_agents[-1]) if agent.sub_agents else None


def _json_schema(schema: Any) -> Any:
    if isinstance(schema, dict):
        return cast("dict[str, Any]", schema)
    if isinstance(schema, genai_types.Schema):
        return json_schema_of(schema)
    return pydantic.TypeAdapter(schema).json_schema()


def _structured(schema: Any, text: str) -> Any:
    """The final text read as the output schema says (fenced JSON accepted, as ADK does)."""
    fenced = _CODE_FENCE.match(text)
    raw = fenced.group(1) if fenced else text
    if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
        return schema.model_validate_json(raw).model_dump(mode="json", exclude_none=True)
    return json.loads(raw)


def _pausing_call(event: Event) -> FunctionCall | None:
    """The `adk_request_confirmation` or `adk_request_credential` call an event pauses on, if any."""
    waiting = event.long_running_tool_ids or set[str]()
    return next((c for c in event.get_function_calls() if c.name in _PAUSING_CALLS and c.id in waiting), None)


def _paused_on(events: list[Event], request: str) -> FunctionCall | None:
    """The confirmation or credential the session's last run waits on, if that run was started by `request`."""
    pending: FunctionCall | None = None
    for event in reversed(events):
        if event.author != "user":
            pending = pending or _pausing_call(event)
            continue
        if pending is None:
            return None
        parts = [] if event.content is None else event.content.parts or []
        text = "\n".join(part.text for part in parts if part.text)
        if text:
            return pending if text == request else None
    return None


async def _ask(context: ToolContext, call: FunctionCall) -> dict[str, Any]:
    """Ask the MCP client's user to confirm the call ADK holds back (raises `InputRequired` for a new round).

    The answer for ADK's `adk_request_confirmation`: `confirmed`, and the payload as the user left it in the form.
    """
    args = call.args or {}
    original = cast("dict[str, Any]", args.get("originalFunctionCall") or {})
    requested = cast("dict[str, Any]", args.get("toolConfirmation") or {})
    hint = str(requested.get("hint") or "")
    payload = requested.get("payload")
    shown = ", ".join(f"{key}={value!r}" for key, value in cast("dict[str, Any]", original.get("args") or {}).items())
    message = f"Allow the tool call {original.get('name', '?')}({shown})?"
    # ADK's default hint addresses a model ("respond with a FunctionResponse"); a person sees only custom hints.
    if hint and "FunctionResponse" not in hint:
        message += f"\n\n{hint}"
    answer = await context.elicit(message, confirmation_form(payload))
    content = answer.content or {}
    if answer.action != "accept" or not content.get(CONFIRM_FIELD):
        return {"confirmed": False}
    try:
        edited = confirmed_payload(payload, content)
    except ValueError:
        return {"confirmed": False}  # an answer the payload cannot take refuses the call, as on a served tool
    return {"confirmed": True} if edited is None else {"confirmed": True, "payload": edited}


def _describe(event: Event) -> str | None:
    """One progress line for an intermediate event: its text, else the calls it makes or answers."""
    if event.content is None or not event.content.parts:
        return None
    lines: list[str] = []
    for part in event.content.parts:
        if part.thought:
            continue
        if part.text:
            lines.append(part.text)
        elif part.function_call is not None and part.function_call.name not in _PAUSING_CALLS:
            args = json.dumps(part.function_call.args or {}, ensure_ascii=False, default=str)
            lines.append(f"{event.author} calls {part.function_call.name}({args})")
        elif part.function_response is not None:
            lines.append(f"{part.function_response.name} answered")
    return "\n".join(lines) or None


class _AgentRunTool(BaseTool):
    def __init__(self, agent: BaseAgent, runner: Runner, sessions: BaseSessionService) -> None:
        super().__init__(name=agent.name, description=agent.description or f"Run the {agent.name} agent.")
        self.agent = agent
        self._runner = runner
        self._sessions = sessions
        schema = _output_schema(agent)
        self._output_schema = schema
        self._declaration = FunctionDeclaration(
            name=agent.name,
            description=self.description,
            parameters_json_schema=_REQUEST_SCHEMA,
            response_json_schema=None if schema is None else _json_schema(schema),
        )

    def _get_declaration(self) -> FunctionDeclaration:
        return self._declaration

    async def _open_session(
        self, context: ToolContext, request: str
    ) -> tuple[dict[str, Any] | None, FunctionCall | None]:
        """Open the ADK session of this MCP session.

        Returns the state it lacks (the first event's delta) and, when its last run answered this same request
        and paused on a confirmation (a modern-era client answers in a new round), that confirmation call.
        """
        app, user, session_id = self._runner.app_name, context.user_id, context.session_id or _SESSIONLESS
        state = {key: value for key, value in context.state.to_dict().items() if not key.startswith(_TEMP_PREFIX)}
        session = await self._sessions.get_session(app_name=app, user_id=user, session_id=session_id)
        if session is None:
            await self._sessions.create_session(app_name=app, user_id=user, session_id=session_id, state=state)
            return None, None
        paused = _paused_on(session.events, request)
        if paused is not None:
            return None, paused
        return {
            key: value for key, value in state.items() if key not in session.state or session.state[key] != value
        }, None

    async def _run_once(
        self, context: ToolContext, message: genai_types.Content, delta: dict[str, Any] | None
    ) -> tuple[Event | None, str | None, FunctionCall | None]:
        """One run of the agent: its final event, its last error, and the confirmation it paused on (if any)."""
        final: Event | None = None
        error: str | None = None
        asked: FunctionCall | None = None
        events = self._runner.run_async(
            user_id=context.user_id,
            session_id=context.session_id or _SESSIONLESS,
            new_message=message,
            state_delta=delta,
        )
        async with aclosing(events):
            async for event in events:
                for key, value in event.actions.state_delta.items():
                    context.state[key] = value
                context.actions.artifact_delta.update(event.actions.artifact_delta)
                if event.actions.escalate and event.author == self.agent.name:
                    # The agent itself hands control back (a loop's sub-agents escalate to the loop, not beyond).
                    context.actions.escalate = True
                error = event.error_message or error
                asked = _pausing_call(event) or asked
                if event.is_final_response() and not event.long_running_tool_ids:
                    final = event
                    continue
                line = _describe(event)
                if line is not None:
                    await context.send_progress(line)
        return final, error, asked

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext | None) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Run the agent on `args["request"]`; the final text (or structured output) is the result.

        A confirmation the agent's tools ask for (ADK's `adk_request_confirmation`) is asked of the MCP client
        through elicitation, and the agent resumes with the answer. A credential they ask for is the one the server
        holds for the caller; without one, the call asks the server to sign the user in and run it again.
        """
        context = ToolContext() if tool_context is None else tool_context
        request = args.get("request")
        if not isinstance(request, str):
            return {"error": f"Invoking `{self.name}()` needs a `request` string, got {request!r:.80}."}
        if self._runner.memory_service is None or isinstance(self._runner.memory_service, AdkMemoryService):
            # Unless the agent was given a memory service of its own, its memory is the server's (per server user).
            self._runner.memory_service = adk_memory_service(context.memory_service, app_name=context.app_name)
        if self._runner.artifact_service is None or isinstance(self._runner.artifact_service, AdkArtifactService):
            # Unless the agent was given an artifact service of its own, its artifacts are the MCP session's.
            service = context.artifact_service
            self._runner.artifact_service = (
                None if service is None else AdkArtifactService(service, app_name=context.app_name)
            )
        delta, asked = await self._open_session(context, request)
        final: Event | None = None
        error: str | None = None
        if asked is None:
            message = genai_types.Content(role="user", parts=[genai_types.Part(text=request)])
            final, error, asked = await self._run_once(context, message, delta)
        answered_keys: set[str] = set()
        while asked is not None:
            if asked.name == CREDENTIAL_CALL:
                answer = credential_answer(context, asked, answered_keys)
                if answer is None:
                    await self._settle_state(context)
                    return {"pending": "Waiting for the user to sign in."}
            else:
                answer = genai_types.FunctionResponse(
                    id=asked.id, name=_CONFIRMATION_CALL, response=await _ask(context, asked)
                )
            message = genai_types.Content(role="user", parts=[genai_types.Part(function_response=answer)])
            final, error, asked = await self._run_once(context, message, None)
        await self._settle_state(context)
        return self._result(final, error)

    async def _settle_state(self, context: ToolContext) -> None:
        """Copy the ADK session's state to the MCP session's (it also holds what a round before an answer wrote)."""
        session = await self._sessions.get_session(
            app_name=self._runner.app_name, user_id=context.user_id, session_id=context.session_id or _SESSIONLESS
        )
        for key, value in (session.state if session is not None else {}).items():
            if key not in context.state or context.state[key] != value:
                context.state[key] = value

    def _result(self, final: Event | None, error: str | None) -> Any:
        parts = [] if final is None or final.content is None else list(final.content.parts or [])
        text = "\n".join(part.text for part in parts if part.text and not part.thought)
        if not text and error:
            return {"error": error}
        if self._output_schema is not None and text:
            try:
                return _structured(self._output_schema, text)
            except (ValueError, pydantic.ValidationError) as exc:
                return {"error": f"The agent's answer does not match its output schema: {exc}"}
        media = media_list([part for part in parts if part.inline_data is not None])
        if media:
            return {"result": text, "parts": [typed_part(item) for item in media]} if text else media
        return text


class AgentToolset(BaseToolset):
    """A google-adk agent as a toolset of one tool (see the module docstring); its ADK session ends with the MCP one.

    Args:
        agent: the root agent.
        session_service: where the ADK sessions (the conversations) live; default in memory, lost on a restart.
            Give google-adk's own `SqliteSessionService(path)` (or `DatabaseSessionService`) to keep them.
        memory_service: the agent's long-term memory (`load_memory`, `preload_memory`); default: the memory of the
            server that serves it.
    """

    def __init__(
        self,
        agent: BaseAgent,
        *,
        session_service: BaseSessionService | None = None,
        memory_service: BaseMemoryService | None = None,
    ) -> None:
        super().__init__()
        self.agent = agent
        self.source_name = f"google-adk agent {agent.name}"
        self._sessions = session_service or InMemorySessionService()
        self._runner = Runner(
            app_name=agent.name, agent=agent, session_service=self._sessions, memory_service=memory_service
        )
        self._tool = _AgentRunTool(agent, self._runner, self._sessions)

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """The one tool that runs the agent."""
        del readonly_context
        return [self._tool]

    async def release(self, readonly_context: ReadonlyContext | None = None) -> None:
        """Forget the ADK session (its events) of an MCP session that ended; its state stays in the store."""
        if readonly_context is None:
            return
        await self._sessions.delete_session(
            app_name=self._runner.app_name,
            user_id=readonly_context.user_id,
            session_id=readonly_context.session_id or _SESSIONLESS,
        )

    async def close(self) -> None:
        """Close the runner (and the toolsets its agents hold)."""
        await self._runner.close()
