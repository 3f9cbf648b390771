"""An upstream that answers calls with tasks (SEP-2663) behind the gateway, for clients that get a plain call.

A handshake-era client cannot hold a task: the gateway polls the upstream's task for it and answers its
`tools/call` with the task's result, each poll's status reaching the client as progress, the task's questions
reaching it as elicitation, its cancellation cancelling the task. A modern client that declared the extension holds
the upstream's task under an id of the gateway's, which no other principal can use; one that did not is not
offered tasks upstream either. The upstream
(`tests/gateway/client/tasks_upstream.py`) speaks only what a 2026-07-28 session asks for, and advances a task
only when it is polled.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import anyio
import httpx2
import pytest
from hub_harness import connect, gateway_http, gateway_server, write_config
from mcp import MCPError, types
from mcp.client.context import ClientRequestContext

from gateway.server.sealing import SEALING_KEY_ENV
from gateway.tasks.wire import TASKS_EXTENSION
from tests.gateway.client.tasks_upstream import TaskLog, http_app
from tests.support.deadlines import DEADLINE
from tests.support.loopback import serving_asgi, serving_tools
from tests.support.modern_wire import ModernWire

pytestmark = pytest.mark.anyio


async def test_a_handshake_era_client_gets_an_upstream_tasks_result_with_progress(tmp_path: Path) -> None:
    log = TaskLog()
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        del total
        progress.append((value, message))

    async with serving_asgi(http_app(log)) as upstream_url:
        config = write_config(tmp_path, {"jobs": {"url": f"{upstream_url}/mcp", "protocolVersion": "2026-07-28"}})
        async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
            assert client.protocol_version == "2025-11-25"
            with anyio.fail_after(DEADLINE):
                result = await client.call_tool("jobs_slow_add", {"a": 2, "b": 3}, progress_callback=on_progress)
    assert not result.is_error
    assert result.structured_content == {"sum": 5}
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "5"
    # The upstream made a task of it (the gateway declared the extension), polled to its end.
    (task_id,) = log.tasks
    assert log.tasks[task_id].status == "completed"
    assert not log.plain_calls
    assert progress == [(1.0, "working"), (2.0, "working")]


async def test_a_modern_client_without_the_extension_gets_a_plain_call(tmp_path: Path) -> None:
    # Its round declares only what it declared: the upstream runs the call as for any client without tasks.
    log = TaskLog()
    async with serving_asgi(http_app(log)) as upstream_url:
        config = write_config(tmp_path, {"jobs": {"url": f"{upstream_url}/mcp", "protocolVersion": "2026-07-28"}})
        async with gateway_http(config) as base_url, connect(base_url, "auto") as client:
            assert client.protocol_version == "2026-07-28"
            with anyio.fail_after(DEADLINE):
                result = await client.call_tool("jobs_slow_add", {"a": 4, "b": 5})
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "9"
    assert log.plain_calls == ["slow_add"]
    assert not log.tasks


async def test_a_modern_client_with_the_extension_holds_the_upstream_task_and_only_it(tmp_path: Path) -> None:
    log = TaskLog()
    tokens = {"alice-token": "alice", "bob-token": "bob"}
    async with serving_asgi(http_app(log)) as upstream_url:
        config = write_config(tmp_path, {"jobs": {"url": f"{upstream_url}/mcp", "protocolVersion": "2026-07-28"}})
        async with (
            serving_tools(gateway_server(config), auth_tokens=tokens) as base_url,
            httpx2.AsyncClient(headers={"Authorization": "Bearer alice-token"}) as alice_http,
            httpx2.AsyncClient(headers={"Authorization": "Bearer bob-token"}) as bob_http,
        ):
            alice = ModernWire(alice_http, f"{base_url}/mcp", extensions={TASKS_EXTENSION: {}})
            bob = ModernWire(bob_http, f"{base_url}/mcp", extensions={TASKS_EXTENSION: {}})
            with anyio.fail_after(DEADLINE):
                created = await alice.request("tools/call", {"name": "jobs_slow_add", "arguments": {"a": 1, "b": 2}})
                task_id = created["taskId"]
                refusals: list[int] = []
                for method, params in (
                    ("tasks/get", {"taskId": task_id}),
                    ("tasks/update", {"taskId": task_id, "inputResponses": {"name-1": {"action": "decline"}}}),
                    ("tasks/cancel", {"taskId": task_id}),
                ):
                    with pytest.raises(MCPError) as refused:
                        await bob.request(method, params)
                    refusals.append(refused.value.error.code)
                polls = [await alice.request("tasks/get", {"taskId": task_id}) for _ in range(3)]
    (upstream_id,) = log.tasks
    # The upstream's CreateTaskResult as it sent it, under an id of the gateway's that names the upstream's.
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert task_id != upstream_id
    assert task_id.endswith(upstream_id)
    assert refusals == [types.INVALID_PARAMS] * 3
    assert not log.updates
    assert not log.cancelled
    # Alice's polls reached the upstream (with its own id in Mcp-Name) and came back under hers.
    assert [poll["status"] for poll in polls] == ["working", "working", "completed"]
    assert {poll["taskId"] for poll in polls} == {task_id}
    assert polls[-1]["result"]["structuredContent"] == {"sum": 3}
    assert log.polls == [(upstream_id, upstream_id)] * 3


async def test_an_upstream_tasks_question_reaches_a_handshake_era_client_as_elicitation(tmp_path: Path) -> None:
    log = TaskLog()
    asked: list[str] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async with serving_asgi(http_app(log)) as upstream_url:
        config = write_config(tmp_path, {"jobs": {"url": f"{upstream_url}/mcp", "protocolVersion": "2026-07-28"}})
        async with gateway_http(config) as base_url, connect(base_url, "legacy", elicitation_callback=elicit) as client:
            with anyio.fail_after(DEADLINE):
                result = await client.call_tool("jobs_ask_name", {})
    assert asked == ["What is your name?"]
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == "Hello, Grace!"
    ((_, answers),) = log.updates
    assert answers == {"name-1": {"action": "accept", "content": {"name": "Grace"}}}


async def test_a_handshake_era_client_that_cancels_its_call_cancels_the_upstream_task(tmp_path: Path) -> None:
    log = TaskLog()
    async with serving_asgi(http_app(log)) as upstream_url:
        config = write_config(tmp_path, {"jobs": {"url": f"{upstream_url}/mcp", "protocolVersion": "2026-07-28"}})
        async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
            with anyio.fail_after(DEADLINE):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(lambda: client.call_tool("jobs_endless", {}))
                    await log.first_poll.wait()
                    tg.cancel_scope.cancel()
                await log.cancel_seen.wait()
    (task_id,) = log.tasks
    assert log.cancelled == [task_id]


async def test_a_modern_client_answers_its_upstream_tasks_question_through_the_gateway(tmp_path: Path) -> None:
    log = TaskLog()
    async with serving_asgi(http_app(log)) as upstream_url:
        config = write_config(tmp_path, {"jobs": {"url": f"{upstream_url}/mcp", "protocolVersion": "2026-07-28"}})
        async with gateway_http(config) as base_url, httpx2.AsyncClient() as http:
            wire = ModernWire(http, f"{base_url}/mcp", extensions={TASKS_EXTENSION: {}})
            with anyio.fail_after(DEADLINE):
                created = await wire.request("tools/call", {"name": "jobs_ask_name", "arguments": {}})
                asking = await wire.request("tasks/get", {"taskId": created["taskId"]})
                answer = {"name-1": {"action": "accept", "content": {"name": "Lin"}}}
                ack = await wire.request("tasks/update", {"taskId": created["taskId"], "inputResponses": answer})
                done = await wire.request("tasks/get", {"taskId": created["taskId"]})
    assert asking["status"] == "input_required"
    assert asking["inputRequests"]["name-1"]["params"]["message"] == "What is your name?"
    assert ack["resultType"] == "complete"
    ((_, answers),) = log.updates
    assert answers == answer
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == "Hello, Lin!"


async def test_replicas_sharing_a_sealing_key_answer_for_each_others_forwarded_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SEALING_KEY_ENV, secrets.token_urlsafe(32))
    log = TaskLog()
    async with serving_asgi(http_app(log)) as upstream_url:
        config = write_config(tmp_path, {"jobs": {"url": f"{upstream_url}/mcp", "protocolVersion": "2026-07-28"}})
        async with gateway_http(config) as first, gateway_http(config) as second, httpx2.AsyncClient() as http:
            on_first = ModernWire(http, f"{first}/mcp", extensions={TASKS_EXTENSION: {}})
            on_second = ModernWire(http, f"{second}/mcp", extensions={TASKS_EXTENSION: {}})
            with anyio.fail_after(DEADLINE):
                created = await on_first.request("tools/call", {"name": "jobs_slow_add", "arguments": {"a": 5, "b": 6}})
                polls = [await on_second.request("tasks/get", {"taskId": created["taskId"]}) for _ in range(3)]
    assert [poll["status"] for poll in polls] == ["working", "working", "completed"]
    assert polls[-1]["result"]["structuredContent"] == {"sum": 11}
