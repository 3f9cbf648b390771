from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from adapters import FunctionDeclaration
from gateway.errors import ToolDefinitionError
from gateway.tools import BaseTool, BaseToolset, FunctionTool, ReadonlyContext, ToolContext
from gateway.tools.base_tool import RESERVED_TOOL_NAMES


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


ADK_RESERVED = {
    "adk_request_confirmation",
    "adk_request_credential",
    "adk_request_input",
    "transfer_to_agent",
    "set_model_response",
}


def search(query: str) -> str:
    """Search the catalog."""
    return f"found {query}"


def fetch(url: str) -> str:
    """Fetch a page."""
    return f"page {url}"


def agent(name: str) -> str:
    """Look up an agent."""
    return name


class Catalog(BaseToolset):
    """A toolset over fixed tools that honours the filter, and records the contexts it was asked with."""

    def __init__(self, tools: list[BaseTool], **options: Any) -> None:
        super().__init__(**options)
        self.tools = tools
        self.contexts: list[ReadonlyContext | None] = []
        self.closed = 0

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        self.contexts.append(readonly_context)
        return [tool for tool in self.tools if self._is_tool_selected(tool, readonly_context)]

    async def close(self) -> None:
        await anyio.lowlevel.checkpoint()
        self.closed += 1


def declared_names(tools: list[BaseTool]) -> list[str | None]:
    return [declaration.name if (declaration := tool.get_declaration()) else None for tool in tools]


def catalog(**options: Any) -> Catalog:
    return Catalog([FunctionTool(search), FunctionTool(fetch)], **options)


# -- BaseTool ---------------------------------------------------------------------------------------------


class Echo(BaseTool):
    """A hand-written tool: a declaration and a run_async."""

    def __init__(self, name: str = "echo") -> None:
        super().__init__(name=name, description="Echo the arguments.")

    def _get_declaration(self) -> FunctionDeclaration:
        return FunctionDeclaration(name="echo", description=self.description)

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        return {"echo": args}


def test_the_reserved_names_are_exactly_adks() -> None:
    assert RESERVED_TOOL_NAMES == ADK_RESERVED


@pytest.mark.parametrize("name", sorted(ADK_RESERVED))
def test_a_tool_with_a_reserved_name_is_refused_with_a_message_naming_it(name: str) -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        Echo(name)

    assert f"The tool name {name!r} is reserved by ADK" in str(raised.value)
    assert "rename" in str(raised.value)
    assert isinstance(raised.value, TypeError)


def test_renaming_a_tool_to_a_reserved_name_is_refused_and_keeps_the_old_name() -> None:
    tool = Echo()

    with pytest.raises(ToolDefinitionError, match="'transfer_to_agent' is reserved"):
        tool.name = "transfer_to_agent"

    assert tool.name == "echo"


def test_a_base_tool_has_adks_defaults() -> None:
    tool = BaseTool(name="plain", description="Does nothing.")

    assert (tool.name, tool.description, tool.is_long_running, tool.custom_metadata) == (
        "plain",
        "Does nothing.",
        False,
        None,
    )
    assert tool.get_declaration() is None
    assert tool.check_require_confirmation({}, ToolContext()) is False
    assert repr(tool) == "BaseTool(name='plain')"


@pytest.mark.anyio
async def test_a_base_tool_without_run_async_says_so() -> None:
    with pytest.raises(NotImplementedError, match=r"BaseTool does not implement run_async\(\)"):
        await BaseTool(name="plain", description="").run_async(args={}, tool_context=ToolContext())


def test_the_declaration_carries_the_tools_current_name() -> None:
    tool = Echo()
    tool.name = "echo_v2"

    declaration = tool.get_declaration()

    assert declaration is not None
    assert declaration.name == "echo_v2"
    assert declaration.description == "Echo the arguments."


# -- filtering --------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_without_a_filter_every_tool_is_offered() -> None:
    assert [tool.name for tool in await catalog().get_tools()] == ["search", "fetch"]


@pytest.mark.anyio
async def test_a_list_filter_offers_only_the_named_tools() -> None:
    toolset = catalog(tool_filter=["fetch", "not_there"])

    assert [tool.name for tool in await toolset.get_tools()] == ["fetch"]


