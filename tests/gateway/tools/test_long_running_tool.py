from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Generator, Iterator
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.tools import FunctionTool, LongRunningFunctionTool, ProgressLog, ToolContext


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


NOTE = (
    "NOTE: This is a long-running operation. Do not call this tool again if it has already returned some "
    "intermediate or pending status."
)


def progress_of(context: ToolContext) -> list[Any]:
    assert isinstance(context.progress_sink, ProgressLog)
    return context.progress_sink.updates


# -- declaration ------------------------------------------------------------------------------------------


def start_job(name: str) -> dict[str, str]:
    """Start a batch job.

    Args:
        name: The job's name.
    """
    return {"status": "pending", "job": name}


def test_a_long_running_tool_is_marked_so_and_a_function_tool_is_not() -> None:
    assert LongRunningFunctionTool(start_job).is_long_running is True
    assert FunctionTool(start_job).is_long_running is False


def test_adks_note_is_appended_to_the_declarations_description() -> None:
    tool = LongRunningFunctionTool(start_job)

    assert tool.get_declaration().description == f"Start a batch job.\n\n{NOTE}"
    assert tool.description == "Start a batch job."


def test_without_a_docstring_the_description_is_the_note_alone() -> None:
    def undocumented() -> None:
        return None

    assert LongRunningFunctionTool(undocumented).get_declaration().description == NOTE


def test_the_declaration_otherwise_matches_the_function_tools() -> None:
    long_running = LongRunningFunctionTool(start_job).get_declaration()
    plain = FunctionTool(start_job).get_declaration()

    assert long_running.name == plain.name == "start_job"
    assert long_running.parameters_json_schema == plain.parameters_json_schema
    assert long_running.parameters_json_schema is not None
    assert long_running.parameters_json_schema["properties"]["name"]["description"] == "The job's name."


def test_a_generators_response_schema_is_that_of_its_return_value() -> None:
    def steps() -> Generator[int, None, str]:
        yield 1
        return "done"

    def updates() -> AsyncIterator[float]:
        raise NotImplementedError

    assert LongRunningFunctionTool(steps).get_declaration().response_json_schema == {"type": "string"}
    assert LongRunningFunctionTool(updates).get_declaration().response_json_schema == {"type": "number"}


# -- plain functions --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_plain_function_returns_its_pending_status_and_reports_no_progress() -> None:
    context = ToolContext()

    result = await LongRunningFunctionTool(start_job).run_async(args={"name": "nightly"}, tool_context=context)

    assert result == {"status": "pending", "job": "nightly"}
    assert progress_of(context) == []


@pytest.mark.anyio
async def test_a_plain_async_function_has_its_value_wrapped() -> None:
    async def ticket() -> str:
        return "T-1"

    assert await LongRunningFunctionTool(ticket).run_async(args={}, tool_context=ToolContext()) == {"result": "T-1"}


# -- generators -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_each_value_a_generator_yields_goes_to_the_progress_sink_and_its_return_value_is_the_result() -> None:
    def build(steps: int) -> Generator[dict[str, int], None, str]:
        for step in range(steps):
            yield {"done": step + 1, "of": steps}
        return "built"

    context = ToolContext()
    result = await LongRunningFunctionTool(build).run_async(args={"steps": 3}, tool_context=context)

    assert result == {"result": "built"}
    assert progress_of(context) == [{"done": 1, "of": 3}, {"done": 2, "of": 3}, {"done": 3, "of": 3}]


@pytest.mark.anyio
async def test_a_generator_that_returns_nothing_has_its_last_yield_as_result_and_not_as_progress() -> None:
    def count(to: int) -> Iterator[int]:
        yield from range(1, to + 1)

    context = ToolContext()
    result = await LongRunningFunctionTool(count).run_async(args={"to": 3}, tool_context=context)

    assert result == {"result": 3}
    assert progress_of(context) == [1, 2]


@pytest.mark.anyio
async def test_an_async_generators_yields_are_progress_but_its_last_yield_is_the_result_alone() -> None:
    async def stages(tool_context: ToolContext) -> AsyncIterator[Any]:
        yield "queued"
        yield "running"
        yield {"status": "finished", "call": tool_context.function_call_id}

    context = ToolContext(function_call_id="fc-1")
    result = await LongRunningFunctionTool(stages).run_async(args={}, tool_context=context)

    assert result == {"status": "finished", "call": "fc-1"}
    assert progress_of(context) == ["queued", "running"]


@pytest.mark.anyio
async def test_a_progress_report_reaches_the_sink_before_the_generator_goes_on() -> None:
    delivered: list[list[Any]] = []

    async def stages(tool_context: ToolContext) -> AsyncIterator[Any]:
        yield {"progress": 1, "total": 2}
        delivered.append(list(progress_of(tool_context)))
        yield {"progress": 2, "total": 2}
        yield {"status": "finished"}

    context = ToolContext()
    result = await LongRunningFunctionTool(stages).run_async(args={}, tool_context=context)

    assert result == {"status": "finished"}
    assert delivered == [[{"progress": 1, "total": 2}]]
    assert progress_of(context) == [{"progress": 1, "total": 2}, {"progress": 2, "total": 2}]


@pytest.mark.anyio
@given(updates=st.lists(st.integers(), min_size=1))
async def test_any_sequence_of_yields_reaches_the_sink_in_order_but_the_last_is_the_result(updates: list[int]) -> None:
    def replay() -> Iterator[int]:
        yield from updates

    context = ToolContext()
    result = await LongRunningFunctionTool(replay).run_async(args={}, tool_context=context)

    assert progress_of(context) == updates[:-1]
    assert result == {"result": updates[-1]}


