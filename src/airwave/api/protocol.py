"""The API edge of spec §1-4: POST+JSON transport, CSRF, auth token, errors as one envelope."""

from __future__ import annotations

import hmac
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import anyio.to_thread
import orjson
from pydantic import BaseModel, ValidationError
from starlette.requests import cookie_parser
from starlette.types import Receive, Scope, Send

from airwave.api.http.headers import request_headers
from airwave.api.registry import Endpoint, Registry
from airwave.config import Settings
from airwave.core.accounts import sessions
from airwave.core.entities import AuthSession, Listener, Session
from airwave.core.services import Services, WouldBlock
from airwave.errors import ApiError, ErrorCode

log = logging.getLogger("airwave.api")

MAX_BODY = 1024 * 1024
WORKER_THREADS = (
    8  # handlers running at once: more only adds GIL contention; the pool is sized above this
)
# Password hashing handlers (Argon2: 4 lanes in parallel, 64 MiB, ~0.2 s each) run in a pool of
# their own, about one per 4 cores, so a burst of logins or registrations never makes cheap calls
# queue behind it.
HASHING_THREADS = max(1, (os.cpu_count() or 1) // 4)
# Writing handlers on SQLite run one at a time per process: the database takes one writer
# anyway, and a second thread of the process preparing its work meanwhile (getFragment chooses
# its tracks on a read snapshot) only fights the first for the GIL. With `--workers`, one
# process prepares while another writes. A call waits for its turn at most as long as for the
# database's lock (database_busy_timeout), then answers 503 READONLY_MODE like a lock wait.
# PostgreSQL writes of different listeners run at once: there, writing calls take no turns.
SQLITE_WRITING_THREADS = 1
# A quick endpoint's call that took more CPU time than this on the event loop held every other
# connection up: after SLOW_STRIKES such calls in a row, the same token's calls of it run in a
# worker thread (remembered for at most SLOW_ENTRIES tokens). After SLOW_RETRY seconds one of
# them tries the loop again: quick, and the token's calls are back on the loop; slow, and the
# wait doubles, up to SLOW_MEMORY. So a long station list costs the loop a few slow calls in
# minutes, while a passing hiccup (a server's first calls opening its connections) sends a token
# to the threads for a moment. CPU time, not wall-clock time: a machine that pauses the process
# (a busy host, a VM's neighbours, worker threads holding the interpreter's lock) makes no call
# slow. On PostgreSQL a call also waits for the database with the loop held, so time off the CPU
# past QUICK_WAIT_BUDGET counts as slow too (a read past store.db.LOOP_STATEMENT_MS gives up, and
# the call runs in a worker thread at once), less the time the thread was ready to run but waited
# for a processor (a busy host; the kernel counts it: `_waited_for_cpu`), which no worker thread
# would spare the loop. Under a load that saturated the loop, its calls waited off the CPU less
# than 1 ms but for 4 in 1,000, and 13 ms at most in 57,000. Measured on a 2-core VM under one
# token's load: a wall-clock budget there sent half of the calls to the threads, where each costs
# twice the CPU, and even a call's CPU time jumps past the budget now and then for two or three
# calls in a row (a VM's hiccup), hence three strikes and a short first wait. The thread's CPU
# clock is a system call, dear on some VMs: it is read a second time only for a call whose
# wall-clock time is over the budget, as neither of its times can be otherwise (so is the
# processor wait, read on PostgreSQL only, from a file kept open: ~1 us).
QUICK_BUDGET = 0.005
QUICK_WAIT_BUDGET = 0.015
SLOW_STRIKES = 3
SLOW_RETRY = 0.5
SLOW_MEMORY = 300.0
SLOW_ENTRIES = 4096
TOUCH_HANDOFF = 5.0  # seconds: see ApiDispatcher._touch
SESSION_COOKIE = "airwave_session"
# signed proof of past successful logins here (core/accounts/throttle.py)
DEVICE_COOKIE = "airwave_device"
CSRF_COOKIE = "csrftoken"
# "v5beta" is the record's name for some v5 endpoints: the same version here
_API_PATH = re.compile(
    r"/api/v([1-9][0-9]{0,3})(?:beta)?/([A-Za-z]+/[A-Za-z][A-Za-z0-9]*)", re.ASCII
)
_JSON_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]


