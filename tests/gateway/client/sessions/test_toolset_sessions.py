"""Upstream sessions: shared by every task, one per identity, replaced when they die, and never a retried call."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from client_harness import (
    DEADLINE,
    http_params,
    our_http_server,
    our_stdio,
    sdk_stdio,
    tiny_stdio,
    wait_for_file,
)
from starlette.types import Receive, Scope, Send

from gateway.client import McpTool, McpToolset
from gateway.server import SESSION_META_KEY
from gateway.tools import ReadonlyContext, ToolContext
from tests.support.client_callbacks import ClientCallbacks
from tests.support.loopback import bound_socket, serving_asgi
from tests.support.processes import child_pids

TOKENS = {"alice-token-0123456789": "alice", "bob-token-0123456789ab": "bob"}


async def tool_named(toolset: McpToolset, name: str, context: ReadonlyContext | None = None) -> McpTool:
    tool = next(tool for tool in await toolset.get_tools(context) if tool.name == name)
    assert isinstance(tool, McpTool)
    return tool


async def run(toolset: McpToolset, name: str, args: dict[str, Any], context: ToolContext | None = None) -> Any:
    context = context or ToolContext()
    with anyio.fail_after(DEADLINE):
        return await (await tool_named(toolset, name, context)).run_async(args=args, tool_context=context)


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_calls_from_many_tasks_share_one_session(transport: str, tmp_path: Path) -> None:
    async with our_http_server() as base_url:
        params = our_stdio(tmp_path / "state.db") if transport == "stdio" else http_params(base_url, "http")
        async with McpToolset(connection_params=params, mode="legacy") as toolset:
            sums: list[tuple[int, dict[str, Any]]] = []
            sessions: set[str] = set()

            async def call(index: int) -> None:
                sums.append((index, await run(toolset, "add", {"a": index, "b": 1})))
                sessions.add((await run(toolset, "whoami", {}))["session"])

            with anyio.fail_after(DEADLINE):
                # The session is opened by a task that ends long before the session does.
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call, 0)
                async with anyio.create_task_group() as tg:
                    for index in range(1, 20):
                        tg.start_soon(call, index)
            assert sorted(sums, key=lambda item: item[0]) == [(index, {"result": index + 1}) for index in range(20)]
            assert len(sessions) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_header_provider_gives_each_identity_its_own_session(mode: str) -> None:
    token_of = {principal: token for token, principal in TOKENS.items()}

    def headers(context: ReadonlyContext) -> dict[str, str]:
        return {"Authorization": f"Bearer {token_of[context.user_id]}"}

    async with our_http_server(auth_tokens=TOKENS) as base_url:
        params = http_params(base_url, "http")
        async with McpToolset(connection_params=params, mode=mode, header_provider=headers) as toolset:
            seen = [await run(toolset, "whoami", {}, ToolContext(user_id=user)) for user in ("alice", "bob", "alice")]
            with anyio.fail_after(DEADLINE):
                alice_session = await toolset.session(ReadonlyContext(user_id="alice"))
                bob_session = await toolset.session(ReadonlyContext(user_id="bob"))
    assert [answer["principal"] for answer in seen] == ["alice", "bob", "alice"]
    assert seen[0]["session"] == seen[2]["session"] != seen[1]["session"]
    assert alice_session is not bob_session


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_killed_stdio_child_fails_the_call_in_flight_and_the_next_call_gets_a_new_one(
    mode: str, tmp_path: Path
) -> None:
    recorder = ClientCallbacks()
    before = child_pids()
    params = our_stdio(tmp_path / "state.db")
    async with McpToolset(connection_params=params, mode=mode, progress_callback=recorder.on_progress) as toolset:
        with anyio.fail_after(DEADLINE):
            tool = await tool_named(toolset, "wait_forever")
        [child] = child_pids() - before
        answers: list[Any] = []

        async def call() -> None:
            answers.append(await tool.run_async(args={"marker": str(tmp_path / "m")}, tool_context=ToolContext()))

        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await recorder.started.wait()
                os.kill(child, signal.SIGKILL)
        [answer] = answers
        assert set(answer) == {"error"}
        assert params.describe() in answer["error"]

        assert await run(toolset, "add", {"a": 2, "b": 2}) == {"result": 4}
        [new_child] = child_pids() - before
        assert new_child != child


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["ours", "sdk"])
async def test_a_call_that_kills_its_stdio_server_ran_once_and_is_not_retried(kind: str, tmp_path: Path) -> None:
    marker = tmp_path / "calls.txt"
    params = our_stdio(tmp_path / "state.db") if kind == "ours" else sdk_stdio()
    async with McpToolset(connection_params=params, mode="legacy") as toolset:
        answer = await run(toolset, "record_and_exit", {"marker": str(marker)})
        assert set(answer) == {"error"}
        assert "not retried" in answer["error"]
        assert await run(toolset, "add", {"a": 1, "b": 2}) == {"result": 3}
    assert marker.read_text().splitlines() == ["called"]


@pytest.mark.anyio
async def test_a_restarted_http_server_gives_one_clear_error_then_a_fresh_session(tmp_path: Path) -> None:
    marker = tmp_path / "calls.txt"
    first = bound_socket()
    port = first.getsockname()[1]
    params = http_params(f"http://127.0.0.1:{port}", "http")
    async with McpToolset(connection_params=params, mode="legacy") as toolset:
        async with our_http_server(sock=first):
            before = await run(toolset, "whoami", {})
        async with our_http_server(sock=bound_socket(port)):
            answer = await run(toolset, "record_call", {"marker": str(marker)})
            assert not marker.exists()  # refused by the new server, and not sent again on a new session
            after = await run(toolset, "whoami", {})
    assert set(answer) == {"error"}
    assert params.describe() in answer["error"]
    assert "no longer knows this session" in answer["error"]
    assert after["session"] != before["session"]


@pytest.mark.anyio
async def test_a_closed_sse_stream_is_noticed_and_the_next_call_opens_a_fresh_session() -> None:
    first = bound_socket()
    port = first.getsockname()[1]
    params = http_params(f"http://127.0.0.1:{port}", "sse")
    async with McpToolset(connection_params=params, mode="legacy") as toolset:
        async with our_http_server(sock=first):
            before = await run(toolset, "whoami", {})
            with anyio.fail_after(DEADLINE):
                session = await toolset.session()
        with anyio.fail_after(DEADLINE):
            await session.finished.wait()  # the owner left: the end of the stream was noticed
        assert not session.alive
        async with our_http_server(sock=bound_socket(port)):
            after = await run(toolset, "whoami", {})
    assert after["session"] != before["session"]


@pytest.mark.anyio
async def test_cancelling_a_call_sends_notifications_cancelled_to_the_upstream(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled.txt"
    recorder = ClientCallbacks()
    async with our_http_server() as base_url:
        params = http_params(base_url, "http")
        async with McpToolset(connection_params=params, mode="legacy", progress_callback=recorder.on_progress) as ts:
            with anyio.fail_after(DEADLINE):
                tool = await tool_named(ts, "wait_forever")
            with anyio.fail_after(DEADLINE):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(lambda: tool.run_async(args={"marker": str(marker)}, tool_context=ToolContext()))
                    await recorder.started.wait()
                    tg.cancel_scope.cancel()
            assert await wait_for_file(marker) == "cancelled"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_session_meta_key_lets_a_sessionless_upstream_tell_identities_apart(mode: str) -> None:
    async with our_http_server() as base_url:
        toolset = McpToolset(
            connection_params=http_params(base_url, "http"),
            mode=mode,
            session_key=lambda context: context.session_id,
            session_meta_key=SESSION_META_KEY,
        )
        async with toolset:
            seen = [await run(toolset, "whoami", {}, ToolContext(session_id=key)) for key in ("one", "two", "one")]
    sessions = [answer["session"] for answer in seen]
    assert sessions[0] == sessions[2] != sessions[1]
    if mode == "legacy":  # a handshake-era upstream has sessions of its own: no key is needed
        assert all(session.startswith("http:") for session in sessions)
        return
    # A random key per upstream session (a bearer secret), not the downstream's id nor anything derived from it.
    assert all(session.startswith("meta:") and len(session) >= len("meta:") + 43 for session in sessions)


@pytest.mark.anyio
async def test_an_idle_session_closes_itself_and_the_next_call_opens_a_new_one() -> None:
    # Nothing here waits less than the idle timeout on purpose: on a loaded machine any pause may outlast it, so a
    # session may idle out between two steps, and each step holds whatever a replacement session makes true too.
    before = child_pids()
    recorder = ClientCallbacks()
    async with McpToolset(
        connection_params=tiny_stdio(), mode="legacy", session_idle_timeout=0.2, progress_callback=recorder.on_progress
    ) as toolset:
        with anyio.fail_after(DEADLINE):
            assert await run(toolset, "echo", {"text": "hi"}) == {"result": "hi"}
            # The identity's current session (a slot ends the one it replaces before opening the next), so once it
            # closed itself, with no call made meanwhile, no session is left.
            await (await toolset.session()).finished.wait()
        assert child_pids() == before
        assert await run(toolset, "echo", {"text": "again"}) == {"result": "again"}
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                # A call in flight keeps its session from idling: the one process alive is the new session's.
                tg.start_soon(run, toolset, "hang", dict[str, Any]())
                await recorder.started.wait()
                assert len(child_pids() - before) == 1
                tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_an_upstream_slower_to_start_than_the_idle_timeout_serves_the_call_that_opened_it() -> None:
    # The handshake is not idleness: the idle clock starts when the session is handed to its caller.
    params = tiny_stdio("--start-after", "0.5")
    async with McpToolset(connection_params=params, mode="legacy", session_idle_timeout=0.1) as toolset:
        with anyio.fail_after(DEADLINE):
            session = await toolset.session()
            assert session.alive
            assert await run(toolset, "echo", {"text": "hi"}) == {"result": "hi"}


@pytest.mark.anyio
async def test_releasing_an_identity_ends_its_session_only() -> None:
    before = child_pids()
    toolset = McpToolset(connection_params=tiny_stdio(), mode="legacy", session_key=lambda c: c.session_id)
    async with toolset:
        first, second = ReadonlyContext(session_id="first"), ReadonlyContext(session_id="second")
        with anyio.fail_after(DEADLINE):
            kept = await toolset.session(second)
            released = await toolset.session(first)
            assert len(child_pids() - before) == 2
            await toolset.release(first)
        assert not released.alive
        assert kept.alive
        assert len(child_pids() - before) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sequential_calls_of_an_http_session_reuse_one_connection(mode: str) -> None:
    # A handshake-era call's response is an SSE stream the SDK closes as soon as the answer arrived; the
    # connection must still go back to the pool rather than a new one being opened (and resolved) per call.
    from sdk_upstream import http_app

    served = http_app("http")
    ports: set[int] = set()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        # A modern session's `subscriptions/listen` stream holds a connection of its own for as long as it lasts.
        listen = (b"mcp-method", b"subscriptions/listen") in scope.get("headers", [])
        if scope["type"] == "http" and scope["method"] == "POST" and not listen:
            ports.add(scope["client"][1])
        await served(scope, receive, send)

    async with (
        serving_asgi(app) as base_url,
        McpToolset(connection_params=http_params(base_url, "http"), mode=mode) as toolset,
    ):
        tool = await tool_named(toolset, "add")
        ports.clear()
        for index in range(5):
            with anyio.fail_after(DEADLINE):
                assert await tool.run_async(args={"a": index, "b": 1}, tool_context=ToolContext()) == {
                    "result": index + 1
                }
    assert len(ports) == 1
