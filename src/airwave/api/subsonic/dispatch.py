"""`/rest/NAME` and `/rest/NAME.view` for Subsonic and OpenSubsonic apps: parameters, credentials,
the envelope.

GET query and POST form bodies are merged (OpenSubsonic `formPost`). Every answer but a binary
one (audio, pictures) is the envelope with HTTP 200, failures included, as the spec has it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from airwave.api.http.headers import request_headers
from airwave.api.protocol import Call, new_call, read_body, request_id_of
from airwave.api.subsonic import envelope
from airwave.api.subsonic.envelope import (
    CONFLICTING_AUTH,
    GENERIC,
    INVALID_API_KEY,
    MISSING_PARAMETER,
    WRONG_CREDENTIALS,
    SubsonicError,
)
from airwave.core.accounts import app_passwords
from airwave.core.library import Library
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode

log = logging.getLogger("airwave.subsonic")
PREFIX = "/rest/"
_FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Routes:
    """The app's byte-serving routes binary answers hand over to (audio, pictures)."""

    audio: ASGIApp | None = None
    art: ASGIApp | None = None


def handing_over(app: ASGIApp | None, path: str) -> ASGIApp:
    """A binary answer: the request, re-addressed to `path`, served by `app` (/audio/, /art/)."""
    assert app is not None, "the dispatcher was made without this route"

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        method = "HEAD" if scope["method"] == "HEAD" else "GET"  # form POSTs too
        moved = {**scope, "method": method, "path": path, "raw_path": path.encode()}
        moved["query_string"] = b""
        await app(moved, receive, send)

    return serve


@dataclass
class SubsonicCall:
    """One Subsonic call: the REST edge's Call (listener, database) and its parameters."""

    call: Call
    params: dict[str, list[str]] = field(default_factory=dict)
    routes: Routes = field(default_factory=Routes)
    library: Library | None = None  # the server's library, when it scans one

    def text(self, name: str, default: str | None = None) -> str | None:
        values = self.params.get(name)
        return values[0] if values else default

    def required(self, name: str) -> str:
        value = self.text(name)
        if value is None or value == "":
            raise SubsonicError(MISSING_PARAMETER, f"required parameter {name!r} is missing")
        return value

    def texts(self, name: str) -> list[str]:
        return self.params.get(name, [])

    def number(self, name: str, default: int, *, low: int = 0, high: int = 2**31 - 1) -> int:
        value = self.text(name)
        if value is None or value == "":
            return default
        try:
            number = int(value)
        except ValueError:
            raise SubsonicError(GENERIC, f"{name} must be a whole number") from None
        return max(low, min(high, number))

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.text(name)
        return default if value is None else value.lower() == "true"


Payload = dict[str, Any]


@dataclass(frozen=True)
class Method:
    handler: Callable[[SubsonicCall], Any]
    writes: bool = False


METHODS: dict[str, Method] = {}