@dataclass
class Call:
    """What a handler knows about the call it serves; no HTTP objects."""

    services: Services
    listener: Listener | None
    session: AuthSession | None
    client: str | None
    secure: bool
    user_agent: str | None
    request_id: str
    set_cookies: list[str] = field(default_factory=list)
    db: Session | None = None  # the call's read-only session, shared with authentication
    base_url: str = ""  # how the client reaches this server, for absolute URLs in responses
    auth_token: str | None = None  # the X-AuthToken the call was authenticated with
    device_cookie: str | None = None  # the device cookie the client sent, if any

    @property
    def settings(self) -> Settings:
        return self.services.settings

    def now(self) -> datetime:
        return self.services.clock.now()

    def require_listener(self) -> Listener:
        assert self.listener is not None, "endpoint declared without auth"
        return self.listener

    def reader(self) -> Session:
        """Read-only database session of this call (writes go through services.database.write())."""
        assert self.db is not None, "only available while the handler runs"
        return self.db

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A write transaction; afterwards this call's reads see what it wrote (a fresh read
        snapshot)."""
        if self.db is not None:
            # ends the read transaction before the wait for the write lock, and so that this
            # call's reads afterwards see what it wrote; loaded objects stay usable (no expiry)
            self.db.commit()
        with self.services.database.write() as db:
            yield db

    def start_session_cookie(self, value: str, max_age: int | None) -> None:
        self.set_cookies.append(
            cookie_header(
                SESSION_COOKIE, value, secure=self.secure, http_only=True, max_age=max_age
            )
        )

    def set_device_cookie(self, value: str) -> None:
        """Remember this device's successful logins: long-lived, HttpOnly, Secure over HTTPS."""
        lifetime = self.settings.device_cookie_lifetime
        self.set_cookies.append(
            cookie_header(
                DEVICE_COOKIE, value, secure=self.secure, http_only=True, max_age=lifetime
            )
        )

    def clear_session_cookie(self) -> None:
        self.set_cookies.append(
            cookie_header(SESSION_COOKIE, "", secure=self.secure, http_only=True, max_age=0)
        )


def cookie_header(
    name: str, value: str, *, secure: bool, http_only: bool, max_age: int | None = None
) -> str:
    parts = [f"{name}={value}", "Path=/", "SameSite=Lax"]
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    if http_only:
        parts.append("HttpOnly")
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


