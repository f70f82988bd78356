"""v1 listener/*: registration, profile, settings and the explicit PIN, account changes, password
reset by mail."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import EmptyResponse, RequestModel, ResponseModel, Timestamp
from airwave.api.v1.auth import ListenerObject, client_of, issue_listener_object
from airwave.core.accounts import accounts, credentials, resets
from airwave.core.entities import Listener
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
    hashes=True,
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
    new = accounts.NewListener(
        username=req.username,
        password=req.password,
        birth_year=req.birth_year,
        zip_code=req.zip_code,
        gender=req.gender,
        email_opt_out=req.email_opt_out,
    )
    signed_in = credentials.register(
        call.services, new, keep_logged_in=req.keep_logged_in, client=client_of(call)
    )
    return issue_listener_object(call, signed_in)


class TiredRequest(RequestModel):
    track_token: str = Field(min_length=1, max_length=64)


@registry.endpoint(
    "listener/addTiredSong",
    request=TiredRequest,
    response=EmptyResponse,
    writes=True,
    errors=[
        ErrorCode.NOT_FOUND,
        ErrorCode.USER_NOT_AUTHORIZED,
        ErrorCode.CONTENT_HAS_EXPIRED,
        ErrorCode.CALL_NOT_ALLOWED,
    ],
    notes="The track does not play on any of the listener's stations for 30 days.",
)
def add_tired_song(call: Call, req: TiredRequest) -> EmptyResponse:
    """Rest a track the listener has heard too often."""
    from airwave.core.radio import playlist

    listener = call.require_listener()
    with call.write() as db:
        playlist.add_tired(db, listener, req.track_token, call.now())
    return EmptyResponse()


# --- profile
# -----------------------------------------------------------------------------------------------


class ProfileRequest(RequestModel):
    webname: str | None = Field(None, max_length=80)


class ProfileResponse(ResponseModel):
    """A listener's profile (spec §7 listener/getProfile)."""

    webname: str
    display_name: str = Field(description="the name the listener chose, else their webname")
    bio: str
    station_count: int
    thumbs_up_count: int
    bookmark_count: int
    profile_private: bool
    date_created: Timestamp


def profile_response(profile: accounts.Profile) -> ProfileResponse:
    listener = profile.listener
    return ProfileResponse(
        webname=listener.webname,
        display_name=listener.display_name or listener.webname,
        bio=listener.bio or "",
        station_count=profile.station_count,
        thumbs_up_count=profile.thumbs_up_count,
        bookmark_count=profile.bookmark_count,
        profile_private=listener.profile_private,
        date_created=listener.created_at,
    )


@registry.endpoint(
    "listener/getProfile",
    request=ProfileRequest,
    response=ProfileResponse,
    errors=[ErrorCode.NOT_FOUND, ErrorCode.USER_NOT_AUTHORIZED],
    notes="""
    Without `webname` (or with the caller's own): the caller's profile, private or not. With another
    listener's `webname`: their profile when it is public; a private profile answers
    `USER_NOT_AUTHORIZED`; an unknown webname (and anonymous or suspended listeners) `NOT_FOUND`.
    `displayName` falls back to the webname when the listener has not chosen one.
    """,
)
def get_profile(call: Call, req: ProfileRequest) -> ProfileResponse:
    """A listener's profile: the caller's own or another listener's public one."""
    return profile_response(
        accounts.visible_profile(call.reader(), call.require_listener(), req.webname)
    )


class SetProfileRequest(RequestModel):
    display_name: str | None = Field(None, max_length=1024)
    bio: str | None = Field(None, max_length=65536)
    profile_private: bool | None = None


@registry.endpoint(
    "listener/setProfile",
    request=SetProfileRequest,
    response=ProfileResponse,
    writes=True,
    notes=f"""
    Changes only the fields given. `displayName`: at most {accounts.DISPLAY_NAME_MAX} characters,
    one line; an empty string (or null) removes it. `bio`: at most {accounts.BIO_MAX} characters,
    line breaks allowed; empty or null clears it. Both are trimmed; control characters are refused
    (`INVALID_REQUEST` naming the field). `profilePrivate: true` hides the profile from other
    listeners. Answers the caller's profile.
    """,
)
def set_profile(call: Call, req: SetProfileRequest) -> ProfileResponse:
    """Change the caller's display name, bio or profile privacy."""
    listener = call.require_listener()
    with call.write() as db:
        changes = {name: getattr(req, name) for name in req.model_fields_set}
        return profile_response(accounts.set_profile(db, listener.id, changes))


