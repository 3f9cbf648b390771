"""Several gateway replicas on one Redis behind a load balancer, with the real parts.

Each replica is `adk-mcp-gateway serve --transport http --state redis://…` as a child process, sharing a sealing
key; a small round-robin HTTP proxy (`tests/support/round_robin_proxy.py`) stands in front as the balancer; the
Redis is a real `redis-server` (`tests/support/redis_server.py`).

What survives a replica's death, as these tests show it: a modern (2026-07-28) client simply goes on through the
other replica (its `_meta` session key names its state, which is in Redis); every write it saw acknowledged is
there. A handshake-era client's `Mcp-Session-Id` names a session only the dead replica knew: the survivor answers
404, the client initialises a new session, and keeps its `user:` and `app:` state and whatever it keyed by the
`_meta` session key; the plain session keys of the old `Mcp-Session-Id` session belong to that session, which the
spec ends with its 404 (they are swept by the retention like any abandoned session's).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpcore2
import httpx2
import pytest
from mcp import Client, MCPError, types
from mcp.client.context import ClientRequestContext
from server_harness import DEADLINE, ROOT, TOOLS_REF, connect, http_server, wait_until_healthy

from adapters.meta_keys import SESSION_META_KEY
from tests.support.child_process import child_process
from tests.support.loopback import free_port
from tests.support.round_robin_proxy import RoundRobinProxy

pytestmark = pytest.mark.anyio

SEALING_KEY = "replicas-share-this-sealing-key-for-tests-0123"
CALL_DEADLINE = 10.0
"""Seconds one call through the balancer may take; a call cut by a replica's death fails within it."""


@dataclass
class Replica:
    url: str
    process: anyio.abc.Process


@asynccontextmanager
async def replica(state: str, app: str, log: Path) -> AsyncIterator[Replica]:
    """`adk-mcp-gateway serve` over HTTP on `state` (Redis, or a SQLite file) as a child process, until the block
    ends (or it is killed)."""
    port = free_port()
    command = [sys.executable, "-m", "gateway.cli", "serve", "--tools", TOOLS_REF, "--transport", "http"]
    command += ["--port", str(port), "--state", state, "--name", app]
    env = {**os.environ, "ADK_MCP_GATEWAY_SEALING_KEY": SEALING_KEY}
    with log.open("wb") as stderr:
        async with child_process(
            command, terminate_within=DEADLINE, env=env, stdout=subprocess.DEVNULL, stderr=stderr
        ) as process:
            await wait_until_healthy(f"http://127.0.0.1:{port}")
            yield Replica(f"http://127.0.0.1:{port}", process)


@asynccontextmanager
async def replicas(redis_url: str, tmp_path: Path, count: int = 2) -> AsyncIterator[list[Replica]]:
    """`count` replicas of one app (a fresh app name: a fresh state) on `redis_url`."""
    app = f"replicas-{uuid.uuid4().hex[:8]}"
    async with AsyncExitStack() as stack:
        started = [
            await stack.enter_async_context(replica(redis_url, app, tmp_path / f"replica-{index}.log"))
            for index in range(count)
        ]
        yield started


def haproxy_or_skip() -> str:
    """The `haproxy` binary; the test is skipped without it (and fails under CI, whose .ci/run installs it)."""
    binary = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
    if binary is None:
        reason = "haproxy is not installed (apt-get install haproxy) to run examples/haproxy.cfg; .ci/run installs it."
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return binary


def session_meta() -> dict[str, Any]:
    return {SESSION_META_KEY: secrets.token_urlsafe(32)}


async def test_state_written_through_one_replica_is_read_through_the_other(redis_url: str, tmp_path: Path) -> None:
    meta = session_meta()
    async with replicas(redis_url, tmp_path) as (a, b):
        proxy = RoundRobinProxy([a.url, b.url])
        async with proxy.serving() as url, connect("http", "modern", url) as client:
            with anyio.fail_after(DEADLINE):
                counts = [(await client.call_tool("bump", {}, meta=meta)).structured_content for _ in range(4)]
    assert counts == [{"session": n, "user": n, "app": n} for n in range(1, 5)]
    assert {forwarded.backend for forwarded in proxy.served if forwarded.method == "tools/call"} == {0, 1}


