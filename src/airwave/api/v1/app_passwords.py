"""v1 listener/*AppPassword*: the secrets a listener gives Subsonic apps instead of the account's
password (an extension of this service; the web player's Settings use them)."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import Empty, RequestModel, ResponseModel, Timestamp
from airwave.api.v1.auth import client_of
from airwave.core.accounts import app_passwords, credentials
from airwave.errors import ErrorCode


class AppPasswordObject(ResponseModel):
    app_password_id: int
    label: str
    date_created: Timestamp
    last_used: Timestamp | None = None


def app_password_object(summary: app_passwords.Summary) -> AppPasswordObject:
    return AppPasswordObject(
        app_password_id=summary.id,
        label=summary.label,
        date_created=summary.created_at,
        last_used=summary.last_used_at,
    )


class AppPasswordsResponse(ResponseModel):
    app_passwords: list[AppPasswordObject]


@registry.endpoint(
    "listener/getAppPasswords",
    request=Empty,
    response=AppPasswordsResponse,
    notes="""
    Extension: the caller's app passwords for Subsonic apps, oldest first, with when each was last
    used. Never the secrets: they are shown once, by `listener/createAppPassword`.
    """,
)
def get_app_passwords(call: Call, req: Empty) -> AppPasswordsResponse:
    """The caller's app passwords."""
    listed = app_passwords.list_for(call.services, call.require_listener().username)
    return AppPasswordsResponse(app_passwords=[app_password_object(s) for s in listed])


class CreateAppPasswordRequest(RequestModel):
    label: str = Field("", max_length=app_passwords.LABEL_LIMIT)
    current_password: str = Field(max_length=1024)


class CreatedAppPasswordResponse(ResponseModel):
    app_password: AppPasswordObject
    secret: str


@registry.endpoint(
    "listener/createAppPassword",
    request=CreateAppPasswordRequest,
    response=CreatedAppPasswordResponse,
    writes=True,
    hashes=True,
    errors=[ErrorCode.INVALID_PASSWORD, ErrorCode.RATE_LIMITED, ErrorCode.CALL_NOT_ALLOWED],
    notes="""
    Extension: a new app password for a Subsonic app (`label` names it, e.g. "Symfonium on my
    phone"). The account's password is asked again (wrong: `INVALID_PASSWORD`, counted like failed
    logins), so a stolen session token alone cannot mint a lasting credential. The answer holds the
    `secret`, shown this once; an app uses it as its password (`p`, or `t` and `s`) or as an
    OpenSubsonic `apiKey`. Guest listeners get `CALL_NOT_ALLOWED`.
    """,
)
def create_app_password(call: Call, req: CreateAppPasswordRequest) -> CreatedAppPasswordResponse:
    """Make an app password and show its secret once."""
    created = credentials.create_app_password(
        call.services, call.require_listener(), req.current_password, client_of(call), req.label
    )
    return CreatedAppPasswordResponse(
        app_password=app_password_object(created.summary), secret=created.secret
    )


class RevokeAppPasswordRequest(RequestModel):
    app_password_id: int = Field(ge=1, le=2**63 - 1)  # a database integer, or nothing to find


@registry.endpoint(
    "listener/revokeAppPassword",
    request=RevokeAppPasswordRequest,
    response=AppPasswordObject,
    writes=True,
    errors=[ErrorCode.NOT_FOUND],
    notes="""
    Extension: the app password stops working at once, on every server process. Another
    listener's id, or one already revoked, answers `NOT_FOUND`.
    """,
)
def revoke_app_password(call: Call, req: RevokeAppPasswordRequest) -> AppPasswordObject:
    """Revoke one of the caller's app passwords."""
    return app_password_object(
        app_passwords.revoke(call.services, call.require_listener().username, req.app_password_id)
    )
