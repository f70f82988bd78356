"""v1 listener/*: open registration and tired tracks (the other account calls come with the account issue)."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import EmptyResponse, RequestModel
from airwave.api.v1.auth import ListenerObject, issue_listener_object
from airwave.core import accounts, sessions
from airwave.errors import ErrorCode


class RegisterRequest(RequestModel):
    username: str = Field(max_length=256)
    password: str = Field(max_length=1024)
    birth_year: int | None = None
    zip_code: str | None = Field(None, max_length=64)
    gender: str | None = Field(None, max_length=64)
    email_opt_out: bool = False
    keep_logged_in: bool = False


@registry.endpoint(
    "listener/register",
    request=RegisterRequest,
    response=ListenerObject,
    auth=False,
    writes=True,
    enabled=lambda settings: settings.open_registration,
    errors=[
        ErrorCode.CALL_NOT_ALLOWED,
        ErrorCode.INVALID_USERNAME,
        ErrorCode.INVALID_PASSWORD,
        ErrorCode.USERNAME_ALREADY_EXISTS,
        ErrorCode.BIRTH_YEAR_INVALID,
        ErrorCode.BIRTH_YEAR_TOO_YOUNG,
        ErrorCode.ZIP_CODE_INVALID,
        ErrorCode.INVALID_GENDER,
    ],
    notes="""
    Only when the operator enabled open registration; otherwise `CALL_NOT_ALLOWED`.
    Usernames: 2-64 characters without spaces, compared case-insensitively. Passwords: at
    least `password_min_length` (default 8) characters, not the username, not a common
    password. `gender`: male, female, nonbinary or unspecified. `birthYear`: 1900 to this
    year, and at least `minimum_age` (default 13) years ago. The new account gets the
    operator's default tier and is logged in: the answer is the login listener object.
    """,
)
def register(call: Call, req: RegisterRequest) -> ListenerObject:
    """Create an account and log it in."""
    services, now = call.services, call.now()
    with services.database.write() as db:
        listener = accounts.create_listener(
            db,
            services.settings,
            now,
            accounts.NewListener(
                username=req.username,
                password=req.password,
                birth_year=req.birth_year,
                zip_code=req.zip_code,
                gender=req.gender,
                email_opt_out=req.email_opt_out,
            ),
        )
        issued = sessions.start_session(
            db,
            services.settings,
            now,
            listener,
            keep_logged_in=req.keep_logged_in,
            address=call.client,
            user_agent=call.user_agent,
        )
        return issue_listener_object(call, issued, 0)


class TiredRequest(RequestModel):
    track_token: str = Field(min_length=1, max_length=64)


@registry.endpoint(
    "listener/addTiredSong", request=TiredRequest, response=EmptyResponse, writes=True,
    errors=[ErrorCode.NOT_FOUND, ErrorCode.USER_NOT_AUTHORIZED, ErrorCode.CONTENT_HAS_EXPIRED],
    notes="The track does not play on any of the listener's stations for 30 days.",
)
def add_tired_song(call: Call, req: TiredRequest) -> EmptyResponse:
    """Rest a track the listener has heard too often."""
    from airwave.core import playlist

    listener = call.require_listener()
    with call.write() as db:
        playlist.add_tired(db, listener, req.track_token, call.now())
    return EmptyResponse()
