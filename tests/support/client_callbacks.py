"""`ClientCallbacks`: an MCP client's elicitation, sampling and progress callbacks that answer deterministically and
remember what they were asked (the downstream client of a gateway, or the client side of an `McpToolset`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import types
from mcp.client.context import ClientRequestContext

__all__ = ["ClientCallbacks"]


@dataclass
class ClientCallbacks:
    """Answers a confirmation form with `confirm`, any other form with `name`, a URL elicitation with a decline,
    every sampling request with `summary`; `started` is set by the progress message `started`."""

    confirm: bool = True
    name: str = "Ada"
    summary: str = "a short summary"
    elicitations: list[types.ElicitRequestParams] = field(default_factory=list[types.ElicitRequestParams])
    samplings: list[types.CreateMessageRequestParams] = field(default_factory=list[types.CreateMessageRequestParams])
    progress: list[tuple[float, float | None, str | None]] = field(
        default_factory=list[tuple[float, float | None, str | None]]
    )
    started: anyio.Event = field(default_factory=anyio.Event)

    @property
    def asked(self) -> list[str]:
        """The messages of the elicitations, in order."""
        return [params.message for params in self.elicitations]

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        """Accept a confirmation (or decline it, when `confirm` is False); answer a name form with `name`."""
        del context
        self.elicitations.append(params)
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")
        if "confirm" in params.requested_schema.get("properties", {}):
            if not self.confirm:
                return types.ElicitResult(action="decline")
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action="accept", content={"name": self.name})

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        """Answer every sampling request with `summary`."""
        del context
        self.samplings.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=self.summary), model="test-model"
        )

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Remember a progress notification; `started` is set by the `started` message."""
        self.progress.append((progress, total, message))
        if message == "started":
            self.started.set()

    def callbacks(self) -> dict[str, Any]:
        """The `mcp.Client` keyword arguments for the elicitation and sampling callbacks."""
        return {"elicitation_callback": self.elicit, "sampling_callback": self.sample}