async def send_json(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] = ()
) -> None:  # type: ignore[assignment]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*_JSON_HEADERS, (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def send_error(send: Send, error: ApiError) -> None:
    headers = []
    if error.retry_after is not None:
        headers.append((b"retry-after", str(error.retry_after).encode()))
    if error.allow is not None:
        headers.append((b"allow", error.allow.encode()))
    headers += [
        (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in error.headers.items()
    ]
    await send_json(send, error.http_status, orjson.dumps(error.envelope()), headers)


def request_id_of(scope: Scope) -> str:
    return scope.get("state", {}).get("request_id", "-")


class ApiDispatcher:
    """ASGI app for /api/...: every failure leaves here as the §4 envelope."""

    def __init__(self, services: Services, registry: Registry) -> None:
        self.services = services
        self.registry = registry
        self._limiter: anyio.CapacityLimiter | None = None
        self._hashing: anyio.CapacityLimiter | None = None
        self._writing: anyio.Semaphore | None = None  # SQLite: the writing calls' turn
        # (endpoint, token) -> quick calls in a row past QUICK_BUDGET, when the last ended
        self._slow: dict[tuple[str, str | None], tuple[int, float]] = {}
        # session id -> (when, by which request) a call began to record its activity (_touch)
        self._touching: dict[int, tuple[float, str]] = {}
        self._touching_lock = threading.Lock()  # worker threads claim the write too

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._dispatch(scope, receive, send)
        except ApiError as error:
            await send_error(send, error)
        except Exception as exc:
            busy = self.services.busy_error(exc)
            if busy is not None:
                log.warning("database busy", extra={"request_id": request_id_of(scope)})
                await send_error(send, busy)
                return
            log.exception("unhandled error", extra={"request_id": request_id_of(scope)})
            await send_error(
                send,
                ApiError(
                    ErrorCode.SERVER_ERROR, f"internal error; request id {request_id_of(scope)}"
                ),
            )

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            raise ApiError(
                ErrorCode.METHOD_NOT_ALLOWED,
                f"{scope['method']} is not allowed; API calls are POST with a JSON body",
                allow="POST",
            )
        endpoint = self._route(scope["path"])
        headers = request_headers(scope)
        cookies = cookie_parser(headers.get("cookie", ""))
        _check_csrf(headers.get("x-csrftoken"), cookies.get(CSRF_COOKIE))
        if endpoint.enabled is not None and not endpoint.enabled(self.services.settings):
            raise ApiError(
                ErrorCode.CALL_NOT_ALLOWED, f"{endpoint.path} is disabled on this server"
            )
        if endpoint.writes and self.services.settings.readonly_mode:
            raise ApiError(ErrorCode.READONLY_MODE, "the server is in read-only maintenance mode")
        body = await read_body(receive, headers.get("content-length"))
        _check_content_type(headers.get("content-type"), body)
        token, session_cookie = headers.get("x-authtoken"), cookies.get(SESSION_COOKIE)
        device = cookies.get(DEVICE_COOKIE)
        result: bytes | None = None
        if endpoint.quick:
            call = new_call(self.services, scope, headers, device)
            result = self._run_quick(endpoint, call, body, token, session_cookie)
        if result is None:
            call = new_call(self.services, scope, headers, device)
            if self._limiter is None or self._hashing is None:
                self._limiter = anyio.CapacityLimiter(WORKER_THREADS)
                self._hashing = anyio.CapacityLimiter(HASHING_THREADS)
                if self.services.database.is_sqlite:
                    self._writing = anyio.Semaphore(SQLITE_WRITING_THREADS)
            gate = self._writing if endpoint.writes and not endpoint.hashes else None
            gate_held = False
            if gate is not None:
                # a write waits for its turn no longer than for the database's lock itself
                with anyio.move_on_after(self.services.settings.database_busy_timeout):
                    await gate.acquire()
                    gate_held = True
                if not gate_held:
                    raise ApiError(
                        ErrorCode.READONLY_MODE,
                        "the server is busy with other writes; try again in a moment",
                        retry_after=2,
                    )
            try:
                result = await anyio.to_thread.run_sync(
                    self._execute,
                    endpoint,
                    call,
                    body,
                    token,
                    session_cookie,
                    limiter=self._hashing if endpoint.hashes else self._limiter,
                )
            finally:
                if gate is not None:
                    gate.release()
        if call.listener is not None and "state" in scope:
            scope["state"]["listener_id"] = call.listener.id
        extra = [(b"set-cookie", c.encode("latin-1")) for c in call.set_cookies]
        await send_json(send, 200, result, extra)

    def _run_quick(
        self,
        endpoint: Endpoint,
        call: Call,
        body: bytes,
        token: str | None,
        session_cookie: str | None,
    ) -> bytes | None:
        """A quick endpoint's call on the event loop: no thread hop, no lock handed between
        threads. None when it has to run in a worker thread instead: it wanted to write (the
        session's activity stamp, once a minute), a PostgreSQL read of it gave up (a lock held, a
        server away: store.db.LOOP_STATEMENT_MS), or this token's last calls of it each took more
        than QUICK_BUDGET of CPU time, or on PostgreSQL waited longer than QUICK_WAIT_BUDGET (a
        long station list, a slow database; one or two slow calls, such as a process's first,
        are not enough; see SLOW_STRIKES and SLOW_RETRY)."""
        key = (endpoint.path, token)
        strikes, since = self._slow.get(key, (0, 0.0))
        if strikes >= SLOW_STRIKES:
            doubled = min(strikes - SLOW_STRIKES, 16)
            if time.monotonic() - since < min(SLOW_MEMORY, SLOW_RETRY * 2**doubled):
                return None
            # this call tries the loop again; if it is slow too, the next wait is twice as long
        network = self.services.reads_wait_on_network
        # the clocks read in this order, at the start and at the end, so that a wait for the
        # processor at a read's return (where the kernel preempts) counts in the wall-clock time
        # and in no other, never in the processor wait alone: such a call is only more likely
        # to count as slow
        started = time.perf_counter()
        cpu_started = time.thread_time()
        queued_started = _waited_for_cpu() if network else 0.0
        try:
            with self.services.reads_only():
                return self._execute(endpoint, call, body, token, session_cookie, on_loop=True)
        except WouldBlock:
            return None
        finally:
            slow = False
            if time.perf_counter() - started > QUICK_BUDGET:
                queued = _waited_for_cpu() - queued_started if network else 0.0
                cpu = time.thread_time() - cpu_started
                wall = time.perf_counter() - started
                slow = cpu > QUICK_BUDGET or (network and wall - cpu - queued > QUICK_WAIT_BUDGET)
            if slow:
                if len(self._slow) >= SLOW_ENTRIES:
                    del self._slow[next(iter(self._slow))]
                self._slow[key] = (strikes + 1, time.monotonic())
            elif strikes:
                self._slow.pop(key, None)

    def _route(self, path: str) -> Endpoint:
        match = _API_PATH.fullmatch(path)
        endpoint = self.registry.resolve(int(match.group(1)), match.group(2)) if match else None
        if endpoint is None:
            raise ApiError(ErrorCode.NOT_FOUND, f"no API endpoint at {path[:200]}")
        return endpoint

    def _execute(
        self,
        endpoint: Endpoint,
        call: Call,
        body: bytes,
        token: str | None,
        session_cookie: str | None,
        on_loop: bool = False,
    ) -> bytes:
        """Authenticate, validate, call the handler, encode: in a worker thread, or for a quick
        call on the event loop (`on_loop`, inside reads_only())."""
        database = self.services.database
        with database.read() as db:
            call.db = db
            try:
                if endpoint.auth:
                    now = call.now()
                    auth = sessions.authenticate(db, now, token, session_cookie)
                    # known before the touch: a touch failing beside a deletion is told apart below
                    call.listener, call.session = auth.listener, auth.session
                    if auth.needs_touch:
                        self._touch(auth.session, now, on_loop, call.request_id)
                    call.auth_token = token
                request = parse_request(endpoint.request, body)
                response = endpoint.handler(call, request)
            except Exception:
                # The listener was deleted (or logged out) while the call ran: whatever broke, the
                # answer is the one the next call would get.
                if call.session is not None and not self._session_alive(call.session):
                    raise ApiError(
                        ErrorCode.AUTH_INVALID_TOKEN, "the session ended while the call ran"
                    ) from None
                raise
            finally:
                call.db = None
        if isinstance(response, BaseModel):
            return response.__pydantic_serializer__.to_json(response, by_alias=True)
        return orjson.dumps(response)

    def _touch(self, session: AuthSession, now: datetime, on_loop: bool, request: str) -> None:
        """Record the session's activity (once a minute: sessions.TOUCH_INTERVAL). A write: on
        the event loop the call goes to a worker thread to do it (WouldBlock). The session's
        other calls meanwhile, on the loop or in worker threads (a burst of a token whose quick
        calls run slow, writing calls), leave the write to that one, for up to TOUCH_HANDOFF
        seconds; otherwise a burst of them would all write it. `request` tells the call that
        claimed the write, come back in a worker thread to do it, from the others."""
        with self._touching_lock:
            claimed = self._touching.get(session.id)
            if (
                claimed is not None
                and claimed[1] != request
                and time.monotonic() - claimed[0] < TOUCH_HANDOFF
            ):
                return
            if len(self._touching) >= SLOW_ENTRIES:
                self._touching.clear()
            self._touching[session.id] = (time.monotonic(), request)
        if on_loop:
            raise WouldBlock("the session's activity is written in a worker thread")
        try:
            with self.services.database.write() as writer:
                sessions.touch(writer, session, now)
        finally:
            with self._touching_lock:
                if self._touching.get(session.id, (0.0, ""))[1] == request:
                    del self._touching[session.id]

    def _session_alive(self, session: AuthSession) -> bool:
        """Whether the session still exists now (not in the call's snapshot), deletions settled."""
        return sessions.still_exists(self.services.database, session.id, session.listener_id)


_SCHEDSTAT = threading.local()  # per thread: its /proc/thread-self/schedstat, kept open


def _waited_for_cpu() -> float:
    """Seconds this thread has spent ready to run but waiting for a processor (the second figure
    of Linux's /proc/thread-self/schedstat); 0.0 always where the kernel does not tell it."""
    fd: int | None = getattr(_SCHEDSTAT, "fd", None)
    if fd is None:
        try:
            fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            fd = -1
        _SCHEDSTAT.fd = fd
    if fd < 0:
        return 0.0
    try:
        return int(os.pread(fd, 128, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        os.close(fd)
        _SCHEDSTAT.fd = -1
        return 0.0


def _forget_schedstat() -> None:
    """In a forked child: the file kept open names the parent's thread."""
    fd = _SCHEDSTAT.__dict__.pop("fd", -1)
    if fd >= 0:
        os.close(fd)


os.register_at_fork(after_in_child=_forget_schedstat)


def new_call(
    services: Services, scope: Scope, headers: dict[str, str], device_cookie: str | None = None
) -> Call:
    """A call not yet authenticated: who is calling, over what, reached at which base URL."""
    client = scope.get("client")
    return Call(
        services=services,
        listener=None,
        session=None,
        client=client[0] if client else None,
        secure=scope.get("scheme") == "https",
        user_agent=headers.get("user-agent"),
        request_id=request_id_of(scope),
        base_url=(services.settings.public_url or "").rstrip("/") or _base_url(scope, headers),
        device_cookie=device_cookie,
    )


def _base_url(scope: Scope, headers: dict[str, str]) -> str:
    host = headers.get("host")
    if not host or any(c in host for c in "/\\ @?#"):
        server = scope.get("server") or ("127.0.0.1", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


def _check_csrf(header: str | None, cookie: str | None) -> None:
    if not header or not cookie:
        raise ApiError(
            ErrorCode.INVALID_CSRF_TOKEN,
            "send the csrftoken cookie and an X-CsrfToken header with the same value (HEAD "
            "/ sets the cookie)",
        )
    if not hmac.compare_digest(header.encode("latin-1"), cookie.encode("latin-1")):
        raise ApiError(
            ErrorCode.INVALID_CSRF_TOKEN, "X-CsrfToken header does not match the csrftoken cookie"
        )


def _check_content_type(content_type: str | None, body: bytes) -> None:
    if content_type is None:
        if not body.strip():
            return  # an empty body counts as {}
        raise ApiError(ErrorCode.INVALID_REQUEST, "Content-Type must be application/json")
    media = content_type.split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise ApiError(
            ErrorCode.INVALID_REQUEST, f"Content-Type must be application/json, not {media[:80]!r}"
        )


async def read_body(
    receive: Receive,
    content_length: str | None,
    limit: int = MAX_BODY,
    too_large: str = "request body is larger than 1 MiB",
) -> bytes:
    """The whole request body, refused with 413 in the envelope once it passes `limit` bytes."""
    if content_length is not None:
        if not content_length.isdigit():
            raise ApiError(ErrorCode.INVALID_REQUEST, "Content-Length is not a number")
        if int(content_length) > limit:
            raise ApiError(ErrorCode.INVALID_REQUEST, too_large, http_status=413)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ApiError(ErrorCode.INVALID_REQUEST, "client disconnected before sending the body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise ApiError(ErrorCode.INVALID_REQUEST, too_large, http_status=413)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def parse_request(model: type[BaseModel], body: bytes) -> Any:
    """Validate a body against the endpoint's request model; 400 names the first bad field."""
    if not body.strip():
        body = b"{}"
    if b"\\u0000" in body:
        raise ApiError(ErrorCode.INVALID_REQUEST, "strings must not contain NUL characters")
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise ApiError(ErrorCode.INVALID_REQUEST, describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    first = exc.errors(include_url=False, include_input=False)[0]
    kind, loc = first["type"], [str(p) for p in first["loc"]]
    if kind == "json_invalid":
        return "request body is not valid UTF-8 JSON"
    if kind in ("model_type", "model_attributes_type", "dict_type") and not loc:
        return "request body must be a JSON object"
    where = ".".join(loc) or "body"
    if kind == "missing":
        return f"{where}: field required"
    return f"{where}: {first['msg']}"
