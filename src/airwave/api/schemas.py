"""Base classes for wire models: camelCase on the wire, strict types, extra fields ignored.

Each model's validator and serializer are built on its first use (`defer_build`), not at import:
building all of the ~150 models costs a server about 0.1 s of its start, where a call pays a few
milliseconds once for each model it meets."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

from airwave.core.clock import iso_timestamp


class RequestModel(BaseModel):
    """A request body (spec §1): unknown fields are ignored, wrong types are refused."""

    model_config = ConfigDict(
        alias_generator=to_camel, strict=True, extra="ignore", frozen=True, defer_build=True
    )


class ResponseModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, serialize_by_alias=True, validate_by_name=True, defer_build=True
    )


class Empty(RequestModel):
    """No fields."""


class EmptyResponse(ResponseModel):
    """`{}`."""


Timestamp = Annotated[datetime, PlainSerializer(iso_timestamp, return_type=str, when_used="json")]


class ErrorEnvelope(ResponseModel):
    """The body of every non-200 API response (spec §4)."""

    error_code: int
    error_string: str
    message: str


def _is_none(value: object) -> bool:
    return value is None


def absent_when_none(description: str | None = None) -> Any:
    """A response field left out of the JSON (not sent as null) when it has no value."""
    return Field(None, exclude_if=_is_none, description=description)
