"""The elicitation modes a client declared are honoured: `elicitation: {}` (2025-11-25) means form mode alone.

The client is the SDK's, declaring exactly `elicitation: {}` (`DeclaringClient`; the SDK's own client declares
both modes whenever it has an elicitation callback); its callback records whatever it is asked.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from server_harness import DEADLINE, ERAS, Era, http_client_for, http_server
from sign_in_harness import signing_in_server

from gateway.client.sessions._declared_client import DeclaringClient

pytestmark = pytest.mark.anyio

FORM_ONLY = types.ClientCapabilities(elicitation=types.ElicitationCapability())


class FormOnly:
    """A form-only client's elicitation callback: answers a name form with Ada, records every request."""

    def __init__(self) -> None:
        self.asked: list[types.ElicitRequestParams] = []

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        del context
        self.asked.append(params)
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="decline")  # never reached by a server that honours the declaration
        return types.ElicitResult(action="accept", content={"name": "Ada"})


@asynccontextmanager
async def form_only_client(base_url: str, era: Era, recorder: FormOnly) -> AsyncGenerator[DeclaringClient]:
    async with http_client_for() as http:
        transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
        mode: Any = "legacy" if era == "legacy" else "auto"
        client = DeclaringClient(transport, mode=mode, elicitation_callback=recorder.elicit)
        client.declared = FORM_ONLY
        async with client:
            yield client


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_declared_form_elicitation_only_gets_the_sign_in_link_as_an_error(era: Era) -> None:
    recorder = FormOnly()
    async with signing_in_server() as (base_url, _api, _server), form_only_client(base_url, era, recorder) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("list_events", {})
    assert recorder.asked == []
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "Sign-in required" in text
    assert text.rpartition(": ")[2].startswith(f"{base_url}/oauth/sign-in?state=")


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_that_declared_form_elicitation_only_is_still_asked_in_forms(era: Era) -> None:
    recorder = FormOnly()
    async with http_server() as base_url, form_only_client(base_url, era, recorder) as client:
        with anyio.fail_after(DEADLINE):
            result = await client.call_tool("ask_name", {})
    assert result.structured_content == {"action": "accept", "name": "Ada"}
    assert [type(params) for params in recorder.asked] == [types.ElicitRequestFormParams]
