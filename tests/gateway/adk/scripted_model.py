"""A google-adk model that answers from a script: no network, predetermined function calls and text."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.models.base_llm import LlmCapabilities
from google.genai import types
from pydantic import Field


def call(name: str, args: dict[str, Any] | None = None) -> LlmResponse:
    """A model turn that calls one tool."""
    part = types.Part(function_call=types.FunctionCall(name=name, args=args or {}))
    return LlmResponse(content=types.Content(role="model", parts=[part]))


def say(text: str) -> LlmResponse:
    """A model turn that answers with text."""
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


class ScriptedModel(BaseLlm):
    """Answers each request with the next response of `script`, and keeps the requests it was sent."""

    model: str = "scripted"
    script: list[LlmResponse] = Field(default_factory=list[LlmResponse])
    requests: list[LlmRequest] = Field(default_factory=list[LlmRequest])

    @property
    def capabilities(self) -> LlmCapabilities:
        return LlmCapabilities(output_schema_and_tools=True)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse]:
        del stream
        self.requests.append(llm_request)
        if not self.script:
            raise AssertionError("The scripted model was asked more often than its script allows.")
        yield self.script.pop(0)