async def test_a_modern_calls_input_round_sealed_by_one_replica_is_answered_through_the_other(
    redis_url: str, tmp_path: Path
) -> None:
    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context, params
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with (
        replicas(redis_url, tmp_path) as (a, b),
        connect("http", "modern", a.url, elicitation_callback=answer) as on_a,
        connect("http", "modern", b.url, elicitation_callback=answer) as on_b,
    ):
        with anyio.fail_after(DEADLINE):
            first = await on_a.session.call_tool("ask_name", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            assert first.input_requests is not None
            (key,) = first.input_requests
            result = await on_b.session.call_tool(
                "ask_name",
                {},
                input_responses={key: types.ElicitResult(action="accept", content={"name": "Ada"})},
                request_state=first.request_state,
                allow_input_required=True,
            )
    assert isinstance(result, types.CallToolResult)
    assert result.structured_content == {"action": "accept", "name": "Ada"}


async def _confirm(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    """A client that can be asked (its answers are sent by hand here, as rounds)."""
    del context, params
    return types.ElicitResult(action="accept", content={"confirm": True})


async def _asked_to_remove(client: Client, marker: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The arguments of a `remove_item` call and its answered second round (confirmed), ready to send."""
    arguments = {"item": "photos", "marker": str(marker)}
    with anyio.fail_after(DEADLINE):
        asked = await client.session.call_tool("remove_item", arguments, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult)
    assert asked.input_requests is not None
    (key,) = asked.input_requests
    confirmed = types.ElicitResult(action="accept", content={"confirm": True})
    return arguments, {"input_responses": {key: confirmed}, "request_state": asked.request_state}


async def _answer(
    client: Client, arguments: dict[str, Any], answered: dict[str, Any]
) -> types.CallToolResult | types.ErrorData:
    """The result of sending an answered round, or the error refusing it."""
    try:
        with anyio.fail_after(DEADLINE):
            result = await client.session.call_tool("remove_item", arguments, **answered)
    except MCPError as refused:
        return refused.error
    assert isinstance(result, types.CallToolResult)
    return result


def _refused_as_replayed(outcome: types.CallToolResult | types.ErrorData) -> bool:
    return (
        isinstance(outcome, types.ErrorData) and outcome.code == types.INVALID_PARAMS and "already" in outcome.message
    )


async def test_a_confirmed_round_answered_through_one_replica_is_refused_by_the_other(
    redis_url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "removed"
    async with (
        replicas(redis_url, tmp_path) as (a, b),
        connect("http", "modern", a.url, elicitation_callback=_confirm) as on_a,
        connect("http", "modern", b.url, elicitation_callback=_confirm) as on_b,
    ):
        arguments, answered = await _asked_to_remove(on_a, marker)
        first = await _answer(on_a, arguments, answered)
        assert isinstance(first, types.CallToolResult)
        assert first.structured_content == {"removed": "photos", "confirmed": True}
        marker.unlink()
        replayed = await _answer(on_b, arguments, answered)
    assert _refused_as_replayed(replayed), replayed
    assert not marker.exists()


async def test_one_confirmed_round_sent_to_two_replicas_at_once_runs_the_tool_once(
    redis_url: str, tmp_path: Path
) -> None:
    outcomes: list[types.CallToolResult | types.ErrorData] = []
    async with (
        replicas(redis_url, tmp_path) as (a, b),
        connect("http", "modern", a.url, elicitation_callback=_confirm) as on_a,
        connect("http", "modern", b.url, elicitation_callback=_confirm) as on_b,
    ):
        arguments, answered = await _asked_to_remove(on_a, tmp_path / "removed")

        async def send(client: Client) -> None:
            outcomes.append(await _answer(client, arguments, answered))

        async with anyio.create_task_group() as tg:
            for client in (on_a, on_b, on_a, on_b):
                tg.start_soon(send, client)
    ran = [outcome for outcome in outcomes if isinstance(outcome, types.CallToolResult)]
    assert len(ran) == 1, outcomes
    assert ran[0].structured_content == {"removed": "photos", "confirmed": True}
    assert sum(map(_refused_as_replayed, outcomes)) == 3, outcomes


async def test_a_confirmed_round_is_refused_by_the_same_replica_after_a_restart_on_sqlite(tmp_path: Path) -> None:
    state, marker = str(tmp_path / "state.db"), tmp_path / "removed"
    async with (
        replica(state, "restarted", tmp_path / "before.log") as before,
        connect("http", "modern", before.url, elicitation_callback=_confirm) as c,
    ):
        arguments, answered = await _asked_to_remove(c, marker)
        first = await _answer(c, arguments, answered)
    assert isinstance(first, types.CallToolResult)
    marker.unlink()
    async with (
        replica(state, "restarted", tmp_path / "after.log") as after,
        connect("http", "modern", after.url, elicitation_callback=_confirm) as c,
    ):
        replayed = await _answer(c, arguments, answered)
    assert _refused_as_replayed(replayed), replayed
    assert not marker.exists()


WRITERS = 4
WRITES = 12
KILL_AFTER = 10
"""Acknowledged writes (of all writers together) after which replica A is killed."""


async def test_modern_clients_go_on_through_the_survivor_of_a_kill_9_and_lose_no_acknowledged_write(
    redis_url: str, tmp_path: Path
) -> None:
    acknowledged: list[list[str]] = [[] for _ in range(WRITERS)]
    final: list[dict[str, Any]] = [{} for _ in range(WRITERS)]
    failed_calls = 0
    killed = anyio.Event()

    async with replicas(redis_url, tmp_path) as (a, b):
        proxy = RoundRobinProxy([a.url, b.url])

        async def write(writer: int, url: str) -> None:
            nonlocal failed_calls
            meta = session_meta()
            while True:
                try:
                    async with connect("http", "modern", url) as client:
                        for index in range(len(acknowledged[writer]), WRITES):
                            key = f"key-{index}"
                            while True:
                                try:
                                    result = await client.call_tool(
                                        "set_key",
                                        {"key": key, "value": f"w{writer}"},
                                        meta=meta,
                                        read_timeout_seconds=CALL_DEADLINE,
                                    )
                                except (MCPError, httpx2.TransportError):
                                    failed_calls += 1  # not acknowledged: the client may send it again
                                    continue
                                if not result.is_error:
                                    break
                                failed_calls += 1
                            acknowledged[writer].append(key)
                            if sum(map(len, acknowledged)) == KILL_AFTER:
                                a.process.send_signal(signal.SIGKILL)
                                killed.set()
                        read = await client.call_tool("read_state", {}, meta=meta, read_timeout_seconds=CALL_DEADLINE)
                        final[writer] = (read.structured_content or {})["state"]
                        return
                except* (httpx2.TransportError, httpcore2.ProtocolError, httpcore2.NetworkError):
                    # The kill can cut a response the SDK's transport was reading in its own task, which then ends
                    # the client rather than the call: the call was not acknowledged, so a new client sends it again.
                    failed_calls += 1

        with anyio.fail_after(DEADLINE * 3):
            async with proxy.serving() as url, anyio.create_task_group() as tg:
                for writer in range(WRITERS):
                    tg.start_soon(write, writer, url)
            assert killed.is_set()
            assert await a.process.wait() == -signal.SIGKILL

    for writer in range(WRITERS):
        assert acknowledged[writer] == [f"key-{index}" for index in range(WRITES)]
        assert final[writer] == {key: f"w{writer}" for key in acknowledged[writer]}
    # The balancer found A down and sent the rest to B (the final reads among them).
    assert proxy.down == {0}
    assert [f.backend for f in proxy.served[-WRITERS:]] == [1] * WRITERS
    del failed_calls  # how many calls the kill cut depends on timing; what matters is that none was lost


async def test_a_replica_answers_404_to_a_session_id_it_does_not_know() -> None:
    async with http_server() as base_url, httpx2.AsyncClient(timeout=DEADLINE) as http:
        response = await http.post(
            f"{base_url}/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={
                "mcp-session-id": uuid.uuid4().hex,
                "mcp-protocol-version": "2025-11-25",
                "accept": "application/json, text/event-stream",
            },
        )
    assert response.status_code == 404


async def test_handshake_clients_reinitialise_after_their_replica_died_and_keep_user_and_meta_keyed_state(
    redis_url: str, tmp_path: Path
) -> None:
    meta = session_meta()
    async with replicas(redis_url, tmp_path) as (a, b):
        proxy = RoundRobinProxy([a.url, b.url], affinity=True)
        async with proxy.serving() as url:
            with anyio.fail_after(DEADLINE * 2):
                async with connect("http", "legacy", url) as client:
                    await client.call_tool("set_key", {"key": "plain", "value": "of the Mcp-Session-Id session"})
                    await client.call_tool("set_key", {"key": "user:name", "value": "Ada"})
                    await client.call_tool("set_key", {"key": "kept", "value": "by the _meta key"}, meta=meta)
                    holder = proxy.served[-1].backend
                    assert {f.backend for f in proxy.served if f.session_id} == {holder}
                    (a, b)[holder].process.send_signal(signal.SIGKILL)
                    # The survivor does not know the session: 404, which the SDK client reports as below.
                    try:
                        await client.call_tool("read_state", {})
                    except MCPError as e:
                        print("SERVED", proxy.served, e)
                assert (proxy.served[-1].backend, proxy.served[-1].status) == (1 - holder, 404)
                # A new session: initialise again (through the survivor).
                async with connect("http", "legacy", url) as client:
                    fresh = (await client.call_tool("read_state", {})).structured_content
                    keyed = (await client.call_tool("read_state", {}, meta=meta)).structured_content
    assert fresh == {"state": {"user:name": "Ada"}}
    assert keyed == {"state": {"user:name": "Ada", "kept": "by the _meta key"}}


async def test_the_haproxy_example_keeps_each_handshake_session_on_its_replica_and_spreads_modern_calls(
    redis_url: str, tmp_path: Path
) -> None:
    binary = haproxy_or_skip()
    meta = session_meta()
    async with replicas(redis_url, tmp_path) as (a, b):
        port = free_port()
        config = (ROOT / "examples" / "haproxy.cfg").read_text()
        for example, real in [
            ("bind 127.0.0.1:8000", f"bind 127.0.0.1:{port}"),
            ("127.0.0.1:8001", a.url.removeprefix("http://")),
            ("127.0.0.1:8002", b.url.removeprefix("http://")),
        ]:
            assert example in config
            config = config.replace(example, real)
        (tmp_path / "haproxy.cfg").write_text(config)
        with (tmp_path / "haproxy.log").open("wb") as log:
            balancer = await anyio.open_process(
                [binary, "-db", "-f", str(tmp_path / "haproxy.cfg")], stdout=log, stderr=log, stdin=subprocess.DEVNULL
            )
            async with balancer:
                try:
                    url = f"http://127.0.0.1:{port}"
                    await wait_until_healthy(url)
                    with anyio.fail_after(DEADLINE * 2):
                        # Round-robin alone would send every other request of the session to the replica that does
                        # not know it (404): the stick table keeps them together.
                        async with connect("http", "legacy", url) as client:
                            for index in range(6):
                                await client.call_tool("set_key", {"key": f"key-{index}", "value": "kept"})
                            legacy = (await client.call_tool("read_state", {})).structured_content
                        async with connect("http", "modern", url) as client:
                            counts = [
                                (await client.call_tool("bump", {}, meta=meta)).structured_content for _ in range(4)
                            ]
                finally:
                    if balancer.returncode is None:
                        balancer.terminate()
                        with anyio.move_on_after(DEADLINE, shield=True):
                            await balancer.wait()
    assert legacy == {"state": {f"key-{index}": "kept" for index in range(6)}}
    assert counts == [{"session": n, "user": n, "app": n} for n in range(1, 5)]
