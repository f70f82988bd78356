"""Run the HTTP(S) server: bind, announce, serve until SIGTERM/SIGINT, then drain."""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import ssl
import threading
from typing import Callable, Iterator

import uvicorn

from airwave.api.app import create_app
from airwave.config import Settings
from airwave.core.library import Library
from airwave.core.services import Services

log = logging.getLogger("airwave.server")


class _Server(uvicorn.Server):
    """uvicorn's server, but a signal-initiated graceful stop exits with status 0."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def base_url(settings: Settings, port: int) -> str:
    if settings.public_url:
        return settings.public_url.rstrip("/") + "/"
    scheme = "https" if settings.tls_cert else "http"
    host = settings.host
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}/"


def _http_protocol() -> type | str:
    """httptools with zero-copy file bodies (airwave.zerocopy) when httptools is installed, else uvicorn's pick."""
    try:
        from airwave.zerocopy import ZeroCopyHttpToolsProtocol
    except ImportError:
        return "auto"
    return ZeroCopyHttpToolsProtocol


def run(services: Services, announce: Callable[[str], None], library: Library | None = None) -> None:
    """Serve until a signal arrives; in-flight requests get up to 10 s to finish."""
    settings = services.settings
    if bool(settings.tls_cert) != bool(settings.tls_key):
        raise ValueError("TLS needs both a certificate (--tls-cert) and a key (--tls-key)")
    sock = bind(settings.host, settings.port)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(services, library),
        ssl_certfile=str(settings.tls_cert) if settings.tls_cert else None,
        ssl_keyfile=str(settings.tls_key) if settings.tls_key else None,
        log_config=None,
        access_log=False,
        proxy_headers=False,  # trusted proxies are handled by the app itself
        server_header=False,
        timeout_graceful_shutdown=10,
        lifespan="on",
        http=_http_protocol(),
    )
    try:
        config.load()  # loads the certificate now, so a bad one fails before we announce
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        raise ValueError(
            f"cannot use TLS certificate {settings.tls_cert} with key {settings.tls_key}: {exc}"
        ) from None
    server = _Server(config)
    announce(base_url(settings, port))
    if library is not None:
        library.start(watch=settings.watch_library)
    try:
        server.run(sockets=[sock])
    finally:
        if library is not None:
            library.stop()
        sock.close()
        services.close()
        log.info("server stopped")
