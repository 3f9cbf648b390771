"""The tools and prompt the 0.2.0-alpha conformance suite's 2026-07-28 scenarios call, for `fixture_upstream.py`.

Each name, key and behaviour is fixed by the scenario that calls it (`@modelcontextprotocol/conformance`
0.2.0-alpha.12, `conformance list --server --spec-version 2026-07-28`): the `input-required-result-*` scenarios
(SEP-2322: a tool or prompt ends a round with an `InputRequiredResult` under fixed keys and reads the client's
answers and its own `requestState` on the next round), `server-stateless` (SEP-2575 diagnostics: a tool needing a
capability the client did not declare, one that asks mid-call, one that logs, two that change the tool and prompt
lists) and `http-custom-header-server-validation` (SEP-2243: a tool with an `x-mcp-header` parameter).

The rounds are written by hand against `Context.input_responses` / `Context.request_state` (not `Resolve`),
because the scenarios fix the keys. They answer 2026-07-28 requests only: a handshake-era client has no rounds.
Only the `mcp` package is used: like `fixture_upstream.py`, this stands for a third-party server.
"""

from __future__ import annotations

from typing import Any, Final

from mcp import MCPError, types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.tools import Tool

__all__ = ["add_modern_features", "modern_tools"]

NAME_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
CUSTOM_HEADER_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "description": "mirrored into Mcp-Param-Region", "x-mcp-header": "Region"},
        "query": {"type": "string", "description": "not mirrored"},
    },
    "required": ["region"],
}
LOG_MESSAGES: Final = ("Logging tool started", "Logging tool working", "Logging tool done")
TOGGLED_TOOL: Final = "test_toggled_tool"
TOGGLED_PROMPT: Final = "test_toggled_prompt"


def _elicit(message: str, schema: dict[str, Any]) -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))  # pyright: ignore[reportArgumentType]


def _sample(text: str, max_tokens: int) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(text=text))
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    )


def _roots() -> types.ListRootsRequest:
    return types.ListRootsRequest()


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)])


def _accepted(ctx: Context, key: str) -> dict[str, Any] | None:
    """The content of an accepted elicitation answered under `key`, if the client sent one."""
    answer = (ctx.input_responses or {}).get(key)
    if isinstance(answer, types.ElicitResult) and answer.action == "accept":
        return dict(answer.content or {})
    return None


def _sampled(ctx: Context, key: str) -> str | None:
    """The text of a sampling answer under `key`, if the client sent one."""
    answer = (ctx.input_responses or {}).get(key)
    if isinstance(answer, types.CreateMessageResult) and isinstance(answer.content, types.TextContent):
        return answer.content.text
    return None


def _listed_roots(ctx: Context, key: str) -> list[str] | None:
    answer = (ctx.input_responses or {}).get(key)
    if isinstance(answer, types.ListRootsResult):
        return [str(root.uri) for root in answer.roots]
    return None


def _ask(requests: dict[str, Any], state: str | None = None) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests=requests, request_state=state)


# --- input-required-result-* ----------------------------------------------------------------------------------


