"""What a wire model travels as: the JSON a result, a tool or a request is sent as, nothing added."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def wire_form(message: BaseModel) -> dict[str, Any]:
    """`message` as its JSON on the wire: field names by alias, only the fields that were set."""
    return message.model_dump(by_alias=True, mode="json", exclude_unset=True)
