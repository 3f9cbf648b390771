"""The SDK's own `MCPServer` as an upstream of the client tests: the tools of `upstream_tools.py`, written the
SDK's way (elicitation and sampling through `Resolve`, so they work in both protocol eras).

Run as a script it serves over stdio; `http_app(transport)` gives the SSE or streamable HTTP app.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp import types
from mcp.server.mcpserver import Context, Elicit, Image, MCPServer, Resolve, Sample
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel
from starlette.applications import Starlette

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
STARTED = "started"


class Order(BaseModel):
    """One pizza order."""

    size: Literal["small", "large"]
    toppings: list[str] = []


class Weather(BaseModel):
    """Weather in a city."""

    city: str
    celsius: int


class Name(BaseModel):
    """A person's name."""

    name: str


async def ask_for_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


async def ask_for_summary(text: str) -> Sample:
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(text=f"Summarise: {text}"))], max_tokens=50
    )


def build() -> MCPServer:
    """A fresh server (its tool-call counters are per instance)."""
    server = MCPServer("sdk-upstream", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def place_order(order: Order) -> str:
        """Place an order (its schema has `$defs`)."""
        return f"{order.size} pizza with {len(order.toppings)} toppings"

    @server.tool()
    def fail(reason: str) -> str:
        """Always fail, saying why."""
        raise ToolError(reason)

    @server.tool()
    def weather(city: str) -> Weather:
        """Structured weather for a city."""
        return Weather(city=city, celsius=21)

    @server.tool()
    def tiny_image() -> Image:
        """A 1x1 PNG."""
        return Image(data=PNG, format="png")

    @server.tool()
    async def count_up(ctx: Context, steps: int = 3) -> dict[str, int]:
        """Count up, reporting each step as progress."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        return {"counted": steps}

    @server.tool()
    async def quiet_steps(ctx: Context) -> str:
        """Report progress with numbers only, no message."""
        await ctx.report_progress(1, 2)
        await ctx.report_progress(2, 2)
        return "quiet"

    @server.tool()
    async def ask_name(answer: Annotated[Name, Resolve(ask_for_name)]) -> dict[str, Any]:
        """Ask the user for their name through elicitation."""
        return {"action": "accept", "name": answer.name}

    @server.tool()
    async def summarize(text: str, reply: Annotated[types.CreateMessageResult, Resolve(ask_for_summary)]) -> str:
        """Ask the client's model to summarise `text`."""
        content = reply.content
        return content.text if isinstance(content, types.TextContent) else str(content)

    @server.tool()
    def record_call(marker: str) -> str:
        """Append one line to `marker` per call."""
        with Path(marker).open("a") as handle:
            handle.write("called\n")
        return "recorded"

    @server.tool()
    async def wait_forever(marker: str, ctx: Context) -> str:
        """Block until cancelled; the `finally` writes `marker`."""
        try:
            await ctx.report_progress(0, message=STARTED)
            await anyio.sleep_forever()
        finally:
            Path(marker).write_text("cancelled")  # noqa: ASYNC240
        return "unreachable"

    @server.tool()
    def record_and_exit(marker: str) -> str:
        """Append one line to `marker`, then end the server process at once."""
        record_call(marker)
        os._exit(3)

    return server


def http_app(transport: Literal["sse", "http"]) -> Starlette:
    """A fresh server's SSE (`/sse`) or streamable HTTP (`/mcp`) app."""
    server = build()
    return server.sse_app() if transport == "sse" else server.streamable_http_app()


if __name__ == "__main__":
    build().run()
