"""The model the ADK examples use: Gemini when `GOOGLE_API_KEY` is set, else a scripted stand-in, so they run offline.

Imported by `adk_agent.py` and `adk_sign_in.py` as a sibling module (`python examples/NAME.py` puts `examples/`
first on `sys.path`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.models.base_llm import LlmCapabilities
from google.genai import types
from pydantic import Field


class StandInModel(BaseLlm):
    """Plays a model's part offline: each request gets the next scripted turn."""

    model: str = "stand-in"
    turns: list[types.Part] = Field(default_factory=list[types.Part])

    @property
    def capabilities(self) -> LlmCapabilities:
        return LlmCapabilities(output_schema_and_tools=True)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse]:
        del llm_request, stream
        part = self.turns.pop(0) if self.turns else types.Part(text="(the stand-in model has nothing more to say)")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


def tool_call(name: str, /, **args: Any) -> types.Part:
    """A scripted turn that calls the tool `name` with `args` (positional-only: a tool may take a `name` too)."""
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def answer(text: str) -> types.Part:
    """A scripted turn that answers with text."""
    return types.Part(text=text)


def model(*turns: types.Part) -> BaseLlm | str:
    """Gemini (`ADK_MODEL`, default gemini-2.5-flash) with `GOOGLE_API_KEY` set; else a stand-in playing `turns`."""
    if os.environ.get("GOOGLE_API_KEY"):
        return os.environ.get("ADK_MODEL", "gemini-2.5-flash")
    return StandInModel(turns=list(turns))
