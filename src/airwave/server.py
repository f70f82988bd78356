"""Run the HTTP(S) server: bind, announce, serve until SIGTERM/SIGINT, then drain."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import resource
import signal
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn
from uvicorn.server import STARTUP_FAILURE

from airwave.api.app import create_app
from airwave.config import Settings
from airwave.core.library import Library
from airwave.core.services import Services

log = logging.getLogger("airwave.server")


class _Server(uvicorn.Server):
    """uvicorn's server, but a signal-initiated graceful stop exits with status 0."""

    def __init__(
        self,
        config: uvicorn.Config,
        handshake_timeout: float,
        plain_sockets: list[socket.socket] | None = None,
    ) -> None:
        self.plain_sockets = plain_sockets or []  # plain HTTP beside the TLS ones
        super().__init__(config)
        self.handshake_timeout = handshake_timeout

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {
            sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's startup for our pre-bound sockets, plus a bound on the TLS handshake.

        uvicorn leaves asyncio's 60 s handshake timeout, during which a peer that never speaks TLS
        holds a descriptor; ours is the header timeout.
        """
        await self.lifespan.startup()
        if self.lifespan.should_exit:
            sys.exit(STARTUP_FAILURE)
        config = self.config

        def create_protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config,
                server_state=self.server_state,
                app_state=self.lifespan.state,
                _loop=_loop,
            )

        loop = asyncio.get_running_loop()
        extra: dict[str, Any] = {}
        if config.ssl is not None:
            extra["ssl_handshake_timeout"] = self.handshake_timeout
        self.servers = [
            await loop.create_server(
                create_protocol, sock=sock, ssl=config.ssl, backlog=config.backlog, **extra
            )
            for sock in sockets or []
        ] + [
            await loop.create_server(create_protocol, sock=sock, backlog=config.backlog)
            for sock in self.plain_sockets
        ]
        self.started = True


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


def _http_protocol(header_timeout: float, max_connections: int) -> tuple[type | str, Any]:
    """httptools with guards and zero-copy sends (airwave.api.http.zerocopy), else uvicorn's pick.

    httptools comes with uvicorn[standard]; without it uvicorn's h11 protocol serves, still with the
    keep-alive and TLS handshake timeouts but without the head timeout and the connection cap.
    """
    try:
        from airwave.api.http.zerocopy import ConnectionGuard, ZeroCopyHttpToolsProtocol
    except ImportError:
        log.warning("httptools is missing: serving without request-head timeout or connection cap")
        return "auto", None
    return ZeroCopyHttpToolsProtocol, ConnectionGuard(header_timeout, max_connections)


def raise_fd_limit() -> int:
    """Raise the soft descriptor limit to the hard one, for more clients; returns the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the descriptor limit from %d to %d: %s", soft, target, exc)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_cap(fd_limit: int, configured: int) -> int:
    """Client connections at once: a quarter of the descriptors (64 at least) stay for the rest."""
    cap = max(fd_limit - max(64, fd_limit // 4), 16)
    return min(configured, cap) if configured else cap


def run(
    services: Services, announce: Callable[[str], None], library: Library | None = None
) -> None:
    """Serve until a signal arrives; in-flight requests get `shutdown_grace` seconds to finish."""
    settings = services.settings
    if bool(settings.tls_cert) != bool(settings.tls_key):
        raise ValueError("TLS needs both a certificate (--tls-cert) and a key (--tls-key)")
    protocol, guard = _http_protocol(
        settings.header_timeout, connection_cap(raise_fd_limit(), settings.max_connections)
    )
    if settings.plain_port is not None and not settings.tls_cert:
        raise ValueError("--plain-port serves plain HTTP beside TLS: give --tls-cert and --tls-key")
    sock = bind(settings.host, settings.port)
    port = sock.getsockname()[1]
    plain = [bind(settings.host, settings.plain_port)] if settings.plain_port is not None else []
    config = uvicorn.Config(
        create_app(services, library),
        ssl_certfile=str(settings.tls_cert) if settings.tls_cert else None,
        ssl_keyfile=str(settings.tls_key) if settings.tls_key else None,
        log_config=None,
        access_log=False,
        proxy_headers=False,  # trusted proxies are handled by the app itself
        server_header=False,
        timeout_graceful_shutdown=settings.shutdown_grace,
        timeout_keep_alive=settings.keep_alive_timeout,
        lifespan="on",
        http=protocol,
    )
    try:
        config.load()  # loads the certificate now, so a bad one fails before we announce
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        raise ValueError(
            f"cannot use TLS certificate {settings.tls_cert} with key {settings.tls_key}: {exc}"
        ) from None
    config.connection_guard = guard  # type: ignore[attr-defined]  # read by the protocol
    # Everything built so far (modules, the app, settings) lives as long as the process: out of
    # the collector's sight, so a full collection during a request walks only what requests
    # made (a 100-item page paused ~100 ms when one ran).
    gc.collect()
    gc.freeze()
    server = _Server(config, handshake_timeout=settings.header_timeout, plain_sockets=plain)
    announce(base_url(settings, port))
    for extra in plain:
        log.info("plain HTTP beside TLS", extra={"port": extra.getsockname()[1]})
    if library is not None:
        library.start(watch=settings.watch_library)
    try:
        server.run(sockets=[sock])
    finally:
        if library is not None:
            library.stop()
        sock.close()
        for extra in plain:
            extra.close()
        services.close()
        log.info("server stopped")
