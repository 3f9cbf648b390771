"""What a tool call asks of its caller: `EventActions` and `ToolConfirmation`, shaped like ADK's."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from gateway.tools.auth_config import AuthConfig

__all__ = ["EventActions", "ToolConfirmation"]

_MODEL_CONFIG = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ToolConfirmation(BaseModel):
    """A human's answer to "may this tool call run?" (ADK's `ToolConfirmation`)."""

    model_config = _MODEL_CONFIG

    hint: str = ""
    confirmed: bool = False
    payload: Any | None = None

    @classmethod
    def from_response_dict(cls, response: dict[str, Any]) -> ToolConfirmation:
        """Read a confirmation from a function response.

        Accepts the confirmation dict itself, or ADK web's wrapper `{"response": "<json>"}` (whose value may
        also be the dict itself).

        Raises:
            pydantic.ValidationError: the dict is not a confirmation.
            ValueError: the wrapped string is not JSON.
        """
        if set(response) == {"response"}:
            wrapped = response["response"]
            if isinstance(wrapped, str | bytes):
                return cls.model_validate(json.loads(wrapped))
            return cls.model_validate(wrapped)
        return cls.model_validate(response)


class EventActions(BaseModel):
    """Side effects a tool call requests (ADK's `EventActions`, the fields a tool can set)."""

    model_config = _MODEL_CONFIG

    skip_summarization: bool | None = None
    state_delta: dict[str, Any] = Field(default_factory=dict[str, Any])
    artifact_delta: dict[str, int] = Field(default_factory=dict[str, int])
    transfer_to_agent: str | None = None
    transfer_reason: str | None = None
    escalate: bool | None = None
    requested_auth_configs: dict[str, AuthConfig] = Field(default_factory=dict[str, AuthConfig])
    requested_tool_confirmations: dict[str, ToolConfirmation] = Field(default_factory=dict[str, ToolConfirmation])
