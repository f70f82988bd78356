"""`POST /services/json/?method=..&partner_id=..&auth_token=..&user_id=..`: the envelope.

Bodies are Blowfish-encrypted hex (plain JSON for auth.partnerLogin), answers plain JSON, always
HTTP 200: `{"stat": "ok", "result": {...}}` or `{"stat": "fail", "code": N, "message": "..."}`
with the record's codes (clients read the HTTP status first and give up on anything else).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import anyio
import orjson
from starlette.types import Receive, Scope, Send

from airwave.api.http.headers import request_headers
from airwave.api.protocol import Call, new_call, read_body, request_id_of, send_json
from airwave.api.tuner import crypto
from airwave.config import TunerPartner
from airwave.core.accounts import sessions
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode

log = logging.getLogger("airwave.tuner")

# the record's codes (json/errorcodes)
INTERNAL = 0
READ_ONLY = 1000
MISSING_METHOD = 2
MISSING_AUTH_TOKEN = 3
MISSING_PARTNER_ID = 4
PARAMETER_TYPE_MISMATCH = 8
PARAMETER_MISSING = 9
PARAMETER_VALUE_INVALID = 10
UNKNOWN_METHOD = 14
INVALID_AUTH_TOKEN = 1001
INVALID_LOGIN = 1002
LISTENER_NOT_AUTHORIZED = 1003
CALL_NOT_ALLOWED = 1008
PARTNER_NOT_AUTHORIZED = 1010

# REST errors the record has no code of their own for; the rest keep theirs (1000-1039)
_CODES = {
    ErrorCode.INVALID_REQUEST: PARAMETER_VALUE_INVALID,
    ErrorCode.NOT_FOUND: PARAMETER_VALUE_INVALID,
    ErrorCode.STATION_CODE_INVALID: PARAMETER_VALUE_INVALID,
    ErrorCode.INVALID_PANDORA_TYPE: PARAMETER_VALUE_INVALID,
    ErrorCode.CONTENT_HAS_EXPIRED: PARAMETER_VALUE_INVALID,
    ErrorCode.STREAM_VIOLATION: CALL_NOT_ALLOWED,
    ErrorCode.STATION_LIMIT_REACHED: CALL_NOT_ALLOWED,
    ErrorCode.THUMBPRINT_RADIO_NOT_ELIGIBLE: CALL_NOT_ALLOWED,
    ErrorCode.UNPLAYABLE_SHUFFLE_STATION: CALL_NOT_ALLOWED,
    ErrorCode.LISTENER_SUSPENDED: LISTENER_NOT_AUTHORIZED,
    ErrorCode.COUNTRY_CODE_INVALID: 1027,
    ErrorCode.RATE_LIMITED: INTERNAL,
    ErrorCode.PLAYLIST_END: INTERNAL,
    ErrorCode.SERVER_ERROR: INTERNAL,
}


class TunerError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def tuner_code(error: ErrorCode) -> int:
    return _CODES.get(error, error.code if 1000 <= error.code < 2000 else INTERNAL)


@dataclass
class TunerCall:
    """One tuner call: the REST edge's Call (listener, session, database) and what the tuner
    adds."""

    call: Call
    partner: TunerPartner | None
    partner_id: int | None
    body: dict[str, Any]

    def text(self, name: str, *, required: bool = True, limit: int = 1024) -> str | None:
        value = self.body.get(name)
        if value is None:
            if required:
                raise TunerError(PARAMETER_MISSING, f"{name} is required")
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise TunerError(PARAMETER_TYPE_MISMATCH, f"{name} must be a string")
        if len(value) > limit:
            raise TunerError(PARAMETER_VALUE_INVALID, f"{name} is longer than {limit} characters")
        return value

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.body.get(name, default)
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if not isinstance(value, bool):
            raise TunerError(PARAMETER_TYPE_MISMATCH, f"{name} must be a boolean")
        return value


@dataclass(frozen=True)
class Method:
    handler: Callable[[TunerCall], dict[str, Any] | None]
    auth: bool = True  # needs a user auth token
    writes: bool = False


METHODS: dict[str, Method] = {}
# listed by the public record, not served: answered with a clear refusal, never a crash
UNSUPPORTED = {
    "accessory.accessoryConnect",
    "auth.getAdMetadata",
    "auth.partnerAdminLogin",
    "device.associateDeviceForCasting",
    "device.createDevice",
    "device.disassociateCastingDevice",
    "device.disassociateDevice",
    "music.publishSongShare",
    "music.shareMusic",
    "station.publishStationShare",
    "station.shareStation",
    "user.accountMessageDismissed",
    "user.acknowledgeSubscriptionExpiration",
    "user.associateDevice",
    "user.authorizeFacebook",
    "user.disconnectFacebook",
    "user.facebookAuthFailed",
    "user.getFacebookInfo",
    "user.purchaseAmazonPayToPlay",
    "user.purchaseAmazonSubscription",
    "user.purchaseGooglePayToPlay",
    "user.purchaseGoogleSubscription",
    "user.purchaseItunesSubscription",
    "user.setAwareOfProfile",
    "user.startComplimentaryTrial",
    "user.createUser",
    "user.validateUsername",
    "user.emailPassword",
}


def method(
    name: str, *, auth: bool = True, writes: bool = False
) -> Callable[[Callable[[TunerCall], dict[str, Any] | None]], Callable[..., Any]]:
    def register(handler: Callable[[TunerCall], dict[str, Any] | None]) -> Callable[..., Any]:
        METHODS[name] = Method(handler, auth, writes)
        return handler

    return register


class TunerDispatcher:
    """ASGI app for /services/json/."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            result = await self._dispatch(scope, receive)
            answer: dict[str, Any] = {"stat": "ok", "result": result if result is not None else {}}
        except TunerError as error:
            answer = {"stat": "fail", "code": error.code, "message": error.message}
        except ApiError as error:
            answer = {"stat": "fail", "code": tuner_code(error.error), "message": error.message}
        except Exception as exc:
            busy = self.services.busy_error(exc)
            if busy is None:
                log.exception("unhandled error", extra={"request_id": request_id_of(scope)})
            message = busy.message if busy else f"internal error; request id {request_id_of(scope)}"
            answer = {"stat": "fail", "code": INTERNAL, "message": message}
        await send_json(send, 200, orjson.dumps(answer))

    async def _dispatch(self, scope: Scope, receive: Receive) -> dict[str, Any] | None:
        settings = self.services.settings
        if not settings.tuner_enabled:
            raise TunerError(CALL_NOT_ALLOWED, "the tuner interface is turned off on this server")
        if scope["method"] != "POST":
            raise TunerError(PARAMETER_VALUE_INVALID, "tuner calls are POST")
        query = {
            k: v[0]
            for k, v in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()
            if v
        }
        name = query.get("method")
        if not name:
            raise TunerError(MISSING_METHOD, "the method URL parameter is required")
        found = METHODS.get(name)
        if found is None:
            if name in UNSUPPORTED:
                raise TunerError(CALL_NOT_ALLOWED, f"{name[:64]} is not offered by this server")
            raise TunerError(UNKNOWN_METHOD, f"unknown method {name[:64]!r}")
        if found.writes and settings.readonly_mode:
            raise TunerError(READ_ONLY, "the server is in read-only maintenance mode")
        headers = request_headers(scope)
        raw = await read_body(receive, headers.get("content-length"))
        partner, partner_id = None, None
        if name == "auth.partnerLogin":
            plain = raw
        else:
            partner_id, partner = self._partner(query.get("partner_id"))
            try:
                plain = crypto.decrypt_body(raw, partner.encrypt_key)
            except crypto.Undecryptable as exc:
                raise TunerError(
                    PARAMETER_VALUE_INVALID,
                    f"the body is not encrypted with the partner key: {exc}",
                ) from None
        try:
            body = orjson.loads(plain) if plain.strip() else {}
        except orjson.JSONDecodeError:
            raise TunerError(PARAMETER_VALUE_INVALID, "the body is not JSON") from None
        if not isinstance(body, dict):
            raise TunerError(PARAMETER_VALUE_INVALID, "the body must be a JSON object")
        call = new_call(self.services, scope, headers)
        token = query.get("auth_token") or body.get("userAuthToken")
        tuner = TunerCall(call, partner, partner_id, body)
        try:
            return await anyio.to_thread.run_sync(self._execute, found, tuner, token, query)
        finally:
            if call.listener is not None and "state" in scope:
                scope["state"]["listener_id"] = call.listener.id

    def _partner(self, value: str | None) -> tuple[int, TunerPartner]:
        if not value:
            raise TunerError(MISSING_PARTNER_ID, "the partner_id URL parameter is required")
        partners = self.services.settings.tuner_partners
        if not value.isdigit() or not 1 <= int(value) <= len(partners):
            raise TunerError(PARTNER_NOT_AUTHORIZED, "unknown partner_id")
        return int(value), partners[int(value) - 1]

    def _execute(
        self, found: Method, tuner: TunerCall, token: Any, query: dict[str, str]
    ) -> dict[str, Any] | None:
        call = tuner.call
        with self.services.database.read() as db:
            call.db = db
            try:
                if found.auth:
                    if not isinstance(token, str) or not token:
                        raise TunerError(MISSING_AUTH_TOKEN, "log in first (auth_token)")
                    now = call.now()
                    auth = sessions.authenticate(db, now, token, None)
                    call.listener, call.session = auth.listener, auth.session
                    user_id = query.get("user_id")
                    if user_id and user_id != str(auth.listener.id):
                        raise TunerError(INVALID_AUTH_TOKEN, "user_id does not match auth_token")
                    if auth.needs_touch:
                        with self.services.database.write() as writer:
                            sessions.touch(writer, auth.session, now)
                    call.auth_token = token
                return found.handler(tuner)
            finally:
                call.db = None