# --- settings and the explicit filter PIN
# ---------------------------------------------------------------------

_SETTINGS = {  # request field -> Listener column
    "explicit_content_filter_enabled": "explicit_filter",
    "high_quality_streaming_enabled": "high_quality_streaming",
    "email_opt_out": "email_opt_out",
    "artist_audio_messages_enabled": "artist_audio_messages",
    "zip_code": "zip_code",
    "birth_year": "birth_year",
    "gender": "gender",
    "email": "email",
}


class UpdateSettingsRequest(RequestModel):
    explicit_content_filter_enabled: bool | None = None
    high_quality_streaming_enabled: bool | None = None
    email_opt_out: bool | None = None
    artist_audio_messages_enabled: bool | None = None
    zip_code: str | None = Field(None, max_length=64)
    birth_year: int | None = None
    gender: str | None = Field(None, max_length=64)
    email: str | None = Field(None, max_length=320)
    pin: str | None = Field(None, max_length=64)


class SettingsResponse(ResponseModel):
    """All of the listener's settings."""

    explicit_content_filter_enabled: bool
    explicit_pin_set: bool = Field(description="a PIN guards turning the explicit filter off")
    high_quality_streaming_enabled: bool = Field(
        description="the listener's choice; effective only when available"
    )
    high_quality_streaming_available: bool = Field(
        description="the listener's tier includes high quality"
    )
    email_opt_out: bool
    artist_audio_messages_enabled: bool
    zip_code: str | None
    birth_year: int | None
    gender: str | None
    email: str | None = Field(description="where password reset mails go (an Airwave extension)")
    minor: bool


def settings_response(call: Call, listener: Listener) -> SettingsResponse:
    return SettingsResponse(
        explicit_content_filter_enabled=listener.explicit_filter,
        explicit_pin_set=listener.explicit_pin_hash is not None,
        high_quality_streaming_enabled=listener.high_quality_streaming,
        high_quality_streaming_available=call.settings.tier(listener.tier).high_quality,
        email_opt_out=listener.email_opt_out,
        artist_audio_messages_enabled=listener.artist_audio_messages,
        zip_code=listener.zip_code,
        birth_year=listener.birth_year,
        gender=listener.gender,
        email=listener.email,
        minor=accounts.is_minor(listener, call.now()),
    )


@registry.endpoint(
    "listener/updateSettings",
    request=UpdateSettingsRequest,
    response=SettingsResponse,
    writes=True,
    errors=[
        ErrorCode.ZIP_CODE_INVALID,
        ErrorCode.BIRTH_YEAR_INVALID,
        ErrorCode.BIRTH_YEAR_TOO_YOUNG,
        ErrorCode.INVALID_GENDER,
        ErrorCode.EXPLICIT_PIN_INCORRECT,
        ErrorCode.EXPLICIT_PIN_MALFORMED,
        ErrorCode.RATE_LIMITED,
    ],
    notes="""
    `{}` only reads the settings. Any subset of the fields changes just those; every field is
    checked before any is applied. `zipCode`, `birthYear`, `gender` and `email` take null (or "") to
    clear them; the rules are those of `listener/register` (`ZIP_CODE_INVALID`,
    `BIRTH_YEAR_INVALID`, `BIRTH_YEAR_TOO_YOUNG`, `INVALID_GENDER`). `email` is an Airwave
    extension: the address password reset mails go to (else the username, when it is an address);
    not an address: `INVALID_REQUEST`.

    Explicit filter: turning it **off** while a PIN is set (`listener/setExplicitPIN`) needs `pin`:
    missing or wrong `EXPLICIT_PIN_INCORRECT`, not 4 digits `EXPLICIT_PIN_MALFORMED`; after
    `login_free_failures` wrong PINs each further one doubles a delay during which the answer is
    `RATE_LIMITED` with `Retry-After`. Turning it on never needs the PIN. The filter applies from
    the next fragment.

    `highQualityStreamingEnabled: false` makes `mp3-hifi` requests deliver `mp3` (128 kbit/s) even
    when the tier includes high quality (`highQualityStreamingAvailable`); without it the choice is
    kept but has no effect until the tier allows high quality.
    """,
)
def update_settings(call: Call, req: UpdateSettingsRequest) -> SettingsResponse:
    """Read the listener's settings, or change any of them."""
    given = {
        _SETTINGS[name]: getattr(req, name) for name in req.model_fields_set if name in _SETTINGS
    }
    row = credentials.update_settings(call.services, call.require_listener(), given, req.pin)
    return settings_response(call, row)


