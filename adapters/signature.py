"""Python callable → `FunctionDeclaration`: name, docstring and type hints turned into JSON Schema.

The arguments schema is the JSON Schema of a pydantic model built from the signature, the shape google-adk emits
(`<name>Params` title, per-property titles, `$defs` + `$ref` for models and enums, `anyOf[X, null]` for
`Optional`). The tool description is ADK's: the whole cleaned docstring, `Returns:` and `Raises:` included, word
for word, with one difference: each `Args:` entry becomes its parameter's `description`, so the parameter section
(Google `Args:`, numpy `Parameters`, reST `:param:`) is kept out of the tool description.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
import types
import typing
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Collection,
    Generator,
    Iterable,
    Iterator,
)
from dataclasses import dataclass
from typing import Annotated, Any

import docstring_parser
import pydantic
from mcp import types as mcp_types
from pydantic import BaseModel, Field, create_model
from pydantic.fields import FieldInfo

from adapters.declaration import FunctionDeclaration
from adapters.media import Media

__all__ = ["ParametersModel", "callable_name", "callable_target", "function_to_declaration", "parameters_model"]

logger = logging.getLogger(__name__)

CONTEXT_PARAMETER = "tool_context"
_SKIPPED_KINDS = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
_GENERATOR_ORIGINS = (Generator, Iterator, Iterable)
_ASYNC_GENERATOR_ORIGINS = (AsyncGenerator, AsyncIterator, AsyncIterable)
_MEDIA_TYPES = (
    bytes,
    bytearray,
    memoryview,
    Media,
    mcp_types.TextContent,
    mcp_types.ImageContent,
    mcp_types.AudioContent,
    mcp_types.EmbeddedResource,
    mcp_types.ResourceLink,
)
_EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ParametersModel:
    """The pydantic model of a callable's parameters, and how its field names map to parameter names.

    A parameter whose name would shadow a `BaseModel` attribute (`schema`, `json`, `copy`...) gets a renamed
    field with the parameter name as its alias, so the schema and validation still use the real name.
    """

    model: type[BaseModel]
    field_to_parameter: dict[str, str]
    required: tuple[str, ...]

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate and convert `arguments`; raises `pydantic.ValidationError` naming every bad field."""
        instance = self.model.model_validate(arguments)
        return {
            self.field_to_parameter[name]: getattr(instance, name)
            for name in type(instance).model_fields
            if self.field_to_parameter[name] in arguments
        }


def callable_name(func: Callable[..., Any]) -> str:
    """The tool name ADK gives a callable: `__name__`, the wrapped function's for a partial, else the class's."""
    while isinstance(func, functools.partial):
        func = func.func  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    name = getattr(func, "__name__", None)
    return name if isinstance(name, str) else type(func).__name__


def callable_target(func: Callable[..., Any]) -> Callable[..., Any]:
    """The function whose code runs and whose annotations describe `func`: a partial's function, a callable
    object's `__call__`, else `func` itself."""
    while isinstance(func, functools.partial):
        func = func.func  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not (inspect.isfunction(func) or inspect.ismethod(func)) and callable(func):
        call = getattr(func, "__call__", None)  # noqa: B004 - a callable object's annotations live on __call__
        if call is not None:
            return call
    return func


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    target = callable_target(func)
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError, AttributeError) as exc:
        raise TypeError(
            f"Cannot resolve the type hints of {callable_name(func)}(): {exc}. "
            "Import every type used in its annotations at module level."
        ) from exc


def _docstring_text(func: Callable[..., Any]) -> str:
    # The target's own docstring first: `inspect.getdoc` on a callable object's undocumented `__call__` would
    # find `type.__call__`'s "Call self as a function."; the object's class docstring is the better fallback.
    own = getattr(callable_target(func), "__doc__", None)
    text = inspect.cleandoc(own) if isinstance(own, str) and own.strip() else inspect.getdoc(func)
    return text or ""


