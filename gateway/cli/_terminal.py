"""The terminal as the MCP client of `call`: it answers what a tool asks of its user.

- **Elicitation** (form mode): the message, then one prompt per field on stderr, answers read from stdin (a pipe
  works too); an empty answer takes the field's default, end of input cancels. URL mode prints the URL to open.
- **Confirmation** (the gateway's own confirmation form): `--yes` approves (a payload as proposed); otherwise a
  terminal is asked `[y/N]` (or, for a payload to edit, each field), and without one the call is refused with a
  message saying to pass `--yes`.
- **Sampling** (an LLM completion): refused with a clear error, unless `--sample-with COMMAND` is given: COMMAND
  then runs with the conversation as text on its stdin, and its stdout is the reply.
- **Progress**: one line per update on stderr.
"""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any, Final, TextIO, cast

import anyio
from mcp import types
from mcp.client.context import ClientRequestContext

from gateway.cli._arguments import convert_value
from gateway.errors import GatewayError
from gateway.server.tool_call import CONFIRM_FIELD, confirmation_schema
from gateway.tools.confirmation import is_confirmation_form

__all__ = ["Terminal"]

_SAMPLING_DEADLINE: Final = 300.0
_TRIES: Final = 3


class Terminal:
    """The `elicitation_callback`, `sampling_callback` and `progress_callback` of `call`'s MCP client."""

    def __init__(
        self,
        *,
        assume_yes: bool,
        sample_with: str | None,
        stdin: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.assume_yes = assume_yes
        self.sample_with = sample_with
        self._stdin = stdin or sys.stdin
        self._stderr = stderr or sys.stderr

    def _say(self, text: str) -> None:
        print(text, file=self._stderr, flush=True)

    def _interactive(self) -> bool:
        return self._stdin.isatty()

    async def _ask(self, prompt: str) -> str | None:
        """One line typed in answer to `prompt` (without its newline), or None at the end of input."""
        print(prompt, end="", file=self._stderr, flush=True)
        line = await anyio.to_thread.run_sync(self._stdin.readline, abandon_on_cancel=True)
        return line.rstrip("\r\n") if line else None

    # --- elicitation ------------------------------------------------------------------------------------------

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """Answer an elicitation: a confirmation, a form, or a URL to open."""
        del context
        if isinstance(params, types.ElicitRequestURLParams):
            self._say(f"{params.message}\nOpen this URL to continue: {params.url}")
            return types.ElicitResult(action="accept")
        schema = params.requested_schema
        if schema == confirmation_schema() or (self.assume_yes and is_confirmation_form(schema)):
            return await self._confirm(params.message)
        return await self._fill(params.message, params.requested_schema)

    async def _confirm(self, message: str) -> types.ElicitResult:
        if self.assume_yes:
            self._say(f"{message}\nApproved by --yes.")
            return types.ElicitResult(action="accept", content={CONFIRM_FIELD: True})
        if not self._interactive():
            self._say(f"{message}\nadk-mcp-gateway: this call needs confirmation; pass --yes to approve it.")
            return types.ElicitResult(action="decline")
        answer = await self._ask(f"{message} [y/N] ")
        approved = answer is not None and answer.strip().lower() in ("y", "yes")
        return types.ElicitResult(action="accept", content={CONFIRM_FIELD: approved})

    async def _fill(self, message: str, schema: dict[str, Any]) -> types.ElicitResult:
        properties = cast("dict[str, dict[str, Any]]", schema.get("properties") or {})
        required = set(cast("list[str]", schema.get("required") or []))
        self._say(
            message + ("\n(an empty answer takes the default; end of input (Ctrl-D) cancels)" if properties else "")
        )
        content: dict[str, Any] = {}
        for name, field in properties.items():
            value = await self._field(name, field, name in required)
            if value is _CANCEL:
                self._say("Cancelled.")
                return types.ElicitResult(action="cancel")
            if value is not _SKIP:
                content[name] = value
        return types.ElicitResult(action="accept", content=content)

    async def _field(self, name: str, field: dict[str, Any], required: bool) -> Any:
        title = field.get("title") or name
        notes: list[str] = []
        choices = _choices(field)
        if choices:
            notes.append("one of " + ", ".join(choices))
        elif field.get("type"):
            notes.append(str(field["type"]))
        if "default" in field:
            notes.append(f"default {json.dumps(field['default'])}")
        if not required:
            notes.append("optional")
        description = f" — {field['description']}" if field.get("description") else ""
        prompt = f"  {title}{description} ({'; '.join(notes)}): "
        for _ in range(_TRIES):
            answer = await self._ask(prompt)
            if answer is None:
                return _CANCEL
            if not answer:
                if "default" in field:
                    return field["default"]
                if not required:
                    return _SKIP
                self._say(f"  {title} is required.")
                continue
            try:
                return _field_value(name, answer, field)
            except GatewayError as exc:
                self._say(f"  {exc}")
        return _CANCEL

    # --- sampling ---------------------------------------------------------------------------------------------

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """Answer a sampling request with `--sample-with COMMAND`, or refuse it saying how to answer it."""
        del context
        if not self.sample_with:
            message = (
                "The tool asked for an LLM completion (sampling), which `adk-mcp-gateway call` answers only when "
                "given --sample-with COMMAND; refused."
            )
            self._say(f"adk-mcp-gateway: {message}")
            return types.ErrorData(code=types.INVALID_REQUEST, message=message)
        command = shlex.split(self.sample_with)
        conversation = _conversation(params)
        try:
            with anyio.fail_after(_SAMPLING_DEADLINE):
                done = await anyio.run_process(command, input=conversation.encode(), check=False)
        except (OSError, TimeoutError) as exc:
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"--sample-with {self.sample_with!r}: {exc}")
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace").strip()[-500:]
            return types.ErrorData(
                code=types.INTERNAL_ERROR,
                message=f"--sample-with {self.sample_with!r} exited with {done.returncode}: {error}",
            )
        reply = done.stdout.decode(errors="replace").strip()
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=reply), model=command[0], stop_reason="endTurn"
        )

    # --- progress ---------------------------------------------------------------------------------------------

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Show one progress update on stderr."""
        done = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        self._say(f"progress: {done}{f' {message}' if message else ''}")


_CANCEL = object()
_SKIP = object()


def _choices(field: dict[str, Any]) -> list[str]:
    """The values a single-select field allows, as they are typed (plain `enum`, or titled `oneOf` consts)."""
    if isinstance(field.get("enum"), list):
        return [str(value) for value in cast("list[Any]", field["enum"])]
    options = cast("list[Any]", field.get("oneOf") or [])
    consts = [cast("dict[str, Any]", option) for option in options if isinstance(option, dict)]
    return [str(option["const"]) for option in consts if "const" in option]


def _field_value(name: str, answer: str, field: dict[str, Any]) -> Any:
    """A typed answer as the field's type; a multi-select (`array` of `enum`s) takes comma-separated values."""
    if field.get("type") == "array":
        items = cast("dict[str, Any]", field.get("items") or {})
        allowed = set(_choices(items))
        values = [part.strip() for part in answer.split(",") if part.strip()]
        wrong = [value for value in values if allowed and value not in allowed]
        if wrong:
            raise GatewayError(f"{', '.join(wrong)}: not one of {', '.join(sorted(allowed))}.")
        return values
    choices = _choices(field)
    if choices and answer not in choices:
        raise GatewayError(f"{answer!r} is not one of {', '.join(choices)}.")
    schema = {key: value for key, value in field.items() if key != "oneOf"} if choices else field
    return convert_value(name, answer, schema)


def _conversation(params: types.CreateMessageRequestParams) -> str:
    """A sampling request as plain text: the system prompt, then each message as `role: text`."""
    lines = [f"system: {params.system_prompt}"] if params.system_prompt else []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = " ".join(block.text for block in blocks if isinstance(block, types.TextContent))
        lines.append(f"{message.role}: {text}")
    return "\n".join(lines) + "\n"