class SetPinRequest(RequestModel):
    pin: str = Field(max_length=64)
    current_pin: str | None = Field(None, max_length=64)
    current_password: str | None = Field(None, max_length=1024)


@registry.endpoint(
    "listener/setExplicitPIN",
    request=SetPinRequest,
    response=EmptyResponse,
    writes=True,
    hashes=True,
    errors=[
        ErrorCode.EXPLICIT_PIN_MALFORMED,
        ErrorCode.EXPLICIT_PIN_INCORRECT,
        ErrorCode.INVALID_PASSWORD,
        ErrorCode.RATE_LIMITED,
    ],
    notes="""
    Sets the 4-digit PIN that guards turning the explicit filter off (stored hashed) and turns the
    filter on: a PIN exists to lock it. `pin` not 4 digits: `EXPLICIT_PIN_MALFORMED`.

    Changing an existing PIN needs proof: `currentPin` (missing or wrong: `EXPLICIT_PIN_INCORRECT`,
    wrong ones throttled as in `updateSettings`) or, for a forgotten PIN, the account's
    `currentPassword` (wrong: `INVALID_PASSWORD`, throttled like failed logins). A first PIN needs
    neither.
    """,
)
def set_explicit_pin(call: Call, req: SetPinRequest) -> EmptyResponse:
    """Lock the explicit filter with a PIN."""
    credentials.set_explicit_pin(
        call.services,
        call.require_listener(),
        req.pin,
        current_pin=req.current_pin,
        current_password=req.current_password,
        client=client_of(call),
    )
    return EmptyResponse()


# --- account changes
# --------------------------------------------------------------------------------------------


class UpdateAccountRequest(RequestModel):
    current_username: str = Field(max_length=256)
    current_password: str = Field(max_length=1024)
    new_username: str | None = Field(None, max_length=256)
    new_password: str | None = Field(None, max_length=1024)
    enable_explicit_content_filter: bool | None = None


@registry.endpoint(
    "listener/updateAccount",
    request=UpdateAccountRequest,
    response=ListenerObject,
    writes=True,
    hashes=True,
    errors=[
        ErrorCode.USER_NOT_AUTHORIZED,
        ErrorCode.INVALID_PASSWORD,
        ErrorCode.INVALID_USERNAME,
        ErrorCode.USERNAME_ALREADY_EXISTS,
        ErrorCode.RATE_LIMITED,
    ],
    notes="""
    Re-authentication first: `currentUsername` must be the caller's (compared like logins,
    case-insensitively; another name, existing or not: `USER_NOT_AUTHORIZED`, as the call would act
    on another account), and `currentPassword` the account's password (wrong: `INVALID_PASSWORD`,
    400, not `AUTH_INVALID_USERNAME_PASSWORD`, whose 401 clients take for a dead session). Wrong
    current passwords count as failed logins of that username and client address; past the login
    limits: `RATE_LIMITED` with `Retry-After`.

    Then, all checked before any is applied: `newUsername` (rules of `register`: `INVALID_USERNAME`,
    `USERNAME_ALREADY_EXISTS`; the webname stays), `newPassword` (strength rules:
    `INVALID_PASSWORD`), `enableExplicitContentFilter` (the account password outranks the explicit
    PIN, so no `pin` is needed).

    A new password ends every other session of the listener and retires outstanding password reset
    links. The answer is the login listener object of the caller's session: the same `authToken`
    keeps working, with a new session cookie (the previous cookie stops matching).
    """,
)
def update_account(call: Call, req: UpdateAccountRequest) -> ListenerObject:
    """Change username, password or explicit filter after re-entering the password."""
    assert call.session is not None and call.auth_token is not None
    signed_in = credentials.update_account(
        call.services,
        call.require_listener(),
        call.session,
        call.auth_token,
        current_username=req.current_username,
        current_password=req.current_password,
        new_username=req.new_username,
        new_password=req.new_password,
        explicit_filter=req.enable_explicit_content_filter,
        client=client_of(call),
    )
    return issue_listener_object(call, signed_in)