def _docstring(func: Callable[..., Any]) -> docstring_parser.Docstring:
    return docstring_parser.parse(_docstring_text(func))


# Only the sections `docstring_parser` reads parameter descriptions from: any other section is kept as ADK keeps it.
_GOOGLE_PARAMETER_HEADER = re.compile(r"(Args|Arguments|Parameters|Params):\s*")
_NUMPY_PARAMETER_TITLES = frozenset({"Parameters", "Params", "Arguments", "Args"})
_NUMPY_UNDERLINE = re.compile(r"-{3,}\s*")
_REST_PARAMETER_FIELD = re.compile(r":(param|parameter|arg|argument|key|keyword|type)\b")


def _is_numpy_header(lines: list[str], index: int) -> bool:
    return index + 1 < len(lines) and bool(lines[index].strip()) and bool(_NUMPY_UNDERLINE.fullmatch(lines[index + 1]))


def _parameter_section_end(lines: list[str], index: int, style: docstring_parser.DocstringStyle) -> int:
    """Where the parameter section starting at `lines[index]` ends, or `index` when none starts there."""
    line = lines[index]
    end = index
    if style is docstring_parser.DocstringStyle.GOOGLE and _GOOGLE_PARAMETER_HEADER.fullmatch(line):
        end = index + 1
        while end < len(lines) and (lines[end][:1].isspace() or not lines[end].strip()):
            end += 1
    elif (
        style is docstring_parser.DocstringStyle.NUMPYDOC
        and line.strip() in _NUMPY_PARAMETER_TITLES
        and _is_numpy_header(lines, index)
    ):
        end = index + 2
        while end < len(lines) and not _is_numpy_header(lines, end):
            end += 1
    elif style is docstring_parser.DocstringStyle.REST and _REST_PARAMETER_FIELD.match(line):
        end = index + 1
        while end < len(lines) and lines[end][:1].isspace() and lines[end].strip():
            end += 1
    return end


def _description(text: str, doc: docstring_parser.Docstring) -> str | None:
    """ADK's description (the cleaned docstring as it is) without the parameter section `doc.params` came from."""
    if not doc.params or doc.style is None:
        return text or None
    lines = text.splitlines()
    kept: list[str] = []
    index = 0
    while index < len(lines):
        end = _parameter_section_end(lines, index, doc.style)
        if end == index:
            kept.append(lines[index])
            index += 1
        else:
            index = end
    return "\n".join(kept).strip() or None


def _has_description(annotation: Any, default: Any) -> bool:
    if isinstance(default, FieldInfo) and default.description:
        return True
    if typing.get_origin(annotation) is Annotated:
        return any(isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__)
    return False


def _is_context_type(annotation: Any, context_types: Collection[type]) -> bool:
    if annotation in context_types:
        return True
    # `Optional[ToolContext]` counts too, as in ADK.
    return any(arg in context_types for arg in typing.get_args(annotation))


