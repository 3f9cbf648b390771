"""The Tasks extension's wire models dump exactly the shapes the SEP-2663 conformance scenarios check."""

from __future__ import annotations

import re

import pytest
from mcp import types

from gateway.tasks.wire import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    TASKS_EXTENSION,
    CreateTaskResult,
    DetailedTask,
    TaskAck,
    UpdateTaskParams,
    declares_tasks,
    iso_timestamp,
    missing_tasks_capability,
    task_support,
)

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")


def _created(**fields: object) -> CreateTaskResult:
    seed: dict[str, object] = {
        "task_id": "t-1",
        "status": "working",
        "created_at": iso_timestamp(1_800_000_000.25),
        "last_updated_at": iso_timestamp(1_800_000_000.25),
        "ttl_ms": 60_000,
        "poll_interval_ms": 500,
    }
    return CreateTaskResult.model_validate({**seed, **fields})


def test_a_create_task_result_is_flat_with_integer_milliseconds_and_no_v1_keys() -> None:
    wire = _created().wire()

    assert wire["resultType"] == "task"
    assert wire["taskId"] == "t-1"
    assert wire["ttlMs"] == 60_000
    assert wire["pollIntervalMs"] == 500
    assert not {"task", "ttl", "pollInterval", "result", "error", "inputRequests", "requestState"} & set(wire)
    assert _ISO.match(wire["createdAt"])
    assert wire["createdAt"].endswith("Z")


def test_an_unlimited_ttl_is_sent_as_null_not_left_out() -> None:
    wire = _created(ttl_ms=None).wire()

    assert "ttlMs" in wire
    assert wire["ttlMs"] is None


def test_a_detailed_task_reads_camel_case_keeps_unknown_fields_and_inlines_its_result() -> None:
    task = DetailedTask.model_validate(
        {
            "taskId": "t-2",
            "status": "completed",
            "createdAt": "2026-07-28T10:30:00Z",
            "lastUpdatedAt": "2026-07-28T10:31:00Z",
            "ttlMs": 1000,
            "resultType": "complete",
            "result": {"content": [{"type": "text", "text": "done"}], "isError": True},
            "vendorField": 1,
        }
    )

    assert task.terminal
    result = task.call_result()
    assert isinstance(result, types.CallToolResult)
    assert result.is_error is True
    assert task.wire()["vendorField"] == 1
    assert task.wire()["resultType"] == "complete"


def test_a_failed_task_carries_its_json_rpc_error() -> None:
    task = DetailedTask(
        task_id="t-3",
        status="failed",
        created_at="a",
        last_updated_at="b",
        ttl_ms=None,
        error={"code": -32603, "message": "boom"},
    )

    error = task.error_data()
    assert error is not None
    assert (error.code, error.message) == (-32603, "boom")
    assert "result" not in task.wire()
    assert not task.model_copy(update={"status": "working"}).terminal


def test_acks_are_empty_complete_results() -> None:
    assert TaskAck().wire() == {"resultType": "complete"}


def test_update_params_take_the_wire_spelling() -> None:
    params = UpdateTaskParams.model_validate(
        {"taskId": "t-4", "inputResponses": {"k": {"action": "accept"}}}, by_name=False
    )

    assert params.task_id == "t-4"
    assert params.input_responses == {"k": {"action": "accept"}}


@pytest.mark.parametrize(
    ("capabilities", "declared"),
    [
        (None, False),
        ({}, False),
        ({"extensions": {}}, False),
        ({"extensions": {TASKS_EXTENSION: {}}}, True),
        (types.ClientCapabilities(extensions={TASKS_EXTENSION: {}}), True),
        (types.ClientCapabilities(), False),
    ],
)
def test_a_client_declares_the_extension_under_capabilities_extensions(capabilities: object, declared: bool) -> None:
    assert declares_tasks(capabilities) is declared  # pyright: ignore[reportArgumentType]


def test_the_missing_capability_error_names_the_extension_in_its_data() -> None:
    error = missing_tasks_capability("tasks/get")

    assert error.code == MISSING_REQUIRED_CLIENT_CAPABILITY == -32021
    assert error.error.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
    assert TASKS_EXTENSION in error.error.message


def test_a_tool_without_execution_is_not_task_supporting() -> None:
    plain = types.Tool(name="a", input_schema={"type": "object"})
    optional = plain.model_copy(update={"execution": types.ToolExecution(task_support="optional")})

    assert task_support(plain) == "forbidden"
    assert task_support(optional) == "optional"
