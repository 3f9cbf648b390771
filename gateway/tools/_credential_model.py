"""The base of the credential models: camelCase aliases, extra fields kept, secrets out of `repr` and errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel

__all__ = ["CredentialModel", "from_other_model"]

_REDACTED: Final = "<redacted>"


def from_other_model(cls: type[BaseModel], data: Any) -> Any:
    """Another library's model of the same thing (google-adk's, FastAPI's OpenAPI ones) as its wire-shaped dict."""
    if isinstance(data, BaseModel) and not isinstance(data, cls):
        return data.model_dump(by_alias=True, mode="json", exclude_none=True)
    return data


class CredentialModel(BaseModel, hide_input_in_errors=True):
    """camelCase aliases, extra fields kept, and no secret in `repr`, nor in validation errors.

    google-adk's instances of the same model are accepted wherever one of these is expected, and converted.
    """

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _accept_other_models(cls, data: Any) -> Any:
        return from_other_model(cls, data)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        extra = self.__pydantic_extra__ or {}
        for key, value in super().__repr_args__():
            yield key, _REDACTED if key in extra else value