def parameters_model(
    func: Callable[..., Any],
    *,
    exclude: Collection[str] = (CONTEXT_PARAMETER,),
    context_types: Collection[type] = (),
) -> ParametersModel:
    """Build the pydantic model of `func`'s model-visible parameters.

    Args:
        func: a function, bound method, callable object or `functools.partial`.
        exclude: parameter names injected by the runtime rather than chosen by the model.
        context_types: parameter types injected by the runtime (a parameter of such a type is excluded too).

    Raises:
        TypeError: a hint cannot be resolved, or a parameter's type has no JSON Schema.
    """
    name = callable_name(func)
    hints = _type_hints(func)
    doc = _docstring(func)
    param_docs = {p.arg_name: p.description for p in doc.params if p.description}
    fields: dict[str, Any] = {}
    field_to_parameter: dict[str, str] = {}
    required: list[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.kind in _SKIPPED_KINDS or param.name in exclude:
            continue
        annotation = hints.get(param.name, Any)
        if context_types and _is_context_type(annotation, context_types):
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        if default is ... or (isinstance(default, FieldInfo) and default.is_required()):
            required.append(param.name)
        doc_text = param_docs.get(param.name)
        if doc_text and not _has_description(annotation, default):
            annotation = Annotated[annotation, Field(description=doc_text)]
        field_name = param.name
        if hasattr(BaseModel, field_name) or field_name.startswith("model_"):
            field_name = f"{param.name}__param"
            extra = Field(alias=param.name, title=param.name.replace("_", " ").title())
            annotation = Annotated[annotation, extra]
        fields[field_name] = (annotation, default)
        field_to_parameter[field_name] = param.name
    try:
        # `allow_inf_nan=False`: JSON has no NaN or Infinity (a result holding one goes out as `null`); a parameter
        # that wants them says so with `Field(allow_inf_nan=True)`. Nested models keep their own configuration.
        config = pydantic.ConfigDict(arbitrary_types_allowed=False, allow_inf_nan=False)
        model = create_model(f"{name}Params", __config__=config, **fields)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        raise TypeError(f"Cannot build the argument schema of {name}(): {exc}") from exc
    return ParametersModel(model=model, field_to_parameter=field_to_parameter, required=tuple(required))


def _result_annotation(func: Callable[..., Any], hints: dict[str, Any]) -> Any:
    """The type of the final result: a generator's return type (or its yield type when it returns nothing)."""
    annotation = hints.get("return", inspect.Signature.empty)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in _ASYNC_GENERATOR_ORIGINS and args:
        return args[0]
    if origin in _GENERATOR_ORIGINS and args:
        # Only `Generator[Y, S, R]` has a return type; `Iterator[Y]` and `Iterable[Y]` have one argument.
        if len(args) == 3 and args[2] not in (None, type(None)):
            return args[2]
        return args[0]
    return annotation


def _is_media_type(annotation: Any) -> bool:
    """Binary and content-block returns travel as MCP content blocks, not as structured content."""
    if typing.get_origin(annotation) in (list, tuple, typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg not in (Ellipsis, type(None))]
        return bool(members) and all(_is_media_type(arg) for arg in members)
    return isinstance(annotation, type) and issubclass(annotation, _MEDIA_TYPES)


def _response_schema(func: Callable[..., Any], hints: dict[str, Any]) -> Any:
    annotation = _result_annotation(func, hints)
    if annotation in (inspect.Signature.empty, None, type(None), Any) or _is_media_type(annotation):
        return None
    try:
        return pydantic.TypeAdapter(annotation).json_schema()
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as exc:
        # A return type without a JSON Schema only costs the response schema, not the tool.
        logger.debug("No response schema for %s(): %s", callable_name(func), exc)
        return None


def function_to_declaration(
    func: Callable[..., Any],
    *,
    exclude: Collection[str] = (CONTEXT_PARAMETER,),
    context_types: Collection[type] = (),
) -> FunctionDeclaration:
    """Describe a Python callable as a `FunctionDeclaration`.

    Args:
        func: a sync or async function, generator function, bound method, callable object or partial.
        exclude: parameter names hidden from the schema because the runtime injects them.
        context_types: parameter types hidden from the schema for the same reason.

    Raises:
        TypeError: a type hint cannot be resolved or has no JSON Schema.
    """
    params = parameters_model(func, exclude=exclude, context_types=context_types)
    schema: dict[str, Any] | None = None
    if params.field_to_parameter:
        schema = params.model.model_json_schema()
    return FunctionDeclaration(
        name=callable_name(func),
        description=_description(_docstring_text(func), _docstring(func)),
        parameters_json_schema=schema,
        response_json_schema=_response_schema(func, _type_hints(func)),
    )


def empty_parameters_schema() -> dict[str, Any]:
    """The arguments schema of a tool that takes none: an object with no properties (never `{}`)."""
    return dict(_EMPTY_OBJECT_SCHEMA, properties={})
