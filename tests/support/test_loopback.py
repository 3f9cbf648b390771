"""`serving_asgi` beside other servers in one process: it must leave the process's signal handlers alone.

uvicorn's `serve()` installs SIGINT/SIGTERM handlers and puts the previous ones back when it returns, which is only
right when servers stop in the reverse order of their start. A plain server started before the gateway's own (whose
`serve_async` installs its handler a few scheduling steps later) but stopped first left its handler installed after
the gateway's stopped; sse-starlette finds "the" uvicorn server through that handler and, seeing a stopped one,
cancelled every SSE response in the process from then on: `bench.py --smoke` logged "ASGI callable returned without
completing response" 31 times, each an upstream's response cut before its end.
"""

from __future__ import annotations

import signal

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from gateway.server import ToolServer, serve_async
from tests.support.deadlines import DEADLINE
from tests.support.loopback import bound_socket, serving_asgi

pytestmark = pytest.mark.anyio


async def _ok(request: Request) -> PlainTextResponse:
    del request
    return PlainTextResponse("ok")


async def _wait_until_answering(url: str) -> None:
    async with httpx2.AsyncClient(timeout=2.0) as http:
        with anyio.fail_after(DEADLINE):
            while True:
                try:
                    if (await http.get(url)).status_code == 200:
                        return
                except httpx2.TransportError:
                    pass
                await anyio.sleep(0.02)


def echo(text: str) -> str:
    """Return `text`."""
    return text


async def test_a_plain_server_stopped_before_the_gateways_leaves_no_handler_of_a_stopped_server() -> None:
    before = signal.getsignal(signal.SIGTERM)
    plain_up, plain_stop, plain_done = anyio.Event(), anyio.Event(), anyio.Event()
    gateway_done = anyio.Event()
    app = Starlette(routes=[Route("/", _ok)])

    async def plain() -> None:
        try:
            async with serving_asgi(app) as url:
                await _wait_until_answering(f"{url}/")
                plain_up.set()
                await plain_stop.wait()
        finally:
            plain_done.set()

    async def gateway(scope: anyio.CancelScope) -> None:
        with scope:
            try:
                await serve_async(ToolServer([echo]), transport="http", sock=sock, auth_tokens={})
            finally:
                gateway_done.set()

    with bound_socket() as sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(plain)
            with anyio.fail_after(DEADLINE):
                await plain_up.wait()
            # The gateway starts after the plain server and stops after it: not the reverse order of their starts.
            gateway_scope = anyio.CancelScope()
            tg.start_soon(gateway, gateway_scope)
            await _wait_until_answering(f"http://127.0.0.1:{sock.getsockname()[1]}/healthz")
            plain_stop.set()
            with anyio.fail_after(DEADLINE):
                await plain_done.wait()
            gateway_scope.cancel()
            with anyio.fail_after(DEADLINE):
                await gateway_done.wait()
    after = signal.getsignal(signal.SIGTERM)
    assert after == before, f"SIGTERM is left to {after!r}"