@pytest.mark.anyio
async def test_a_custom_progress_sink_is_awaited_with_each_update_before_the_generator_goes_past_the_next() -> None:
    log: list[str] = []

    async def sink(update: Any) -> None:
        await anyio.lowlevel.checkpoint()
        log.append(f"sink {update}")

    def steps() -> Iterator[int]:
        for step in (1, 2, 3):
            log.append(f"yield {step}")
            yield step

    await LongRunningFunctionTool(steps).run_async(args={}, tool_context=ToolContext(progress_sink=sink))

    # A value is an update once the generator yields the next one (the last one is the result).
    assert log == ["yield 1", "yield 2", "sink 1", "yield 3", "sink 2"]


@pytest.mark.anyio
async def test_a_sync_generator_runs_its_steps_in_a_worker_thread() -> None:
    threads: list[int] = []

    def steps() -> Iterator[int]:
        threads.append(threading.get_ident())
        yield 1
        threads.append(threading.get_ident())

    await LongRunningFunctionTool(steps).run_async(args={}, tool_context=ToolContext())

    assert len(threads) == 2
    assert threading.get_ident() not in threads


@pytest.mark.anyio
async def test_an_exception_in_a_generator_propagates_after_the_updates_before_it() -> None:
    def failing() -> Iterator[str]:
        yield "started"
        raise RuntimeError("disk full")

    context = ToolContext()
    with pytest.raises(RuntimeError, match="disk full"):
        await LongRunningFunctionTool(failing).run_async(args={}, tool_context=context)

    assert progress_of(context) == ["started"]


# -- cancellation -----------------------------------------------------------------------------------------


class Blocking:
    """A progress sink that blocks on the first update, so the call can be cancelled mid-way."""

    def __init__(self) -> None:
        self.first = anyio.Event()
        self.updates: list[Any] = []

    async def __call__(self, update: Any) -> None:
        self.updates.append(update)
        self.first.set()
        await anyio.sleep_forever()


async def _cancel_at_first_update(tool: LongRunningFunctionTool, sink: Blocking, events: list[str]) -> None:
    """Call `tool` and cancel the call once its first update reached `sink`; "returned" joins `events` if it ends."""
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await tool.run_async(args={}, tool_context=ToolContext(progress_sink=sink))
                events.append("returned")

            tg.start_soon(call)
            await sink.first.wait()
            tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_cancelling_the_call_closes_a_sync_generator_and_runs_its_finally() -> None:
    events: list[str] = []

    def steps() -> Iterator[int]:
        try:
            for step in range(10):
                events.append(f"step {step}")
                yield step
        finally:
            events.append("finally")

    sink = Blocking()
    tool = LongRunningFunctionTool(steps)
    await _cancel_at_first_update(tool, sink, events)

    # Step 0 is an update once the generator yields step 1.
    assert events == ["step 0", "step 1", "finally"]
    assert sink.updates == [0]


@pytest.mark.anyio
async def test_cancelling_the_call_closes_an_async_generator_whose_finally_can_still_await() -> None:
    events: list[str] = []

    async def stages() -> AsyncIterator[int]:
        try:
            for stage in range(10):
                events.append(f"stage {stage}")
                yield stage
        finally:
            await anyio.lowlevel.checkpoint()  # cleanup that awaits, such as closing a connection
            events.append("finally")

    sink = Blocking()
    tool = LongRunningFunctionTool(stages)
    await _cancel_at_first_update(tool, sink, events)

    assert events == ["stage 0", "stage 1", "finally"]


@pytest.mark.anyio
async def test_cancelling_while_an_async_generator_awaits_runs_its_finally() -> None:
    events: list[str] = []
    started = anyio.Event()

    async def waits() -> AsyncIterator[Any]:
        try:
            yield {"progress": 0, "message": "waiting"}
            started.set()
            await anyio.sleep_forever()
            yield "never"
        finally:
            events.append("finally")

    tool = LongRunningFunctionTool(waits)
    context = ToolContext()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: tool.run_async(args={}, tool_context=context))
            await started.wait()
            tg.cancel_scope.cancel()

    assert events == ["finally"]
    assert progress_of(context) == [{"progress": 0, "message": "waiting"}]


@pytest.mark.anyio
async def test_a_cancel_scope_around_the_call_stops_a_generator_between_steps() -> None:
    events: list[str] = []

    def steps() -> Iterator[dict[str, int]]:
        try:
            yield {"progress": 1}
            events.append("resumed")
            yield {"progress": 2}
        finally:
            events.append("finally")

    async def cancel_on_first(update: Any) -> None:
        scope.cancel()
        await anyio.lowlevel.checkpoint()

    with anyio.fail_after(5), anyio.CancelScope() as scope:
        await LongRunningFunctionTool(steps).run_async(args={}, tool_context=ToolContext(progress_sink=cancel_on_first))

    assert scope.cancelled_caught
    assert events == ["finally"]


@pytest.mark.anyio
async def test_a_generator_called_without_a_tool_context_ignores_its_progress_quietly() -> None:
    async def build(steps: int) -> AsyncIterator[str]:
        for step in range(steps):
            yield f"step {step + 1}"

    # ADK's documented MCP-server recipe calls tools with `tool_context=None`.
    result = await LongRunningFunctionTool(build).run_async(args={"steps": 2}, tool_context=None)
    assert result == {"result": "step 2"}
