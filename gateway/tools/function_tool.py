"""`FunctionTool`: a Python callable as a tool, with ADK's call semantics plus argument validation."""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, cast

import anyio
import anyio.to_thread
import pydantic
import pydantic_core
from pydantic.fields import FieldInfo

from adapters import FunctionDeclaration, function_to_declaration, parameters_model
from adapters.signature import callable_name, callable_target
from gateway.errors import ToolDefinitionError
from gateway.tools._json_kinds import kind_mismatches
from gateway.tools.base_tool import BaseTool
from gateway.tools.confirmation import confirmation_gate
from gateway.tools.context import ToolContext
from gateway.tools.tool_updates import drain_async_generator, drain_generator

__all__ = ["ConfirmationHint", "ConfirmationPolicy", "FunctionTool", "drain_async_generator", "drain_generator"]

ConfirmationPolicy = bool | Callable[..., bool | Awaitable[bool]]
"""`True`, `False`, or a predicate called with the tool's arguments (and `tool_context` if it asks for it)."""

ConfirmationHint = Callable[[dict[str, Any]], str]
"""Words the question a call's confirmation asks, from the call's (validated) arguments."""

_CONTEXT_PARAMETER = "tool_context"
_MAX_INPUT_REPR = 80
_RUNTIME_PARAMETERS = frozenset({_CONTEXT_PARAMETER, "input_stream"})

_Kind = Literal["sync", "coroutine", "generator", "async_generator"]


def missing_arguments_error(tool_name: str, missing: list[str]) -> dict[str, str]:
    """ADK's error dict for a call without some mandatory arguments (the names joined with newlines)."""
    names = "\n".join(missing)
    return {
        "error": f"Invoking `{tool_name}()` failed as the following mandatory input parameters are not "
        f"present:\n{names}\nYou could retry calling this tool, but it is IMPORTANT for you to provide all "
        "the mandatory parameters."
    }


def no_such_argument(known: Iterable[str]) -> str:
    """What is said of an argument a tool does not take, by every tool and by `call` (after `Parameter 'x': `)."""
    return f"the tool takes no such argument (its arguments: {', '.join(known) or 'none'})"


def unexpected_arguments_error(tool_name: str, unexpected: Mapping[str, Any], known: Iterable[str]) -> dict[str, str]:
    """ADK's validation error dict for arguments the tool does not take, each named with the value given."""
    reason = no_such_argument(known)
    return {"error": _validation_message(tool_name, [((name,), reason, value) for name, value in unexpected.items()])}


def _is_context_hint(hint: Any) -> bool:
    # `Optional[ToolContext]` counts too, as in ADK.
    return hint is ToolContext or ToolContext in typing.get_args(hint)


def _context_parameter(func: Callable[..., Any], parameters: Mapping[str, inspect.Parameter]) -> str | None:
    """The parameter that receives the ToolContext: the first one typed `ToolContext`, else one named so."""
    try:
        hints = typing.get_type_hints(callable_target(func))
    except (NameError, TypeError, AttributeError):
        # Unresolvable hints are reported by the schema builder; here only a string annotation can help.
        hints = {name: p.annotation for name, p in parameters.items()}
    for name in parameters:
        hint = hints.get(name)
        if _is_context_hint(hint) or hint == "ToolContext":
            return name
    return _CONTEXT_PARAMETER if _CONTEXT_PARAMETER in parameters else None


def _takes_context(predicate: Callable[..., Any]) -> bool:
    """Whether `call_predicate` would hand `predicate` the `ToolContext` (unreadable signatures: assume so)."""
    try:
        parameters = inspect.signature(predicate).parameters
    except (TypeError, ValueError):
        return True
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return True
    return _context_parameter(predicate, parameters) is not None


def _kind(func: Callable[..., Any]) -> _Kind:
    target = callable_target(func)
    if inspect.isasyncgenfunction(target):
        return "async_generator"
    if inspect.isgeneratorfunction(target):
        return "generator"
    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(func):
        return "coroutine"
    return "sync"


def _validation_message(tool_name: str, problems: list[tuple[tuple[str | int, ...], str, Any]]) -> str:
    """ADK's validation error text, one line per bad field, each with the input that was rejected."""
    lines = [f"Invoking `{tool_name}()` failed due to argument validation errors:"]
    for loc, message, value in problems:
        where = ".".join(str(part) for part in loc)
        got = repr(value)
        got = got if len(got) <= _MAX_INPUT_REPR else got[: _MAX_INPUT_REPR - 3] + "..."
        lines.append(f"Parameter '{where}': {message} (got {got})")
    lines.append("You could retry calling this tool with corrected argument types.")
    return "\n".join(lines)


def _pydantic_problems(error: pydantic.ValidationError) -> list[tuple[tuple[str | int, ...], str, Any]]:
    return [(tuple(d["loc"]), d["msg"], d.get("input")) for d in error.errors(include_url=False)]


