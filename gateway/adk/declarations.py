"""Declarations both ways: google-genai's `FunctionDeclaration` and ours (raw JSON Schema).

From ADK the conversion is exact: `parameters_json_schema` is taken as it is, a genai `Schema` (ADK's legacy form)
through genai's own `Schema.json_schema`. Towards ADK the parameters go through `to_gemini_schema`, so that a
model endpoint accepting only Gemini's schema subset takes any MCP tool (no `$ref`, no `anyOf` without a type, no
`null` types); the raw schema's meaning is kept as far as that subset can say it.
"""

from __future__ import annotations

from typing import Any

from google.genai import types

from adapters import FunctionDeclaration, to_gemini_schema

__all__ = ["declaration_from_adk", "declaration_to_adk", "json_schema_of"]


def json_schema_of(schema: types.Schema) -> dict[str, Any]:
    """A genai `Schema` as JSON Schema (`nullable` becomes a `null` type, enum names become lower-case types)."""
    return schema.json_schema.model_dump(mode="json", by_alias=True, exclude_none=True)


def declaration_from_adk(declaration: types.FunctionDeclaration, *, name: str) -> FunctionDeclaration:
    """Our declaration of a google-adk tool, published under `name` (the tool's name, which a prefix may change)."""
    parameters: dict[str, Any] | None = None
    if declaration.parameters_json_schema is not None:
        parameters = dict(declaration.parameters_json_schema)
    elif declaration.parameters is not None:
        parameters = json_schema_of(declaration.parameters)
    response: Any = None
    if declaration.response_json_schema is not None:
        response = declaration.response_json_schema
    elif declaration.response is not None:
        response = json_schema_of(declaration.response)
    return FunctionDeclaration(
        name=name,
        description=declaration.description,
        parameters_json_schema=parameters,
        response_json_schema=response,
    )


def declaration_to_adk(declaration: FunctionDeclaration) -> types.FunctionDeclaration:
    """A genai declaration of one of our tools, its parameters in Gemini's schema subset.

    The response schema is left out, as google-adk's own `FunctionTool` does for the Gemini API.
    """
    parameters = None
    if declaration.parameters_json_schema is not None:
        parameters = types.Schema.model_validate(to_gemini_schema(declaration.parameters_json_schema))
    return types.FunctionDeclaration(
        name=declaration.name, description=declaration.description or "", parameters=parameters
    )
