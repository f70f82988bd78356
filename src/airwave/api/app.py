"""ASGI app assembly: the API dispatcher, site root, health, OpenAPI, access log, proxies."""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import re
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import orjson
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from airwave import logs
from airwave.api import metrics
from airwave.api.audio import AudioRoutes
from airwave.api.endpoints import registry
from airwave.api.http.files import ZEROCOPY, OpenFile, open_file, send_file
from airwave.api.http.headers import request_headers
from airwave.api.openapi import openapi_document
from airwave.api.protocol import CSRF_COOKIE, ApiDispatcher, cookie_header, send_error, send_json
from airwave.api.subsonic import browse as _subsonic_browse  # noqa: F401 - declares methods
from airwave.api.subsonic import media as _subsonic_media  # noqa: F401 - declares methods
from airwave.api.subsonic import playlists as _subsonic_playlists  # noqa: F401 - declares methods
from airwave.api.subsonic import plays as _subsonic_plays  # noqa: F401 - declares methods
from airwave.api.subsonic import radio as _subsonic_radio  # noqa: F401 - declares methods
from airwave.api.subsonic import resume as _subsonic_resume  # noqa: F401 - declares methods
from airwave.api.subsonic import starred as _subsonic_starred  # noqa: F401 - declares methods
from airwave.api.subsonic import system as _subsonic_system  # noqa: F401 - declares methods
from airwave.api.subsonic.dispatch import PREFIX as SUBSONIC_PREFIX
from airwave.api.subsonic.dispatch import Routes, SubsonicDispatcher
from airwave.api.tuner import methods as _tuner_methods  # noqa: F401 - declares the methods
from airwave.api.tuner.dispatch import TunerDispatcher
from airwave.api.tuner.explorer import SONG_EXPLORER, song_explorer
from airwave.api.webshell import TEMPLATE, service_worker
from airwave.core import cluster, music
from airwave.core.catalog import art
from airwave.core.library import Library, serving_roots
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode

access_log = logs.access_log
_ART_PATH = re.compile(r"^/art/((?:mosaic/)?[0-9a-f]{40}(?:-[0-9a-f]{40}){0,3})/(\d{2,4})\.jpg$")
_IMMUTABLE = b"public, max-age=31536000, immutable"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class _RequestIds:
    """The ids of requests that bring none: 16 hex digits, this process's random half, then a
    count. Unique across a server's processes (each draws its half when it starts, or forks),
    without the system call and the random draw that secrets.token_hex costs on every call."""

    def __init__(self) -> None:
        self.renew()
        os.register_at_fork(after_in_child=self.renew)

    def renew(self) -> None:
        self.prefix = secrets.token_hex(4)
        self.count = itertools.count(int.from_bytes(os.urandom(4)))

    def __call__(self) -> str:
        return f"{self.prefix}{next(self.count) & 0xFFFFFFFF:08x}"


_new_request_id = _RequestIds()
_SIGNED_PATH = re.compile(r"^(/audio/(?:receipt/|skip/)?)([^/]{9,})")

_WEB_DIR = Path(__file__).resolve().parent.parent / "web"
_WEB_PATH = re.compile(
    r"^/web/((?:[A-Za-z0-9_-]+/)*[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.[a-z0-9]{2,12})$"
)
_WEB_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".webmanifest": "application/manifest+json",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
    ".woff2": "font/woff2",
}
_COMPRESSIBLE = (".html", ".js", ".css", ".svg", ".webmanifest", ".json", ".txt")


class WebAsset:
    """One file of the web player, read once: its bytes, an ETag, and a gzip copy when that is
    smaller (made when first asked for: compressing every file cost each server process ~20 ms
    of its start)."""

    def __init__(self, body: bytes, suffix: str) -> None:
        self.body = body
        self.suffix = suffix
        self.content_type = _WEB_TYPES[suffix].encode()
        self.etag = f'"{hashlib.sha1(self.body).hexdigest()[:24]}"'

    @functools.cached_property
    def gzipped(self) -> bytes | None:
        if self.suffix not in _COMPRESSIBLE:
            return None
        import gzip

        packed = gzip.compress(self.body, 9, mtime=0)
        return packed if len(packed) < len(self.body) else None


def _web_assets(root: Path) -> dict[str, WebAsset]:
    """Every servable file under `root`, by its path relative to it; nothing else can be named."""
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): WebAsset(p.read_bytes(), p.suffix)
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and p.suffix in _WEB_TYPES
        and not any(part.startswith(".") for part in p.parts)
    }


