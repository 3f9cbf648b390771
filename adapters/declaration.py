"""The `FunctionDeclaration` value: what a model is told about one tool."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = ["FunctionDeclaration"]


class FunctionDeclaration(BaseModel):
    """A tool as a model sees it, shaped like ADK's (`google.genai.types.FunctionDeclaration`).

    The schemas are raw JSON Schema (ADK's `JSON_SCHEMA_FOR_FUNC_DECL` form): `parameters_json_schema` describes
    the arguments object, `response_json_schema` the function's return value before any `{"result": ...}`
    wrapping. `title`, `annotations` and `meta` are not in ADK's declaration; they carry the MCP tool's display
    title, behaviour hints (`readOnlyHint`, `destructiveHint`, ...) and `_meta`, so that an MCP tool survives a
    trip through a declaration unchanged. They are `None` for declarations built from Python functions.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)

    name: str
    description: str | None = None
    parameters_json_schema: dict[str, Any] | None = None
    response_json_schema: Any | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = Field(default=None)
    meta: dict[str, Any] | None = None