class DeleteListenerRequest(RequestModel):
    current_password: str = Field(max_length=1024)


@registry.endpoint(
    "listener/deleteListener",
    request=DeleteListenerRequest,
    response=EmptyResponse,
    writes=True,
    hashes=True,
    errors=[ErrorCode.INVALID_PASSWORD, ErrorCode.RATE_LIMITED],
    notes="""
    Deletes the caller's account and everything of theirs in one transaction: sessions, stations
    (seeds, shuffle choices), feedback, play history, skips, tired tracks, bookmarks, ad tokens,
    password reset tokens and the throttling records that name them. Operator-level aggregates (ad
    impressions per campaign and day) stay. `currentPassword` wrong: `INVALID_PASSWORD`, throttled
    like failed logins. The session cookie is cleared; every token of the account stops working.
    """,
)
def delete_listener(call: Call, req: DeleteListenerRequest) -> EmptyResponse:
    """Delete the caller's account and all its data."""
    credentials.delete_account(
        call.services, call.require_listener(), req.current_password, client_of(call)
    )
    call.clear_session_cookie()
    return EmptyResponse()


# --- password reset by mail
# -------------------------------------------------------------------------------------


class EmailPasswordRequest(RequestModel):
    username: str = Field(min_length=1, max_length=256)


@registry.endpoint(
    "listener/emailPassword",
    request=EmailPasswordRequest,
    response=EmptyResponse,
    auth=False,
    writes=True,
    errors=[ErrorCode.RATE_LIMITED],
    notes="""
    Always `{}` at once, whether or not the username exists and whether or not a mail goes out. When
    the account has an address (its `email` setting, else the username when it is an address) and
    the operator set `smtp_host`, a mail with a reset link `{public_url}/#/reset?token=TOKEN` (the
    request's own base URL without `public_url`) and the token itself is sent in the background. A
    token lives `password_reset_lifetime` seconds (default 3600), works once, and retires the
    account's earlier tokens.

    Requests are counted per username (`password_reset_limit` per `password_reset_window`, default 3
    per hour) and per client address (10 times that), for known and unknown names alike; past a
    limit the answer is `RATE_LIMITED` with `Retry-After`. Being counted by name rather than by
    account, the limit reveals nothing about which names exist, so it is answered openly rather than
    silently.
    """,
)
def email_password(call: Call, req: EmailPasswordRequest) -> EmptyResponse:
    """Mail a password reset link."""
    resets.mail_reset_link(call.services, req.username, call.client, call.base_url)
    return EmptyResponse()


class ResetTokenRequest(RequestModel):
    token: str = Field(min_length=1, max_length=256)


RESET_TOKEN_NOTES = """
An unknown token: `NOT_FOUND`. A token already used, replaced by a newer request, or older than
`password_reset_lifetime`: `CONTENT_HAS_EXPIRED` (ask for a new mail).
"""


@registry.endpoint(
    "listener/validatePasswordResetToken",
    request=ResetTokenRequest,
    response=EmptyResponse,
    auth=False,
    errors=[ErrorCode.CONTENT_HAS_EXPIRED],
    notes="`{}` when the token can still reset a password (check before asking for the new one)."
    + RESET_TOKEN_NOTES,
)
def validate_password_reset_token(call: Call, req: ResetTokenRequest) -> EmptyResponse:
    """Check a password reset token from a mail."""

    resets.check_token(call.reader(), call.now(), req.token)
    return EmptyResponse()


class ResetPasswordRequest(RequestModel):
    token: str = Field(min_length=1, max_length=256)
    new_password: str = Field(max_length=1024)


@registry.endpoint(
    "listener/resetPassword",
    request=ResetPasswordRequest,
    response=EmptyResponse,
    auth=False,
    writes=True,
    hashes=True,
    errors=[ErrorCode.CONTENT_HAS_EXPIRED, ErrorCode.INVALID_PASSWORD],
    notes="""
    Sets `newPassword` (strength rules of `register`: `INVALID_PASSWORD`, which leaves the token
    usable), spends the token (and any other outstanding one of the account), ends every session of
    the account and lifts the login throttling of its username. Log in afterwards.
    """
    + RESET_TOKEN_NOTES,
)
def reset_password(call: Call, req: ResetPasswordRequest) -> EmptyResponse:
    """Choose a new password with a reset token."""
    credentials.reset_password(call.services, req.token, req.new_password)
    return EmptyResponse()
