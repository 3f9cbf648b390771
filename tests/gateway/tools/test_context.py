from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import types

from gateway.errors import GatewayError, ServiceNotConfiguredError
from gateway.tools import (
    ClientFeatures,
    EventActions,
    FunctionTool,
    InMemoryArtifactService,
    ProgressLog,
    ReadonlyContext,
    State,
    ToolConfirmation,
    ToolContext,
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class FakeClient:
    """Stands in for the MCP client on the other end of a call: records every request, answers canned results."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        self.calls.append(("progress", (progress, total, message)))

    async def log(self, level: types.LoggingLevel, data: Any, logger: str | None = None) -> None:
        self.calls.append(("log", (level, data, logger)))

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> types.ElicitResult:
        self.calls.append(("elicit", (message, requested_schema)))
        return types.ElicitResult(action="accept", content={"approved": True})

    async def sample(
        self,
        messages: list[types.SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
    ) -> types.CreateMessageResult:
        self.calls.append(("sample", (messages, max_tokens, system_prompt, temperature)))
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="a haiku"), model="fake")


# -- state ------------------------------------------------------------------------------------------------


def test_writes_to_every_scope_are_recorded_in_the_state_delta() -> None:
    context = ToolContext(state={"counter": 1})

    context.state["counter"] += 1
    context.state["app:flag"] = True
    context.state["user:name"] = "ada"
    context.state["temp:scratch"] = "x"

    assert context.actions.state_delta == {
        "counter": 2,
        "app:flag": True,
        "user:name": "ada",
        "temp:scratch": "x",
    }
    assert context.state.to_dict() == {
        "counter": 2,
        "app:flag": True,
        "user:name": "ada",
        "temp:scratch": "x",
    }


def test_reading_state_records_nothing() -> None:
    context = ToolContext(state={"counter": 1, "user:prefs": {"theme": "dark"}})

    assert context.state["counter"] == 1
    assert context.state["user:prefs"] == {"theme": "dark"}
    assert context.actions.state_delta == {}


def test_nested_mutation_of_a_value_read_from_state_is_in_the_state_delta() -> None:
    context = ToolContext(state={"user:prefs": {"theme": "dark"}, "cart": ["pen"], "other": [1]})

    context.state["user:prefs"]["theme"] = "light"
    context.state["cart"].append("ink")
    assert context.state["other"] == [1]

    assert context.actions.state_delta == {"user:prefs": {"theme": "light"}, "cart": ["pen", "ink"]}


def test_a_mutation_after_actions_were_read_is_picked_up_on_the_next_read() -> None:
    context = ToolContext(state={"cart": ["pen"]})
    cart = context.state["cart"]
    assert context.actions.state_delta == {}

    cart.append("ink")

    assert context.actions.state_delta == {"cart": ["pen", "ink"]}


def test_state_writes_go_through_to_a_dict_given_as_state() -> None:
    session_state: dict[str, Any] = {}
    context = ToolContext(state=session_state)

    context.state["user:name"] = "ada"

    assert session_state == {"user:name": "ada"}


def test_a_state_object_given_as_state_is_used_as_is() -> None:
    state = State({"a": 1})
    context = ToolContext(state=state)

    context.state["a"] = 2

    assert context.state is state
    assert state.delta == {"a": 2}


def test_entries_put_in_the_state_delta_directly_survive_later_state_writes() -> None:
    context = ToolContext()
    context.actions.state_delta["set_by_hand"] = 1

    context.state["written"] = 2

    assert context.actions.state_delta == {"set_by_hand": 1, "written": 2}


def test_actions_given_to_the_context_are_the_ones_it_fills() -> None:
    actions = EventActions(state_delta={"earlier": 0})
    context = ToolContext(actions=actions, function_call_id="fc")

    context.state["later"] = 1
    context.request_confirmation(hint="ok?")

    assert context.actions is actions
    assert actions.state_delta == {"earlier": 0, "later": 1}
    assert list(actions.requested_tool_confirmations) == ["fc"]


def test_a_readonly_contexts_state_cannot_be_written() -> None:
    context = ReadonlyContext(state={"user:name": "ada"})

    with pytest.raises(TypeError):
        context.state["user:name"] = "bob"  # type: ignore[index]

    assert dict(context.state) == {"user:name": "ada"}


def test_a_readonly_context_has_the_session_coordinates() -> None:
    context = ReadonlyContext(app_name="shop", user_id="u1", session_id="s1", invocation_id="e-1", agent_name="clerk")

    assert (context.app_name, context.user_id, context.session_id, context.invocation_id, context.agent_name) == (
        "shop",
        "u1",
        "s1",
        "e-1",
        "clerk",
    )
    assert ReadonlyContext().invocation_id.startswith("e-")


# -- function call id and confirmation --------------------------------------------------------------------


def test_the_function_call_id_is_the_given_one_or_an_adk_style_one() -> None:
    assert ToolContext(function_call_id="call-9").function_call_id == "call-9"
    generated = ToolContext().function_call_id
    assert generated is not None
    assert generated.startswith("adk-")
    assert generated != ToolContext().function_call_id


def test_request_confirmation_records_a_tool_confirmation_under_the_call_id() -> None:
    context = ToolContext(function_call_id="call-1")

    context.request_confirmation(hint="Delete it?", payload={"path": "notes/x.txt"})

    assert context.actions.requested_tool_confirmations == {
        "call-1": ToolConfirmation(hint="Delete it?", confirmed=False, payload={"path": "notes/x.txt"})
    }


def test_request_confirmation_without_a_hint_records_an_empty_hint() -> None:
    context = ToolContext(function_call_id="call-1")

    context.request_confirmation()

    assert context.actions.requested_tool_confirmations["call-1"] == ToolConfirmation(hint="", payload=None)


def test_request_confirmation_without_a_function_call_id_raises_value_error() -> None:
    context = ToolContext()
    context.function_call_id = None

    with pytest.raises(ValueError, match="function_call_id is not set"):
        context.request_confirmation(hint="?")

    assert context.actions.requested_tool_confirmations == {}


def test_the_tool_confirmation_given_is_readable() -> None:
    confirmation = ToolConfirmation(confirmed=True, payload={"limit": 3})

    assert ToolContext(tool_confirmation=confirmation).tool_confirmation is confirmation
    assert ToolContext().tool_confirmation is None


def test_a_confirmation_is_read_from_a_plain_function_response() -> None:
    confirmation = ToolConfirmation.from_response_dict({"confirmed": True, "payload": {"a": 1}})

    assert confirmation == ToolConfirmation(hint="", confirmed=True, payload={"a": 1})


def test_a_confirmation_is_read_from_adk_webs_json_string_wrapper() -> None:
    confirmation = ToolConfirmation.from_response_dict({"response": '{"confirmed": false, "hint": "no"}'})

    assert confirmation == ToolConfirmation(hint="no", confirmed=False)


def test_a_confirmation_is_read_from_a_wrapper_holding_the_dict_itself() -> None:
    assert ToolConfirmation.from_response_dict({"response": {"confirmed": True}}) == ToolConfirmation(confirmed=True)


@given(
    hint=st.text(),
    confirmed=st.booleans(),
    payload=st.none() | st.integers() | st.dictionaries(st.text(), st.text()),
)
def test_any_confirmation_survives_the_adk_web_round_trip(hint: str, confirmed: bool, payload: object) -> None:
    original = ToolConfirmation(hint=hint, confirmed=confirmed, payload=payload)

    wrapped = {"response": json.dumps(original.model_dump(by_alias=True))}

    assert ToolConfirmation.from_response_dict(wrapped) == original
    assert ToolConfirmation.from_response_dict(original.model_dump()) == original


def test_a_response_that_is_not_a_confirmation_is_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match="unexpected"):
        ToolConfirmation.from_response_dict({"confirmed": True, "unexpected": 1})
    with pytest.raises(ValueError, match="Expecting value"):
        ToolConfirmation.from_response_dict({"response": "not json"})


def test_event_actions_use_adks_camel_case_aliases_and_forbid_unknown_fields() -> None:
    actions = EventActions.model_validate({"skipSummarization": True, "stateDelta": {"a": 1}})

    assert actions.skip_summarization is True
    assert actions.model_dump(by_alias=True, exclude_defaults=True) == {
        "skipSummarization": True,
        "stateDelta": {"a": 1},
    }
    with pytest.raises(pydantic.ValidationError):
        EventActions.model_validate({"notAField": 1})


# -- artifacts --------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_saving_artifacts_versions_them_and_records_the_latest_version_in_the_artifact_delta() -> None:
    context = ToolContext(artifact_service=InMemoryArtifactService(), session_id="s1")

    first = await context.save_artifact("report.txt", b"draft")
    second = await context.save_artifact("report.txt", b"final")
    other = await context.save_artifact("user:avatar.png", b"\x89PNG")

    assert (first, second, other) == (0, 1, 0)
    assert context.actions.artifact_delta == {"report.txt": 1, "user:avatar.png": 0}
    assert await context.load_artifact("report.txt") == b"final"
    assert await context.load_artifact("report.txt", version=0) == b"draft"
    assert await context.load_artifact("missing.txt") is None
    assert await context.list_artifacts() == ["report.txt", "user:avatar.png"]


@pytest.mark.anyio
async def test_artifacts_are_scoped_to_the_session_except_user_files() -> None:
    service = InMemoryArtifactService()
    first = ToolContext(artifact_service=service, user_id="u", session_id="s1")
    second = ToolContext(artifact_service=service, user_id="u", session_id="s2")

    await first.save_artifact("notes.txt", "mine")
    await first.save_artifact("user:profile.json", "{}")

    assert await second.list_artifacts() == ["user:profile.json"]
    assert await second.load_artifact("notes.txt") is None
    assert second.actions.artifact_delta == {}


@pytest.mark.anyio
async def test_a_tool_saves_artifacts_through_its_context() -> None:
    async def write_report(text: str, tool_context: ToolContext) -> dict[str, Any]:
        version = await tool_context.save_artifact("report.md", text)
        return {"version": version}

    context = ToolContext(artifact_service=InMemoryArtifactService())
    result = await FunctionTool(write_report).run_async(args={"text": "# Q3"}, tool_context=context)

    assert result == {"version": 0}
    assert context.actions.artifact_delta == {"report.md": 0}
    assert await context.load_artifact("report.md") == "# Q3"


@pytest.mark.anyio
@pytest.mark.parametrize("use", ["save", "load", "list"])
async def test_artifacts_without_a_service_raise_a_clear_service_not_configured_error(use: str) -> None:
    context = ToolContext()
    uses = {
        "save": lambda: context.save_artifact("a.txt", b"x"),
        "load": lambda: context.load_artifact("a.txt"),
        "list": context.list_artifacts,
    }

    with pytest.raises(ServiceNotConfiguredError) as raised:
        await uses[use]()

    message = str(raised.value)
    assert message.startswith("Artifact service is not initialized")
    assert "artifact_service=" in message
    assert "InMemoryArtifactService" in message
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, GatewayError)
    assert context.actions.artifact_delta == {}


# -- MCP client features ----------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("feature", "named"),
    [
        ("report_progress", "Reporting progress"),
        ("log", "Logging to the client"),
        ("elicit", "Elicitation"),
        ("sample", "Sampling"),
    ],
)
async def test_client_features_without_a_client_raise_a_clear_service_not_configured_error(
    feature: str, named: str
) -> None:
    context = ToolContext()
    calls = {
        "report_progress": lambda: context.report_progress(0.5),
        "log": lambda: context.log("info", "hello"),
        "elicit": lambda: context.elicit("Name?", {"type": "object", "properties": {}}),
        "sample": lambda: context.sample("Write a haiku"),
    }

    with pytest.raises(ServiceNotConfiguredError) as raised:
        await calls[feature]()

    message = str(raised.value)
    assert message.startswith(f"{named} is not available: this ToolContext has no MCP client")
    assert "client=" in message
    assert isinstance(raised.value, ValueError)


@pytest.mark.anyio
async def test_client_features_are_delegated_to_the_client() -> None:
    client = FakeClient()
    features: ClientFeatures = client  # the fake must satisfy the protocol (checked by pyright)
    context = ToolContext(client=features)

    await context.report_progress(1, total=4, message="one of four")
    await context.log("warning", {"disk": "low"}, logger="tools")
    answer = await context.elicit("Proceed?", {"type": "object", "properties": {"approved": {"type": "boolean"}}})
    completion = await context.sample(
        [types.SamplingMessage(role="user", content=types.TextContent(text="hi"))],
        max_tokens=50,
        system_prompt="be brief",
        temperature=0.2,
    )

    assert answer == types.ElicitResult(action="accept", content={"approved": True})
    assert completion.content == types.TextContent(text="a haiku")
    assert client.calls == [
        ("progress", (1, 4, "one of four")),
        ("log", ("warning", {"disk": "low"}, "tools")),
        ("elicit", ("Proceed?", {"type": "object", "properties": {"approved": {"type": "boolean"}}})),
        (
            "sample",
            ([types.SamplingMessage(role="user", content=types.TextContent(text="hi"))], 50, "be brief", 0.2),
        ),
    ]


@pytest.mark.anyio
async def test_sampling_with_a_string_sends_one_user_message_with_default_limits() -> None:
    client = FakeClient()

    await ToolContext(client=client).sample("Write a haiku")

    assert client.calls == [
        (
            "sample",
            ([types.SamplingMessage(role="user", content=types.TextContent(text="Write a haiku"))], 1000, None, None),
        )
    ]


@pytest.mark.anyio
async def test_a_tool_reaches_the_client_through_its_context() -> None:
    async def ask(question: str, tool_context: ToolContext) -> str:
        await tool_context.report_progress(0, message="asking")
        result = await tool_context.elicit(question, {"type": "object", "properties": {}})
        return result.action

    client = FakeClient()
    result = await FunctionTool(ask).run_async(args={"question": "Sure?"}, tool_context=ToolContext(client=client))

    assert result == {"result": "accept"}
    assert [name for name, _ in client.calls] == ["progress", "elicit"]


# -- progress sink ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_default_progress_sink_is_a_log_of_the_updates_in_order() -> None:
    context = ToolContext()

    await context.send_progress({"step": 1})
    await context.send_progress("two")

    assert isinstance(context.progress_sink, ProgressLog)
    assert context.progress_sink.updates == [{"step": 1}, "two"]


@pytest.mark.anyio
async def test_send_progress_delivers_to_a_given_sink() -> None:
    received: list[Any] = []

    async def sink(update: Any) -> None:
        received.append(update)

    context = ToolContext(progress_sink=sink)
    await context.send_progress(3)

    assert received == [3]
