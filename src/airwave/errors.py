"""The error table of the API contract (spec §4): one definition, raised from any layer."""

from __future__ import annotations

from enum import Enum


class ErrorCode(Enum):
    """Each member is (errorCode, HTTP status, meaning); its name is the errorString."""

    INVALID_REQUEST = (0, 400, "the request could not be validated")
    READONLY_MODE = (1000, 503, "the server is in maintenance (read-only) mode and the call writes")
    AUTH_INVALID_TOKEN = (
        1001,
        401,
        "missing/unknown/expired auth token or mismatched session cookie",
    )
    AUTH_INVALID_USERNAME_PASSWORD = (1002, 401, "login failed")
    LISTENER_NOT_AUTHORIZED = (1003, 403, "the listener's tier does not include this feature")
    USER_NOT_AUTHORIZED = (1004, 403, "the object belongs to another listener")
    MAX_STATIONS_REACHED = (1005, 409, "station limit of the tier reached")
    STATION_DOES_NOT_EXIST = (1006, 404, "unknown or deleted stationId")
    CALL_NOT_ALLOWED = (1008, 403, "operation not allowed on this object")
    INVALID_USERNAME = (1011, 400, "registration/update: username not acceptable")
    INVALID_PASSWORD = (
        1012,
        400,
        "registration/update: password too weak, or wrong current password",
    )
    USERNAME_ALREADY_EXISTS = (1013, 409, "registration/update: the username is taken")
    EXPLICIT_PIN_INCORRECT = (1018, 403, "the explicit-content PIN does not match")
    EXPLICIT_PIN_MALFORMED = (1020, 400, "PIN is not 4 digits")
    ZIP_CODE_INVALID = (1024, 400, "the zip/postal code is not valid")
    BIRTH_YEAR_INVALID = (1025, 400, "the birth year is not valid")
    BIRTH_YEAR_TOO_YOUNG = (1026, 400, "the listener is too young to have an account")
    INVALID_GENDER = (1027, 400, "the gender is not one of the accepted values")
    PLAYLIST_EXCEEDED = (1039, 429, "too many fragment requests in a short time")
    INVALID_CSRF_TOKEN = (2000, 403, "X-CsrfToken header and csrftoken cookie missing or unequal")
    METHOD_NOT_ALLOWED = (2001, 405, "API calls are POST only")
    NOT_FOUND = (2002, 404, "unknown endpoint, version, or content")
    SERVER_ERROR = (2003, 500, "unexpected failure (logged with a request id)")
    RATE_LIMITED = (2004, 429, "throttled (login attempts, request rate)")
    STREAM_VIOLATION = (2005, 409, "another device of the account is the active player")
    STATION_LIMIT_REACHED = (2006, 429, "skip limit reached")
    STATION_CODE_INVALID = (
        2007,
        400,
        "stationCode/musicId/pandoraId does not name a seedable object",
    )
    THUMBPRINT_RADIO_NOT_ELIGIBLE = (2008, 409, "not enough thumbs-up to build Thumbprint Radio")
    PLAYLIST_END = (2009, 404, "the station has no playable track left")
    UNPLAYABLE_SHUFFLE_STATION = (2010, 409, "shuffle has no station selected")
    CONTENT_HAS_EXPIRED = (2011, 410, "audio URL or track token past its lifetime")
    LISTENER_SUSPENDED = (2012, 403, "account disabled by an administrator")
    COUNTRY_CODE_INVALID = (2013, 400, "the country code is not valid")
    PLAYLIST_VERSION_MISMATCH = (99000, 409, "v4 playlist edit against a stale version")
    PLAYLIST_BAD_RANGE = (99003, 400, "v4 playlist edit with an index out of range")
    INVALID_PANDORA_TYPE = (99022, 400, "a pandoraId of the wrong type for this endpoint")

    @property
    def code(self) -> int:
        return self.value[0]

    @property
    def http_status(self) -> int:
        return self.value[1]

    @property
    def meaning(self) -> str:
        return self.value[2]


class ApiError(Exception):
    """A failure the client is told about in the envelope of spec §4."""

    def __init__(
        self,
        error: ErrorCode,
        message: str | None = None,
        *,
        http_status: int | None = None,
        retry_after: int | None = None,
        allow: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.error = error
        self.message = message or error.meaning
        self.http_status = http_status or error.http_status
        # Seconds until trying again makes sense; the HTTP edge turns it into `Retry-After`.
        self.retry_after = None if retry_after is None else max(1, int(retry_after))
        self.allow = allow  # the methods a 405 names; the HTTP edge turns it into `Allow`
        self.headers = dict(headers or {})  # set only by HTTP byte serving (Content-Range of a 416)
        super().__init__(f"{error.name}: {self.message}")

    def envelope(self) -> dict[str, object]:
        return {
            "errorCode": self.error.code,
            "errorString": self.error.name,
            "message": self.message,
        }


def error_table() -> list[dict[str, object]]:
    """The table as meta/getEndpoints and the docs publish it."""
    return [
        {
            "errorCode": e.code,
            "errorString": e.name,
            "httpStatus": e.http_status,
            "meaning": e.meaning,
        }
        for e in ErrorCode
    ]