def method(*names: str, writes: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a handler under one or more method names."""

    def register(handler: Callable[[SubsonicCall], Any]) -> Callable[..., Any]:
        for name in names:
            METHODS[name] = Method(handler, writes)
        return handler

    return register


def credentials_of(params: dict[str, list[str]]) -> app_passwords.SubsonicCredentials:
    """The credentials a request brought, checked for completeness and conflicts (10, 43)."""

    def one(name: str) -> str | None:
        values = params.get(name)
        return values[0] if values and values[0] != "" else None

    username, password, token, salt = one("u"), one("p"), one("t"), one("s")
    api_key = one("apiKey")
    if api_key is not None:
        if username or password or token:
            raise SubsonicError(CONFLICTING_AUTH, "apiKey goes without u, p and t")
        return app_passwords.SubsonicCredentials(api_key=api_key)
    if username is None:
        raise SubsonicError(MISSING_PARAMETER, "required parameter 'u' is missing")
    if password is not None and token is not None:
        raise SubsonicError(CONFLICTING_AUTH, "send either p or t and s, not both")
    if token is not None:
        if salt is None:
            raise SubsonicError(MISSING_PARAMETER, "required parameter 's' is missing")
        return app_passwords.SubsonicCredentials(username=username, token=token, salt=salt)
    if password is None:
        raise SubsonicError(MISSING_PARAMETER, "required parameter 'p' (or 't' and 's') is missing")
    if password.startswith("enc:"):
        try:
            password = bytes.fromhex(password[4:]).decode()
        except ValueError:
            raise SubsonicError(WRONG_CREDENTIALS, "wrong username or password") from None
    return app_passwords.SubsonicCredentials(username=username, password=password)


class SubsonicDispatcher:
    """ASGI app for /rest/*."""

    def __init__(
        self, services: Services, routes: Routes | None = None, library: Library | None = None
    ) -> None:
        self.services = services
        self.routes = routes or Routes()
        self.library = library

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        fmt = "xml"
        try:
            params = await self._params(scope, receive)
            fmt = "json" if (params.get("f") or [""])[0] == "json" else "xml"
            result = await self._dispatch(scope, params)
            if callable(result):  # a binary answer sends itself
                if await self._hand_over(result, scope, receive, send):
                    return
                raise SubsonicError(GENERIC, "the answer could not be sent")
            body, content_type = envelope.ok(result or {}, fmt)
        except SubsonicError as error:
            body, content_type = envelope.failed(error, fmt)
        except ApiError as error:
            body, content_type = envelope.failed(envelope.from_api_error(error), fmt)
        except Exception as exc:
            busy = self.services.busy_error(exc)
            if busy is None:
                log.exception("unhandled error", extra={"request_id": request_id_of(scope)})
            message = busy.message if busy else f"internal error; request id {request_id_of(scope)}"
            body, content_type = envelope.failed(SubsonicError(GENERIC, message), fmt)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send(
            {"type": "http.response.body", "body": body if scope["method"] != "HEAD" else b""}
        )

    async def _hand_over(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> bool:
        """Let a byte-serving route answer; False when it failed before sending anything (the
        envelope then tells why), True otherwise (a failure midway is only logged)."""
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await app(scope, receive, tracked)
        except Exception:
            log.exception("binary answer failed", extra={"request_id": request_id_of(scope)})
            return started
        return True

    async def _params(self, scope: Scope, receive: Receive) -> dict[str, list[str]]:
        params: dict[str, list[str]] = {}
        query = scope.get("query_string", b"").decode("latin-1")
        pairs = parse_qsl(query, keep_blank_values=True, encoding="utf-8")
        if scope["method"] == "POST":
            headers = request_headers(scope)
            body = await read_body(receive, headers.get("content-length"))
            content_type = (headers.get("content-type") or "").split(";")[0].strip().lower()
            if body and content_type == _FORM:
                pairs += parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)
        for key, value in pairs:
            params.setdefault(key, []).append(value)
        return params

    async def _dispatch(self, scope: Scope, params: dict[str, list[str]]) -> Any:  # noqa: ANN401
        if scope["method"] not in ("GET", "POST", "HEAD"):
            raise SubsonicError(GENERIC, "Subsonic calls are GET or POST")
        name = scope["path"][len(PREFIX) :]
        name = name.removesuffix(".view")
        found = METHODS.get(name)
        if found is None:
            raise SubsonicError(GENERIC, f"method {name[:64]!r} is not offered by this server")
        if found.writes and self.services.settings.readonly_mode:
            raise ApiError(ErrorCode.READONLY_MODE, "the server is in read-only maintenance mode")
        credentials = credentials_of(params)
        call = new_call(self.services, scope, request_headers(scope))
        subsonic = SubsonicCall(call, params, self.routes, self.library)
        try:
            return await anyio.to_thread.run_sync(self._execute, found, subsonic, credentials)
        finally:
            if call.listener is not None and "state" in scope:
                scope["state"]["listener_id"] = call.listener.id

    def _execute(
        self,
        found: Method,
        subsonic: SubsonicCall,
        credentials: app_passwords.SubsonicCredentials,
    ) -> Any:  # noqa: ANN401
        call = subsonic.call
        try:
            call.listener = app_passwords.authenticate(self.services, credentials, call.client)
        except ApiError as error:
            if credentials.api_key is not None and error.error is (
                ErrorCode.AUTH_INVALID_USERNAME_PASSWORD
            ):
                raise SubsonicError(INVALID_API_KEY, "invalid API key") from None
            raise
        with self.services.database.read() as db:
            call.db = db
            try:
                return found.handler(subsonic)
            finally:
                call.db = None