async def call_predicate(predicate: Callable[..., Any], args: dict[str, Any], tool_context: ToolContext) -> bool:
    """Call a confirmation predicate with the arguments it declares (all of them if it takes `**kwargs`)."""
    parameters = inspect.signature(predicate).parameters
    offered = {**args, _CONTEXT_PARAMETER: tool_context}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        chosen = offered
    else:
        chosen = {name: value for name, value in offered.items() if name in parameters}
        context_name = _context_parameter(predicate, parameters)
        if context_name is not None:
            chosen[context_name] = tool_context
    answer = predicate(**chosen)
    if inspect.isawaitable(answer):
        answer = await answer
    return bool(answer)


class FunctionTool(BaseTool):
    """A tool that calls a Python function (sync or async, a bound method or a callable object).

    The declaration comes from the signature and docstring (see `adapters.function_to_declaration`).
    A parameter named `tool_context` or typed `ToolContext` receives the context and is hidden from the model.

    Arguments are validated by pydantic, with two rules stricter than its lax mode: booleans and numbers are
    distinct (`true` is no `int`, `1` no `bool`), and NaN and ±Infinity are refused unless the parameter says
    `Field(allow_inf_nan=True)`. Numeric strings are still converted (`"12"` for an `int`): models often quote
    numbers, and such a string has one meaning.

    Args:
        func: the callable.
        require_confirmation: ask a human before each call (`True`), never (`False`), or when a predicate
            over the call's arguments says so.
        confirmation_hint: what the human is asked, from the call's arguments (the Rust ADK's
            `confirmation_hint(args)`), e.g. `lambda args: f"Delete {args['path']}?"`; default: ADK's hint.

    Raises:
        ToolDefinitionError: `func` is not callable, its signature cannot be read, a type hint has no JSON
            Schema, or its name is reserved by ADK.
    """

    _passed_parameters: frozenset[str] = frozenset()
    """Parameters a subclass fills in itself (passed through `args`, hidden from the model)."""
    _long_running: bool = False
    """Whether the tools of a subclass are long-running (`BaseTool.is_long_running`)."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        require_confirmation: ConfirmationPolicy = False,
        confirmation_hint: ConfirmationHint | None = None,
    ) -> None:
        if not callable(func):
            raise ToolDefinitionError(f"FunctionTool needs a callable, got {type(func).__name__}: {func!r}")
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError) as exc:
            raise ToolDefinitionError(
                f"Cannot read the signature of {func!r} ({exc}); wrap it in a Python function with typed parameters."
            ) from exc
        self.func = func
        self._require_confirmation = require_confirmation
        self._confirmation_hint = confirmation_hint
        self._context_param = _context_parameter(func, signature.parameters)
        self._passed = frozenset(name for name in self._passed_parameters if name in signature.parameters)
        excluded = (
            _RUNTIME_PARAMETERS
            | self._passed_parameters
            | ({self._context_param} if self._context_param else set[str]())
        )
        try:
            self._parameters = parameters_model(func, exclude=excluded, context_types=(ToolContext,))
            self._declaration = function_to_declaration(func, exclude=excluded, context_types=(ToolContext,))
        except TypeError as exc:
            raise ToolDefinitionError(str(exc)) from exc
        self._known = frozenset(self._parameters.field_to_parameter.values())
        self._schema: dict[str, Any] | None = self._declaration.parameters_json_schema
        self._order = {name: index for index, name in enumerate(self._parameters.field_to_parameter.values())}
        # `x: int = Field(5, description=...)`: Python would pass the FieldInfo itself as the default.
        self._field_defaults = {
            name: param.default
            for name, param in signature.parameters.items()
            if name in self._known and isinstance(param.default, FieldInfo) and not param.default.is_required()
        }
        self._positional_only = [
            p for p in signature.parameters.values() if p.kind is inspect.Parameter.POSITIONAL_ONLY
        ]
        self._takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
        self._kind = _kind(func)
        super().__init__(
            name=callable_name(func),
            description=self._declaration.description or "",
            is_long_running=self._long_running,
        )

    def _get_declaration(self) -> FunctionDeclaration:
        return self._declaration

    def get_declaration(self) -> FunctionDeclaration:
        """The declaration under this tool's current name; a function tool always has one."""
        declaration = self._get_declaration()
        if declaration.name != self.name:
            declaration = declaration.model_copy(update={"name": self.name})
        return declaration

    @property
    def uses_state(self) -> bool:
        """Whether the function, or its confirmation predicate, takes the `ToolContext` (and so sees state)."""
        policy = self._require_confirmation
        return self._context_param is not None or (callable(policy) and _takes_context(policy))

    @property
    def require_confirmation(self) -> ConfirmationPolicy:
        """The confirmation policy given at construction."""
        return self._require_confirmation

    async def check_require_confirmation(self, args: dict[str, Any], tool_context: ToolContext) -> bool:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Evaluate the confirmation policy for these arguments."""
        policy = self._require_confirmation
        if callable(policy):
            return await call_predicate(policy, args, tool_context)
        return bool(policy)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext | None) -> Any:  # pyright: ignore[reportIncompatibleMethodOverride]
        """Call the function as ADK does, after checking and validating the arguments.

        Returns ADK's error dict (and does not call the function) for missing or invalid arguments and for a
        call that awaits or lost a confirmation; otherwise the function's result, a non-dict wrapped as
        `{"result": value}`. Exceptions raised by the function propagate. With `tool_context=None` the call gets
        a fresh context (a generator's updates are kept in its `ProgressLog`).
        """
        if tool_context is None:
            tool_context = ToolContext()
        args = dict(args or {})
        given = {k: v for k, v in args.items() if k in self._known}
        extra = {
            k: v
            for k, v in args.items()
            if k not in self._known and k not in _RUNTIME_PARAMETERS and k not in self._passed_parameters
        }

        missing = [name for name in self._parameters.required if name not in given]
        if missing:
            return missing_arguments_error(self.name, missing)
        # Booleans and numbers are told apart first (pydantic's lax mode would convert one into the other).
        mismatches = kind_mismatches(self._schema, given) if self._schema is not None else []
        problems = [(m.loc, m.message, m.value) for m in mismatches]
        call_args: dict[str, Any] = {}
        try:
            call_args = self._parameters.validate(given)
        except pydantic.ValidationError as exc:
            seen = {loc for loc, _, _ in problems}
            problems += [problem for problem in _pydantic_problems(exc) if problem[0] not in seen]
        if extra and not self._takes_kwargs:
            # ADK's FunctionTool drops them unseen; a misspelt optional argument would silently take its default.
            reason = no_such_argument(self._parameters.field_to_parameter.values())
            problems += [((name,), reason, value) for name, value in extra.items() if name != self._context_param]
        if problems:
            problems.sort(key=lambda problem: self._order.get(str(problem[0][0]) if problem[0] else "", 0))
            return {"error": _validation_message(self.name, problems)}
        for name, field in self._field_defaults.items():
            if name not in call_args:
                call_args[name] = field.get_default(call_default_factory=True, validated_data=dict(call_args))
        if self._takes_kwargs:
            call_args.update(extra)

        required = await self.check_require_confirmation(call_args, tool_context)
        hint = self._confirmation_hint(dict(call_args)) if required and self._confirmation_hint else None
        refusal = confirmation_gate(self.name, required, tool_context, hint=hint)
        if refusal is not None:
            return {"error": refusal}

        if self._context_param is not None:
            call_args[self._context_param] = tool_context
        call_args.update({name: args[name] for name in self._passed if name in args})
        result = await self._invoke(call_args, tool_context)
        return self._response(result)

    def _response(self, result: Any) -> dict[str, Any]:
        """Shape a return value as the declared response: the MCP `outputSchema` must describe what is sent.

        A declared object type (a model, dataclass, TypedDict or dict) gives its fields as the response; a
        declared non-object type is always wrapped as `{"result": value}`, even when the value is a dict; with no
        declared type, ADK's rule applies (a dict as it is, anything else wrapped).
        """
        declared: Any = self._declaration.response_json_schema
        is_object = isinstance(declared, dict) and cast("dict[str, Any]", declared).get("type") == "object"
        if is_object and not isinstance(result, dict):
            result = pydantic_core.to_jsonable_python(result)
        elif declared is not None and not is_object:
            return {"result": result}
        if isinstance(result, dict):
            return cast("dict[str, Any]", result)
        return {"result": result}

    def _split_positional(self, call_args: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Pass positional-only parameters (`def f(a, /)`, many builtins) by position."""
        keywords = dict(call_args)
        positional: list[Any] = []
        for param in self._positional_only:
            if param.name in keywords:
                positional.append(keywords.pop(param.name))
            elif param.default is not inspect.Parameter.empty:
                positional.append(param.default)  # keeps the later ones in their places
            else:
                break
        return positional, keywords

    async def _invoke(self, call_args: dict[str, Any], tool_context: ToolContext) -> Any:
        positional, keywords = self._split_positional(call_args)
        if self._kind == "async_generator":
            return await drain_async_generator(self.func(*positional, **keywords), tool_context)
        if self._kind == "generator":
            return await drain_generator(self.func(*positional, **keywords), tool_context)
        if self._kind == "coroutine":
            return await self.func(*positional, **keywords)
        result = await anyio.to_thread.run_sync(functools.partial(self.func, *positional, **keywords))
        if inspect.isawaitable(result):
            # A sync wrapper around an async function returns a coroutine.
            result = await result
        return result
