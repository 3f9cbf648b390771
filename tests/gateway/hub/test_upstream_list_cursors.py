"""The gateway's merged resource, template and prompt listings refuse a malformed cursor with -32602, as tools do."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hub_harness import DEADLINE, HERE, connect, gateway_http, write_config
from mcp import Client, MCPError, types

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")]

LISTING = [sys.executable, str(HERE / "hub_listing_server.py")]
Lister = Callable[[Client, str | None], Awaitable[Any]]
LISTINGS: dict[str, Lister] = {
    "resources/list": lambda client, cursor: client.list_resources(cursor=cursor),
    "resources/templates/list": lambda client, cursor: client.list_resource_templates(cursor=cursor),
    "prompts/list": lambda client, cursor: client.list_prompts(cursor=cursor),
}

ITEMS = {"resources/list": "resources", "resources/templates/list": "resource_templates", "prompts/list": "prompts"}


@pytest.mark.parametrize("method", list(LISTINGS))
async def test_a_malformed_cursor_for_an_upstream_listing_is_invalid_params_and_the_listing_still_works(
    method: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"n": {"command": LISTING[0], "args": LISTING[1:]}})
    listing = LISTINGS[method]
    errors: list[types.ErrorData] = []
    async with gateway_http(config) as base_url, connect(base_url, "legacy") as client:
        with anyio.fail_after(DEADLINE):
            for cursor in ("²", "9" * 5000, "-1"):
                with pytest.raises(MCPError) as raised:
                    await listing(client, cursor)
                errors.append(raised.value.error)
            first_page = await listing(client, None)
    assert [error.code for error in errors] == [types.INVALID_PARAMS] * 3
    assert all(error.message.startswith("Invalid cursor") and method in error.message for error in errors)
    assert all(len(error.message) < 200 for error in errors)
    assert first_page.next_cursor is None
    assert len(getattr(first_page, ITEMS[method])) == 1
