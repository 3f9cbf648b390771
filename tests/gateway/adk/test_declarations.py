"""google-adk declarations become MCP tools exactly, whether they carry raw JSON Schema or a genai `Schema`."""

from __future__ import annotations

from enum import Enum
from typing import Any

import pytest
from google.adk.tools import BaseTool as AdkBaseTool
from google.adk.tools import FunctionTool as AdkFunctionTool
from google.genai import types
from pydantic import BaseModel

from adapters import declaration_to_mcp_tool, mcp_tool_to_declaration
from gateway.adk import from_adk
from gateway.tools import BaseTool, FunctionTool


class Color(Enum):
    RED = "red"
    GREEN = "green"


class Item(BaseModel):
    name: str
    quantity: int = 1


def order(items: list[Item], color: Color, note: str | None = None, rush: bool = False) -> dict[str, Any]:
    """Place an order."""
    return {"items": len(items), "color": color.value, "note": note, "rush": rush}


class LegacyTool(AdkBaseTool):
    """An ADK tool declaring its parameters the legacy way, as a genai `Schema`."""

    def __init__(self, parameters: types.Schema, response: types.Schema | None = None) -> None:
        super().__init__(name="legacy", description="Declared with a genai Schema.")
        self._parameters = parameters
        self._response = response

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters=self._parameters, response=self._response
        )


SCHEMAS = [
    types.Schema(
        type=types.Type.OBJECT,
        properties={
            "city": types.Schema(type=types.Type.STRING, description="The city."),
            "days": types.Schema(type=types.Type.INTEGER, minimum=1, maximum=14),
            "units": types.Schema(type=types.Type.STRING, enum=["metric", "imperial"], nullable=True),
            "tags": types.Schema(type=types.Type.ARRAY, items=types.Schema(type=types.Type.STRING), min_items=1),
        },
        required=["city"],
    ),
    types.Schema(
        type=types.Type.OBJECT,
        properties={
            "value": types.Schema(any_of=[types.Schema(type=types.Type.STRING), types.Schema(type=types.Type.NUMBER)]),
            "nested": types.Schema(
                type=types.Type.OBJECT, properties={"flag": types.Schema(type=types.Type.BOOLEAN)}, required=["flag"]
            ),
        },
    ),
]


def _published(tool: object) -> Any:
    served = from_adk(tool)
    assert isinstance(served, BaseTool)
    declaration = served.get_declaration()
    assert declaration is not None
    return declaration_to_mcp_tool(declaration, long_running=served.is_long_running)


def test_a_json_schema_declaration_is_published_as_it_is_and_comes_back_the_same() -> None:
    tool = AdkFunctionTool(order)
    declaration = tool._get_declaration()  # pyright: ignore[reportPrivateUsage]
    assert declaration is not None
    assert declaration.parameters_json_schema is not None
    published = _published(tool)
    assert published.name == "order"
    assert published.description == "Place an order."
    assert published.input_schema == declaration.parameters_json_schema
    # Back from MCP to a declaration: the schema ADK made is the schema an MCP client sees and returns.
    assert mcp_tool_to_declaration(published).parameters_json_schema == declaration.parameters_json_schema


@pytest.mark.parametrize("schema", SCHEMAS)
def test_a_genai_schema_declaration_is_published_as_its_json_schema_and_converts_back_to_the_same_schema(
    schema: types.Schema,
) -> None:
    published = _published(LegacyTool(schema, response=types.Schema(type=types.Type.STRING)))
    assert published.input_schema == schema.json_schema.model_dump(mode="json", by_alias=True, exclude_none=True)
    back = types.Schema.from_json_schema(json_schema=types.JSONSchema.model_validate(published.input_schema))
    assert back == schema
    assert published.output_schema is not None
    assert published.output_schema["properties"]["result"] == {"type": "string"}


def lookup_order_status(order_id: str) -> dict[str, Any]:
    """Fetches the current status of a customer's order using its ID.

    Args:
        order_id: The unique identifier of the order to look up.

    Returns:
        A dictionary indicating the outcome. On success, status is 'success' and includes an 'order' dictionary.
        On failure, status is 'error' and includes an 'error_message'.

    Raises:
        ConnectionError: the order service is down.
    """
    return {"status": "success", "order": {"id": order_id}}


def test_a_function_tools_description_is_google_adks_without_only_the_args_block() -> None:
    adk = AdkFunctionTool(lookup_order_status)._get_declaration()  # pyright: ignore[reportPrivateUsage]
    assert adk is not None
    assert adk.description is not None
    ours = FunctionTool(lookup_order_status).get_declaration()
    # The Args entries become the parameters' descriptions instead; everything else is google-adk's text.
    args_block = "Args:\n    order_id: The unique identifier of the order to look up.\n\n"
    assert args_block in adk.description

    assert ours.description == adk.description.replace(args_block, "")