async def test_input_required_result_elicitation(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Ask the user's name (key `user_name`), then greet them."""
    answer = _accepted(ctx, "user_name")
    if answer is None:
        return _ask({"user_name": _elicit("What is your name?", NAME_SCHEMA)})
    return _text(f"Hello, {answer.get('name')}!")


async def test_input_required_result_sampling(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Ask the client's model for the capital of France (key `capital_question`)."""
    answer = _sampled(ctx, "capital_question")
    if answer is None:
        return _ask({"capital_question": _sample("What is the capital of France?", 100)})
    return _text(f"The model said: {answer}")


async def test_input_required_result_list_roots(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Ask for the client's roots (key `client_roots`), then name them."""
    roots = _listed_roots(ctx, "client_roots")
    if roots is None:
        return _ask({"client_roots": _roots()})
    return _text(f"Roots: {', '.join(roots)}")


CONFIRM_STATE: Final = "awaiting-confirmation"


async def test_input_required_result_request_state(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Ask for a confirmation with a `requestState`; complete only when the state comes back with the answer."""
    answer = _accepted(ctx, "confirm")
    if answer is None or ctx.request_state != CONFIRM_STATE:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        return _ask({"confirm": _elicit("Please confirm", schema)}, CONFIRM_STATE)
    return _text(f"state-ok: confirmed={answer.get('ok')}")


async def test_input_required_result_multiple_inputs(
    ctx: Context,
) -> types.CallToolResult | types.InputRequiredResult:
    """Ask for a name, a model's greeting and the roots in one round; complete when all three are answered."""
    name, greeting, roots = _accepted(ctx, "user_name"), _sampled(ctx, "greeting"), _listed_roots(ctx, "client_roots")
    if name is None or greeting is None or roots is None or ctx.request_state != "asked-three":
        requests = {
            "user_name": _elicit("What is your name?", NAME_SCHEMA),
            "greeting": _sample("Generate a greeting", 50),
            "client_roots": _roots(),
        }
        return _ask(requests, "asked-three")
    return _text(f"{greeting} {name.get('name')} ({len(roots)} roots)")


async def test_input_required_result_multi_round(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Ask two questions in two rounds, the state changing between them; complete after the second."""
    color_schema = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
    state = ctx.request_state or ""
    color = _accepted(ctx, "step2")
    if state.startswith("round-2:") and color is not None:
        return _text(f"{state.removeprefix('round-2:')} likes {color.get('color')}")
    name = _accepted(ctx, "step1")
    if state == "round-1" and name is not None:
        return _ask({"step2": _elicit("Step 2: What is your favorite color?", color_schema)}, f"round-2:{name['name']}")
    return _ask({"step1": _elicit("Step 1: What is your name?", NAME_SCHEMA)}, "round-1")


async def test_input_required_result_tampered_state(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Ask with a `requestState` (sealed by the server, so a tampered one never reaches this function)."""
    answer = _accepted(ctx, "confirm")
    if answer is None or ctx.request_state != CONFIRM_STATE:
        schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
        return _ask({"confirm": _elicit("Please confirm", schema)}, CONFIRM_STATE)
    return _text("state-ok")


async def test_input_required_result_capabilities(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Ask only what the client declared it can answer: elicitation and sampling, each if declared."""
    declared = ctx.client_capabilities or types.ClientCapabilities()
    requests: dict[str, Any] = {}
    if declared.elicitation is not None and _accepted(ctx, "user_name") is None:
        requests["user_name"] = _elicit("What is your name?", NAME_SCHEMA)
    if declared.sampling is not None and _sampled(ctx, "greeting") is None:
        requests["greeting"] = _sample("Generate a greeting", 50)
    if requests:
        return _ask(requests)
    return _text("Nothing (more) to ask.")


async def test_input_required_result_prompt(ctx: Context) -> str | types.InputRequiredResult:
    """A prompt that asks for its context first (key `user_context`)."""
    answer = _accepted(ctx, "user_context")
    if answer is None:
        schema = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
        return _ask({"user_context": _elicit("What context should the prompt use?", schema)})
    return f"Use this context: {answer.get('context')}"


# --- server-stateless diagnostics -------------------------------------------------------------------------------


async def test_missing_capability(ctx: Context) -> str:
    """Needs sampling: a client that did not declare it gets -32021 naming the capability."""
    declared = ctx.client_capabilities or types.ClientCapabilities()
    if declared.sampling is None:
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="This tool needs the client's sampling capability.",
            data={"requiredCapabilities": {"sampling": {}}},
        )
    return "The client can sample."


async def test_streaming_elicitation(ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
    """Ask mid-call: the question ends the round (never a request of its own on the response stream)."""
    answer = _accepted(ctx, "stream_question")
    if answer is None:
        return _ask({"stream_question": _elicit("What is your name?", NAME_SCHEMA)})
    return _text(f"Thanks, {answer.get('name')}.")


async def test_logging_tool(ctx: Context) -> str:
    """Log three messages (delivered only to a client that asked for logs in this request's `_meta`)."""
    for message in LOG_MESSAGES:
        await ctx.log("info", message)  # pyright: ignore[reportDeprecated] - the scenario's subject
    return f"Logged {len(LOG_MESSAGES)} messages."


def _toggled() -> str:
    """A tool that comes and goes with `test_trigger_tool_change`."""
    return "toggled"


def _toggled_prompt() -> str:
    """A prompt that comes and goes with `test_trigger_prompt_change`."""
    return "toggled"


def add_modern_features(server: MCPServer) -> None:
    """Register the 2026-07-28 scenarios' tools and prompt on `server`."""
    for tool in (
        test_input_required_result_elicitation,
        test_input_required_result_sampling,
        test_input_required_result_list_roots,
        test_input_required_result_request_state,
        test_input_required_result_multiple_inputs,
        test_input_required_result_multi_round,
        test_input_required_result_tampered_state,
        test_input_required_result_capabilities,
        test_missing_capability,
        test_streaming_elicitation,
        test_logging_tool,
    ):
        server.add_tool(tool, name=tool.__name__, structured_output=False)
    server.prompt(name="test_input_required_result_prompt")(test_input_required_result_prompt)

    async def test_trigger_tool_change(ctx: Context) -> str:
        """Add or remove a tool, and announce the change."""
        if any(tool.name == TOGGLED_TOOL for tool in await server.list_tools()):
            server.remove_tool(TOGGLED_TOOL)
        else:
            server.add_tool(_toggled, name=TOGGLED_TOOL, structured_output=False)
        await ctx.notify_tools_changed()
        return "The tool list changed."

    async def test_trigger_prompt_change(ctx: Context) -> str:
        """Add or remove a prompt, and announce the change."""
        if any(prompt.name == TOGGLED_PROMPT for prompt in await server.list_prompts()):
            server.remove_prompt(TOGGLED_PROMPT)
        else:
            server.add_prompt(Prompt.from_function(_toggled_prompt, name=TOGGLED_PROMPT))
        await ctx.notify_prompts_changed()
        return "The prompt list changed."

    server.add_tool(test_trigger_tool_change, structured_output=False)
    server.add_tool(test_trigger_prompt_change, structured_output=False)


async def custom_header_tool(region: str, query: str | None = None) -> str:
    """Echo `region`, which a client also sends as the `Mcp-Param-Region` header (SEP-2243)."""
    return f"region={region} query={query}"


def modern_tools() -> list[Tool]:
    """The tools whose input schema a signature cannot express (for `MCPServer(tools=...)`)."""
    header_tool = Tool.from_function(custom_header_tool, name="test_custom_header", structured_output=False)
    return [header_tool.model_copy(update={"parameters": CUSTOM_HEADER_SCHEMA})]