class AirwaveApp:
    """Top-level router: /api/... to the dispatcher, a few plain routes, 404 envelopes elsewhere."""

    def __init__(
        self,
        services: Services,
        library: Library | None = None,
        draining: threading.Event | None = None,
    ) -> None:
        self.services = services
        self.library = library
        self.draining = draining or threading.Event()  # set on SIGTERM: /healthz answers 503
        self.roots = serving_roots(services, library)
        self.api = ApiDispatcher(services, registry)
        self.tuner = TunerDispatcher(services)
        self.audio = AudioRoutes(services, self.roots)
        self.subsonic = SubsonicDispatcher(services, Routes(self.audio, self._art), library)
        self._openapi: bytes | None = None
        self.coordinator = cluster.Coordinator(services, library)
        self.node = cluster.node_name(services)
        self.worker = int(os.environ.get(cluster.WORKER_ENV, "0") or 0)
        self._migrated = False
        self.web = _web_assets(_WEB_DIR)
        template = self.web.pop(TEMPLATE, None)  # served at the root only, filled in
        self.service_worker = (
            WebAsset(service_worker(template.body, {k: a.etag for k, a in self.web.items()}), ".js")
            if template is not None
            else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            self.audio.start()
            try:
                await _lifespan(receive, send, self.coordinator)
            finally:
                self.audio.close()
            return
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path.startswith("/api/") or path == "/api":
            await self.api(scope, receive, send)
        elif path in ("/services/json/", "/services/json"):
            await self.tuner(scope, receive, send)
        elif path.startswith(SUBSONIC_PREFIX):
            await self.subsonic(scope, receive, send)
        elif path.startswith(SONG_EXPLORER):
            await song_explorer(self.services, scope, send)
        elif path == "/":
            await self._root(scope, send)
        elif path.startswith("/audio/"):
            await self.audio(scope, receive, send)
        elif path.startswith("/art/"):
            await self._art(scope, receive, send)
        elif path.startswith("/music/"):
            await self._music_page(scope, send)
        elif path.startswith("/web/"):
            await self._web(scope, send)
        elif path == "/sw.js":
            await self._service_worker(scope, send)
        elif path in ("/healthz", "/livez"):
            await self._health(scope, send)
        elif path == "/metrics":
            await metrics.serve(self.services, scope, send)
        elif path == "/openapi.json" and scope["method"] in ("GET", "HEAD"):
            if self._openapi is None:
                self._openapi = orjson.dumps(openapi_document(registry))
            await send_json(send, 200, self._openapi)
        else:
            await send_error(send, ApiError(ErrorCode.NOT_FOUND, f"nothing at {path[:200]}"))

    async def _root(self, scope: Scope, send: Send) -> None:
        """The web player's page; sets the csrftoken cookie when the request has none (spec §2)."""
        if scope["method"] not in ("GET", "HEAD"):
            await send_error(
                send, ApiError(ErrorCode.METHOD_NOT_ALLOWED, "the site root answers GET and HEAD")
            )
            return
        page = self.web.get("index.html")
        if page is None:
            await send_error(send, ApiError(ErrorCode.NOT_FOUND, "the web player is not installed"))
            return
        cookies = cookie_parser(request_headers(scope).get("cookie") or "")
        extra: list[tuple[bytes, bytes]] = [(b"cache-control", b"no-cache")]
        if not cookies.get(CSRF_COOKIE):
            value = cookie_header(
                CSRF_COOKIE,
                secrets.token_hex(8),
                secure=scope.get("scheme") == "https",
                http_only=False,
            )
            extra.append((b"set-cookie", value.encode()))
        await _send_asset(scope, send, page, extra, revalidate=False)

    async def _web(self, scope: Scope, send: Send) -> None:
        """GET/HEAD /web/{file}: the player's static assets, revalidated by ETag, gzip when
        accepted."""
        if scope["method"] not in ("GET", "HEAD"):
            await send_error(
                send, ApiError(ErrorCode.METHOD_NOT_ALLOWED, "web assets answer GET and HEAD")
            )
            return
        match = _WEB_PATH.match(scope["path"])
        asset = self.web.get(match.group(1)) if match else None
        if asset is None:
            await send_error(send, ApiError(ErrorCode.NOT_FOUND, "no such file"))
            return
        await _send_asset(scope, send, asset, [(b"cache-control", b"no-cache")], revalidate=True)

    async def _service_worker(self, scope: Scope, send: Send) -> None:
        """GET/HEAD /sw.js: the player's service worker, at the root so its scope is the whole
        site; never cached, so browsers see a new release on their next visit."""
        if scope["method"] not in ("GET", "HEAD"):
            await send_error(
                send, ApiError(ErrorCode.METHOD_NOT_ALLOWED, "/sw.js answers GET and HEAD")
            )
            return
        if self.service_worker is None:
            await send_error(send, ApiError(ErrorCode.NOT_FOUND, "the web player is not installed"))
            return
        await _send_asset(
            scope, send, self.service_worker, [(b"cache-control", b"no-cache")], revalidate=True
        )

    async def _music_page(self, scope: Scope, send: Send) -> None:
        """GET /music/{seoToken}: the detail URLs of tracks, albums and artists (songDetailURL and
        friends) open the web player's page for them."""
        if scope["method"] not in ("GET", "HEAD"):
            await send_error(
                send, ApiError(ErrorCode.METHOD_NOT_ALLOWED, "detail pages answer GET and HEAD")
            )
            return

        def find() -> tuple[str, str] | None:
            with self.services.database.read() as db:
                return music.page_of(db, scope["path"][len("/music/") :][:512])

        page = await anyio.to_thread.run_sync(find)
        if page is None:
            await send_error(send, ApiError(ErrorCode.NOT_FOUND, "no such artist, album or track"))
            return
        location = f"/#/{page[0]}/{page[1]}".encode()
        await send(
            {
                "type": "http.response.start",
                "status": 302,
                "headers": [(b"location", location), (b"content-length", b"0")],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    async def _art(self, scope: Scope, receive: Receive, send: Send) -> None:
        """GET/HEAD /art/{hash}/{size}.jpg and /art/mosaic/{hash-hash-...}/{size}.jpg: no auth,
        cacheable."""
        if scope["method"] not in ("GET", "HEAD"):
            await send_error(
                send, ApiError(ErrorCode.METHOD_NOT_ALLOWED, "art answers GET and HEAD")
            )
            return
        match = _ART_PATH.match(scope["path"])
        size = int(match.group(2)) if match else 0
        if match is None or size not in art.SIZES:
            await send_error(send, ApiError(ErrorCode.NOT_FOUND, "no such picture"))
            return
        key = match.group(1)
        etag = f'"{hashlib.sha1(key.encode()).hexdigest()[:24]}-{size}"'
        if request_headers(scope).get("if-none-match") in (etag, f"W/{etag}", "*"):
            await send(
                {
                    "type": "http.response.start",
                    "status": 304,
                    "headers": [(b"etag", etag.encode()), (b"cache-control", _IMMUTABLE)],
                }
            )
            await send({"type": "http.response.body", "body": b""})
            return
        opened = await anyio.to_thread.run_sync(self._open_art, key, size)
        if opened is None:
            await send_error(send, ApiError(ErrorCode.NOT_FOUND, "no such picture"))
            return
        try:  # the audio files' code path: ranges, validators, zero-copy
            await send_file(
                scope,
                receive,
                send,
                opened,
                content_type="image/jpeg",
                cache_control=_IMMUTABLE.decode(),
                etag=etag,
            )
        except ApiError as error:
            await send_error(send, error)

    def _open_art(self, key: str, size: int) -> OpenFile | None:
        path = art.art_file(self.services, self.roots, key, size)
        return open_file(path) if path is not None else None

    async def _health(self, scope: Scope, send: Send) -> None:
        """/healthz: ready (database reachable, schema migrated), with who answered; 503 when
        not, or while draining before a graceful stop. /livez and /healthz?live: the process
        answers at all (no database)."""
        who: dict[str, Any] = {"host": self.node, "pid": os.getpid(), "worker": self.worker}
        if scope["path"] == "/livez" or scope.get("query_string", b"") in (b"live", b"live="):
            await send_json(send, 200, orjson.dumps({"status": "ok", **who}))
            return
        if self.draining.is_set():
            await send_json(send, 503, orjson.dumps({"status": "draining", **who}))
            return
        try:
            ready = await anyio.to_thread.run_sync(self._ready)
        except Exception:
            access_log.exception("health check failed")
            body = {"status": "error", "database": "unreachable", **who}
            await send_json(send, 503, orjson.dumps(body))
            return
        if ready is None:
            body = {"status": "error", "database": "ok", "migrations": "pending", **who}
            await send_json(send, 503, orjson.dumps(body))
            return
        health: dict[str, Any] = {"status": "ok", "database": "ok", **who}
        health["leaders"] = ready["leaders"]
        if self.library is not None:
            health["library"] = self.library.shared_status(ready["library"])
        await send_json(send, 200, orjson.dumps(health))

    def _ready(self) -> dict[str, Any] | None:
        """The cluster's overview once the schema is at the newest revision, else None."""
        if not self._migrated:
            self._migrated = cluster.schema_current(self.services)
            if not self._migrated:
                return None
        return cluster.overview(self.services)


async def _send_asset(
    scope: Scope, send: Send, asset: WebAsset, extra: list[tuple[bytes, bytes]], revalidate: bool
) -> None:
    headers = [(b"etag", asset.etag.encode()), (b"vary", b"accept-encoding"), *extra]
    if revalidate and request_headers(scope).get("if-none-match") in (
        asset.etag,
        f"W/{asset.etag}",
        "*",
    ):
        await send({"type": "http.response.start", "status": 304, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    body = asset.body
    if asset.gzipped is not None and _accepts_gzip(
        request_headers(scope).get("accept-encoding") or ""
    ):
        body = asset.gzipped
        headers.append((b"content-encoding", b"gzip"))
    headers += [
        (b"content-type", asset.content_type),
        (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff"),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})


def _accepts_gzip(accept_encoding: str) -> bool:
    """Accept-Encoding names gzip (or *) without q=0."""
    for item in accept_encoding.lower().split(","):
        name, _, params = item.partition(";")
        if name.strip() in ("gzip", "*"):
            return not re.fullmatch(r"\s*q\s*=\s*0(?:\.0*)?\s*", params)
    return False


async def _lifespan(receive: Receive, send: Send, coordinator: cluster.Coordinator) -> None:
    """The coordinator (roles, housekeeping, the library's scans) runs from start to stop."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            coordinator.start()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await anyio.to_thread.run_sync(coordinator.stop)
            await send({"type": "lifespan.shutdown.complete"})
            return


def _loggable(path: str) -> str:
    """The path for the access log, with the secret part of signed audio URLs cut to a
    recognisable stub."""
    match = _SIGNED_PATH.match(path)
    return f"{match.group(1)}{match.group(2)[:8]}..." if match else path[:300]


def _request_id_header(scope: Scope) -> str | None:
    """The X-Request-Id the client sent (repeated ones joined, as request_headers does), without
    decoding every header."""
    found = [v for n, v in scope["headers"] if len(n) == 12 and n.lower() == b"x-request-id"]
    return b", ".join(found).decode("latin-1") if found else None


class AccessLog:
    """Gives every request an id (X-Request-Id in and out) and logs one structured line for it."""

    def __init__(self, app: ASGIApp, enabled: bool) -> None:
        self.app = app
        self.enabled = enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = _request_id_header(scope)
        request_id = incoming if incoming and _REQUEST_ID.match(incoming) else _new_request_id()
        state: dict[str, Any] = scope.setdefault("state", {})
        state["request_id"] = request_id
        started = time.perf_counter()
        status = 0
        sent = 0
        counted = False

        async def send_logged(message: Message) -> None:
            nonlocal status, sent, counted
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [
                    *message.get("headers", []),
                    (b"x-request-id", request_id.encode()),
                ]
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            elif message["type"] == ZEROCOPY:
                sent += message.get("count") or 0
            if message["type"] != "http.response.start" and not message.get("more_body"):
                # counted before the last byte leaves: a client that has its answer and asks
                # another worker for /metrics must see this request there
                counted = True
                metrics.observe(scope, status, time.perf_counter() - started)
            await send(message)

        try:
            await self.app(scope, receive, send_logged)
        finally:
            if not counted:
                metrics.observe(scope, status, time.perf_counter() - started)
            if self.enabled:
                client = scope.get("client")
                logs.request(
                    {
                        "request_id": request_id,
                        "method": scope["method"],
                        "path": _loggable(scope["path"]),
                        "status": status,
                        "bytes": sent,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                        "client": client[0] if client else None,
                        "listener_id": state.get("listener_id"),
                    }
                )


def create_app(
    services: Services, library: Library | None = None, draining: threading.Event | None = None
) -> ASGIApp:
    """The whole server as one ASGI callable; `draining`, once set, turns /healthz to 503."""
    app: ASGIApp = AccessLog(AirwaveApp(services, library, draining), services.settings.access_log)
    proxies = services.settings.trusted_proxies
    if proxies:
        app = ProxyHeadersMiddleware(app, trusted_hosts=proxies)
    return app
