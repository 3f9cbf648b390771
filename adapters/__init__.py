"""Pure translation between ADK-style tool declarations and the Model Context Protocol.

No I/O, no event loop, no transport: only the standard library, pydantic and `mcp.types`.
"""

from adapters.declaration import FunctionDeclaration
from adapters.gemini_schema import to_gemini_schema
from adapters.mcp_tool import declaration_to_mcp_tool, mcp_tool_to_declaration
from adapters.media import Media
from adapters.results import mcp_result_to_response, response_to_mcp_result
from adapters.signature import function_to_declaration, parameters_model

__all__ = [
    "FunctionDeclaration",
    "Media",
    "declaration_to_mcp_tool",
    "function_to_declaration",
    "mcp_result_to_response",
    "mcp_tool_to_declaration",
    "parameters_model",
    "response_to_mcp_result",
    "to_gemini_schema",
]
