"""Pure translation between ADK-style tool declarations and the Model Context Protocol.

No I/O, no event loop, no transport: only the standard library, pydantic and `mcp.types`.
"""

from adapters.declaration import FunctionDeclaration
from adapters.mcp_tool import declaration_to_mcp_tool, mcp_tool_to_declaration
from adapters.signature import function_to_declaration, parameters_model

__all__ = [
    "FunctionDeclaration",
    "declaration_to_mcp_tool",
    "function_to_declaration",
    "mcp_tool_to_declaration",
    "parameters_model",
]
