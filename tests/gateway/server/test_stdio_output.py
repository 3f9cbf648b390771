"""Serving over stdio: stdout is the protocol's, so a tool's `print()` goes to stderr, at once, and the wire stays
clean."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client
from server_harness import DEADLINE, ROOT

pytestmark = pytest.mark.anyio

CLI_TOOLS = str(ROOT / "tests" / "gateway" / "cli" / "cli_tools.py")


async def test_a_tools_print_reaches_stderr_while_serving_and_never_the_protocol_stream(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway.cli", "serve", "--tools", CLI_TOOLS, "--state", str(tmp_path / "s.db")],
        cwd=ROOT,
    )
    errlog_path = tmp_path / "stderr.txt"
    with errlog_path.open("w") as errlog:
        with anyio.fail_after(DEADLINE):
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                results = [await client.call_tool("chatty", {"text": f"n{i}"}) for i in range(20)]
                # Before the session ends: a print buffered until exit would not be there yet.
                errlog.flush()
                printed_while_serving = errlog_path.read_text().count("chatter from the tool")
    assert [result.structured_content for result in results] == [{"result": f"N{i}"} for i in range(20)]
    assert printed_while_serving == 20
