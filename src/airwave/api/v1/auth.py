"""v1 auth/*: login (with session resume) and logout."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import Empty, EmptyResponse, RequestModel, ResponseModel
from airwave.config import Settings
from airwave.core.accounts import accounts, credentials
from airwave.core.entities import Listener
from airwave.errors import ErrorCode

FLAG_NAMES = (
    "noAds",
    "adFreeSkip",
    "adFreeReplay",
    "replaysEnabled",
    "highQualityStreamingAvailable",
    "onDemand",
)


class ListenerConfig(ResponseModel):
    branding: str
    daily_skip_limit: int = Field(description="0 = unlimited")
    station_skip_limit: int = Field(description="per station per hour; 0 = unlimited")
    inactivity_timeout: int = Field(description="seconds of inactivity before the token expires")
    monthly_listening_cap_hours: int = Field(description="0 = no cap")
    max_stations: int
    flags: list[str] = Field(
        description="names of what the tier allows (spec §6.6), from: " + ", ".join(FLAG_NAMES)
    )
    experiments: list[int] = Field(description="always empty")


class ListenerObject(ResponseModel):
    """The listener object of login/register (spec §7)."""

    auth_token: str
    listener_id: str
    username: str
    webname: str
    station_count: int
    is_new: bool
    birth_year: int | None
    gender: str | None
    zip_code: str | None
    explicit_content_filter_enabled: bool
    high_quality_streaming_enabled: bool
    profile_private: bool
    email_opt_out: bool
    minor: bool
    tier: str
    is_admin: bool
    config: ListenerConfig


def listener_config(
    settings: Settings, listener: Listener, inactivity_timeout: int
) -> ListenerConfig:
    policy = settings.tier(listener.tier)
    return ListenerConfig(
        branding="Airwave",
        daily_skip_limit=policy.daily_skip_limit,
        station_skip_limit=policy.station_skip_limit,
        inactivity_timeout=inactivity_timeout,
        monthly_listening_cap_hours=policy.monthly_listening_cap_hours,
        max_stations=policy.max_stations,
        flags=[
            name
            for name, allowed in zip(
                FLAG_NAMES,
                (
                    not policy.ads,
                    not policy.ads,
                    policy.replays and not policy.ads,
                    policy.replays,
                    policy.high_quality,
                    policy.on_demand,
                ),
            )
            if allowed
        ],
        experiments=[],
    )


def client_of(call: Call) -> credentials.Client:
    return credentials.Client(call.client, call.user_agent, call.device_cookie)


def issue_listener_object(call: Call, signed_in: credentials.SignedIn) -> ListenerObject:
    """Shape a fresh session as the listener object and set the session cookie."""
    issued, station_count = signed_in.issued, signed_in.station_count
    listener, session = issued.listener, issued.session
    call.start_session_cookie(
        issued.cookie, session.timeout_seconds if session.keep_logged_in else None
    )
    if issued.device_cookie is not None:
        call.set_device_cookie(issued.device_cookie)
    return ListenerObject(
        auth_token=issued.token,
        listener_id=str(listener.id),
        username=listener.username,
        webname=listener.webname,
        station_count=station_count,
        is_new=issued.is_new,
        birth_year=listener.birth_year,
        gender=listener.gender,
        zip_code=listener.zip_code,
        explicit_content_filter_enabled=listener.explicit_filter,
        high_quality_streaming_enabled=listener.high_quality_streaming,
        profile_private=listener.profile_private,
        email_opt_out=listener.email_opt_out,
        minor=accounts.is_minor(listener, call.now()),
        tier=listener.tier,
        is_admin=listener.is_admin,
        config=listener_config(call.settings, listener, session.timeout_seconds),
    )


class LoginRequest(RequestModel):
    username: str | None = Field(None, max_length=256)
    password: str | None = Field(None, max_length=1024)
    keep_logged_in: bool = False
    existing_auth_token: str | None = Field(None, max_length=256)


@registry.endpoint(
    "auth/login",
    request=LoginRequest,
    hashes=True,
    response=ListenerObject,
    auth=False,
    errors=[
        ErrorCode.AUTH_INVALID_USERNAME_PASSWORD,
        ErrorCode.AUTH_INVALID_TOKEN,
        ErrorCode.LISTENER_SUSPENDED,
        ErrorCode.RATE_LIMITED,
    ],
    notes="""
    With `existingAuthToken` and no `password`, resumes that session (same token, new session
    cookie); a `username` given alongside must be the token's. Otherwise `username` and
    `password` are required. A password login also sets the long-lived `airwave_device` cookie:
    attempts sent with it are throttled per device, never by others' failures. Attempts without
    it are throttled per account (after `login_free_failures` failures each further failure
    doubles the delay) and per client address (distinct accounts failing from it); while a delay
    runs the answer is `RATE_LIMITED` with `Retry-After` (seconds), even for the right password.
    `isNew` is true on the account's first login.
    """,
)
def login(call: Call, req: LoginRequest) -> ListenerObject:
    """Log in with username and password, or resume a session; sets the session cookie."""
    signed_in = credentials.log_in(
        call.services,
        username=req.username,
        password=req.password,
        keep_logged_in=req.keep_logged_in,
        existing_auth_token=req.existing_auth_token,
        client=client_of(call),
    )
    return issue_listener_object(call, signed_in)


@registry.endpoint("auth/logout", request=Empty, response=EmptyResponse)
def logout(call: Call, req: Empty) -> EmptyResponse:
    """End this session: the token stops working at once and the session cookie is cleared."""
    assert call.session is not None
    credentials.log_out(call.services, call.session)
    call.clear_session_cookie()
    return EmptyResponse()


class LogoutAllRequest(RequestModel):
    current_password: str = Field(max_length=1024)


@registry.endpoint(
    "auth/logoutAll",
    request=LogoutAllRequest,
    response=EmptyResponse,
    writes=True,
    hashes=True,
    errors=[ErrorCode.INVALID_PASSWORD, ErrorCode.RATE_LIMITED],
    notes="""
    Extension: "sign out everywhere". After re-entering the password (wrong: `INVALID_PASSWORD`,
    counted like failed logins), every session of the account ends, this one included, and the
    session cookie is cleared. The password stays as it is.
    """,
)
def logout_all(call: Call, req: LogoutAllRequest) -> EmptyResponse:
    """End every session of the account."""
    credentials.log_out_everywhere(
        call.services, call.require_listener(), req.current_password, client_of(call)
    )
    call.clear_session_cookie()
    return EmptyResponse()


@registry.endpoint(
    "auth/anonymousLogin",
    request=Empty,
    response=ListenerObject,
    auth=False,
    writes=True,
    hashes=True,
    enabled=lambda settings: settings.anonymous_login,
    errors=[ErrorCode.CALL_NOT_ALLOWED, ErrorCode.RATE_LIMITED],
    notes="""
    Only when the operator set `anonymous_login` (else `CALL_NOT_ALLOWED`). Creates a throw-away
    listener on the free tier (ads, skip limits) named `anonymous-…`, with a private profile and no
    usable password, and logs it in. The listener and all its data are deleted once it has made no
    request for `anonymous_idle_timeout` seconds (default one day). At most 30 anonymous logins per
    client address per hour (`RATE_LIMITED` with `Retry-After`).
    """,
)
def anonymous_login(call: Call, req: Empty) -> ListenerObject:
    """Listen without an account."""
    return issue_listener_object(
        call, credentials.log_in_anonymously(call.services, client_of(call))
    )
