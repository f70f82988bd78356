"""v1 meta/*: the endpoint and error tables, read from the registry."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import Empty, ResponseModel
from airwave.errors import error_table


class EndpointInfo(ResponseModel):
    path: str
    versions: list[int]
    auth: bool
    enabled: bool = Field(
        description="extension: false when the operator switched the endpoint off "
        "(`listener/register`, `auth/anonymousLogin`); calling it answers CALL_NOT_ALLOWED"
    )


class ErrorInfo(ResponseModel):
    error_code: int
    error_string: str
    http_status: int
    meaning: str


class EndpointList(ResponseModel):
    endpoints: list[EndpointInfo]
    errors: list[ErrorInfo]


@registry.endpoint("meta/getEndpoints", request=Empty, response=EndpointList, auth=False)
def get_endpoints(call: Call, req: Empty) -> EndpointList:
    """Every endpoint this server answers and every error it can return."""
    return EndpointList(
        endpoints=[
            EndpointInfo(
                path=e.path,
                versions=list(e.versions),
                auth=e.auth,
                enabled=e.enabled is None or e.enabled(call.settings),
            )
            for e in registry.endpoints()
        ],
        errors=[ErrorInfo.model_validate(row) for row in error_table()],
    )
