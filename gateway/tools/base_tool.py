"""`BaseTool`: the one protocol every tool speaks, as in ADK."""

from __future__ import annotations

import copy
from typing import Any, Final, Literal

from adapters import FunctionDeclaration
from gateway.errors import ToolDefinitionError
from gateway.tools.context import ToolContext

__all__ = ["RESERVED_TOOL_NAMES", "BaseTool", "FixedSchemaTool"]

RESERVED_TOOL_NAMES: Final = frozenset(
    {
        "adk_request_confirmation",
        "adk_request_credential",
        "adk_request_input",
        "transfer_to_agent",
        "set_model_response",
    }
)
"""Names ADK's runtime uses for its own function calls; a tool named so would be shadowed or hijack them."""


def check_tool_name(name: str) -> None:
    """Refuse names ADK reserves for itself."""
    if name in RESERVED_TOOL_NAMES:
        raise ToolDefinitionError(
            f"The tool name {name!r} is reserved by ADK for its own function calls "
            f"({', '.join(sorted(RESERVED_TOOL_NAMES))}); rename the function or give the tool another name."
        )


class BaseTool:
    """A tool an agent can call: a name, a description, a declaration and `run_async`."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        is_long_running: bool = False,
        custom_metadata: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.is_long_running = is_long_running
        self.custom_metadata = custom_metadata

    @property
    def name(self) -> str:
        """The name the model calls this tool by; ADK's reserved names are refused."""
        return self._name

    @name.setter
    def name(self, name: str) -> None:
        # A setter, so that renaming (a toolset prefix, user code) cannot produce a reserved name either.
        check_tool_name(name)
        self._name = name

    @property
    def uses_state(self) -> bool:
        """Whether a call can read or write `tool_context.state` (default: yes).

        A server runs the calls of one session that use state one at a time, so none loses another's update;
        tools that say no here run in parallel with everything.
        """
        return True

    @property
    def task_support(self) -> Literal["forbidden", "optional", "required"]:
        """Whether a call may run as an MCP task (SEP-2663 `execution.taskSupport`; default: `optional` for a
        long-running tool, else `forbidden`). `required`: only as a task (a modern-era client that did not declare
        the tasks extension is refused)."""
        return "optional" if self.is_long_running else "forbidden"

    @property
    def needs_credentials(self) -> bool:
        """Whether the tool declares that it asks for user credentials (a server then needs a credential key)."""
        return False

    def _get_declaration(self) -> FunctionDeclaration | None:
        """The declaration a model sees; None for tools a model does not call directly."""
        return None

    def get_declaration(self) -> FunctionDeclaration | None:
        """The declaration under this tool's current name (which a toolset prefix may have changed)."""
        declaration = self._get_declaration()
        if declaration is not None and declaration.name != self.name:
            declaration = declaration.model_copy(update={"name": self.name})
        return declaration

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run the tool; returns the ADK function response (a dict) or a value the caller wraps."""
        raise NotImplementedError(f"{type(self).__name__} does not implement run_async()")

    def check_require_confirmation(self, args: dict[str, Any], tool_context: ToolContext) -> bool:
        """Whether this call needs a human's confirmation before it runs (default: no).

        Subclasses may override it with an `async def`; callers await the result when it is awaitable.
        """
        del args, tool_context
        return False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class FixedSchemaTool(BaseTool):
    """A tool of the gateway's own whose parameters are one fixed JSON schema and which leaves state alone, so a
    server runs its calls beside any other (the toolsets' `sign_in` and `load_mcp_resource`).

    Args:
        parameters: the JSON schema of its arguments.
        annotations: the MCP tool annotations it declares, if any.
    """

    def __init__(
        self, *, name: str, description: str, parameters: dict[str, Any], annotations: dict[str, Any] | None = None
    ) -> None:
        super().__init__(name=name, description=description)
        self._parameters = parameters
        self._annotations = annotations

    @property
    def uses_state(self) -> bool:
        """No: what it needs comes in its arguments and its context's credentials and services."""
        return False

    def _get_declaration(self) -> FunctionDeclaration:
        fields: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            # A copy each time, as a declaration built afresh: whoever reads it may change it in place.
            "parameters_json_schema": copy.deepcopy(self._parameters),
        }
        if self._annotations is not None:
            fields["annotations"] = self._annotations
        return FunctionDeclaration.model_validate(fields)