@pytest.mark.anyio
async def test_a_predicate_filter_sees_each_tool_and_the_readonly_context() -> None:
    seen: list[tuple[str, ReadonlyContext | None]] = []

    def only_search_for_admins(tool: BaseTool, readonly_context: ReadonlyContext | None = None) -> bool:
        seen.append((tool.name, readonly_context))
        return tool.name != "search" or (
            readonly_context is not None and readonly_context.state.get("user:admin") is True
        )

    toolset = catalog(tool_filter=only_search_for_admins)
    admin = ReadonlyContext(state={"user:admin": True})
    guest = ReadonlyContext()

    assert [tool.name for tool in await toolset.get_tools(admin)] == ["search", "fetch"]
    assert [tool.name for tool in await toolset.get_tools(guest)] == ["fetch"]
    assert seen == [("search", admin), ("fetch", admin), ("search", guest), ("fetch", guest)]


# -- prefixing --------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_without_a_prefix_get_tools_with_prefix_returns_the_tools_themselves() -> None:
    toolset = catalog()
    context = ReadonlyContext()

    tools = await toolset.get_tools_with_prefix(context)

    assert tools == toolset.tools
    assert toolset.contexts == [context]


@pytest.mark.anyio
async def test_a_prefix_gives_renamed_copies_and_leaves_the_originals_alone() -> None:
    toolset = catalog(tool_name_prefix="web")

    renamed = await toolset.get_tools_with_prefix()

    assert [tool.name for tool in renamed] == ["web_search", "web_fetch"]
    assert declared_names(renamed) == ["web_search", "web_fetch"]
    assert [tool.name for tool in toolset.tools] == ["search", "fetch"]
    assert declared_names(toolset.tools) == ["search", "fetch"]
    assert all(copy is not original for copy, original in zip(renamed, toolset.tools, strict=True))


@pytest.mark.anyio
async def test_the_filter_matches_names_before_the_prefix() -> None:
    toolset = catalog(tool_filter=["search"], tool_name_prefix="web")

    assert [tool.name for tool in await toolset.get_tools_with_prefix()] == ["web_search"]


@pytest.mark.anyio
async def test_a_renamed_copy_still_runs_the_same_function() -> None:
    (renamed, _) = await catalog(tool_name_prefix="web").get_tools_with_prefix()

    assert await renamed.run_async(args={"query": "cats"}, tool_context=ToolContext()) == {"result": "found cats"}


@pytest.mark.anyio
async def test_a_renamed_copy_reports_missing_arguments_under_its_new_name() -> None:
    (renamed, _) = await catalog(tool_name_prefix="web").get_tools_with_prefix()

    result = await renamed.run_async(args={}, tool_context=ToolContext())

    assert result["error"].startswith("Invoking `web_search()` failed as the following mandatory input parameters")


@pytest.mark.anyio
async def test_a_prefix_that_produces_a_reserved_name_is_refused() -> None:
    toolset = Catalog([FunctionTool(agent)], tool_name_prefix="transfer_to")

    with pytest.raises(ToolDefinitionError, match="'transfer_to_agent' is reserved by ADK"):
        await toolset.get_tools_with_prefix()

    assert toolset.tools[0].name == "agent"


# -- lifecycle --------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_toolset_is_an_async_context_manager_that_closes_on_exit() -> None:
    toolset = catalog()

    async with toolset as entered:
        assert entered is toolset
        assert toolset.closed == 0

    assert toolset.closed == 1


@pytest.mark.anyio
async def test_the_toolset_closes_when_the_block_raises_and_the_exception_propagates() -> None:
    toolset = catalog()

    with pytest.raises(LookupError, match="boom"):
        async with toolset:
            raise LookupError("boom")

    assert toolset.closed == 1


@pytest.mark.anyio
async def test_the_toolset_closes_completely_when_the_block_is_cancelled() -> None:
    toolset = catalog()

    with anyio.fail_after(5), anyio.CancelScope() as scope:
        async with toolset:
            scope.cancel()
            await anyio.lowlevel.checkpoint()

    assert scope.cancelled_caught
    assert toolset.closed == 1


@pytest.mark.anyio
async def test_the_default_close_does_nothing_and_can_be_called_twice() -> None:
    class Empty(BaseToolset):
        async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
            return []

    toolset = Empty()
    await toolset.close()
    await toolset.close()

    assert await toolset.get_tools_with_prefix() == []
