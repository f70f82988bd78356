"""Run the HTTP(S) server: bind, announce, serve until SIGTERM/SIGINT, then drain."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import logging
import os
import resource
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.server import STARTUP_FAILURE

from airwave import metrics
from airwave.api.app import create_app
from airwave.config import Settings
from airwave.core import cluster
from airwave.core.library import Library
from airwave.core.services import Services
from airwave.library import workers

log = logging.getLogger("airwave.server")


class _Server(uvicorn.Server):
    """uvicorn's server, but a signal-initiated graceful stop exits with status 0, after a
    drain when one is set."""

    def __init__(
        self,
        config: uvicorn.Config,
        handshake_timeout: float,
        plain_sockets: list[socket.socket] | None = None,
        drain: float = 0.0,
        draining: threading.Event | None = None,
    ) -> None:
        self.plain_sockets = plain_sockets or []  # plain HTTP beside the TLS ones
        super().__init__(config)
        self.handshake_timeout = handshake_timeout
        self.drain = drain
        self.draining = draining or threading.Event()
        self._drain_timer: threading.Timer | None = None

    def handle_exit(self, sig: int, frame: Any) -> None:
        """A first SIGTERM starts the drain (/healthz answers 503, everything else is served as
        before) and the graceful stop follows it; SIGINT (Ctrl-C) or another signal stops now.

        uvicorn takes a SIGINT that comes while a stop is under way for a second Ctrl-C: it then
        stops at once, without the app's shutdown (the process's cluster roles are not given
        back, and the cancelled lifespan is logged as an error). A SIGINT after a stop that
        another signal began is the first Ctrl-C, not a second: the supervisor's SIGTERM can
        reach a worker before the SIGINT sent to every process of `serve` (`pkill -INT`)."""
        first_interrupt = signal.SIGINT not in self._captured_signals
        if sig == signal.SIGINT and self.should_exit and first_interrupt:
            self._captured_signals.append(sig)  # the graceful stop under way goes on
            return
        if self.drain <= 0 or sig != signal.SIGTERM or self.draining.is_set() or self.should_exit:
            if self._drain_timer is not None:
                self._drain_timer.cancel()
            super().handle_exit(sig, frame)
            return
        self.draining.set()
        log.info("draining before the stop", extra={"drain_s": self.drain, "pid": os.getpid()})
        self._drain_timer = threading.Timer(self.drain, super().handle_exit, (sig, frame))
        self._drain_timer.daemon = True
        self._drain_timer.start()

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


def bind(host: str, port: int, *, shared: bool = False, listen: bool = True) -> socket.socket:
    """A listening socket; `shared`: one of a group (SO_REUSEPORT) among which the kernel
    spreads new connections evenly, each worker listening on its own."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if family == socket.AF_INET6:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind((host, port))
    if listen:
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
    """Serve until a signal arrives; in-flight requests get `shutdown_grace` seconds to finish.

    With `workers` above one, this process binds the port, checks the host against the
    instance (core/cluster.py), then forks the workers and watches them: each serves on the
    shared socket with its own database connections, a dead one is replaced, and SIGTERM or
    SIGINT stops them all gracefully.
    """
    settings = services.settings
    if bool(settings.tls_cert) != bool(settings.tls_key):
        raise ValueError("TLS needs both a certificate (--tls-cert) and a key (--tls-key)")
    if settings.plain_port is not None and not settings.tls_cert:
        raise ValueError("--plain-port serves plain HTTP beside TLS: give --tls-cert and --tls-key")
    workers = settings.workers or os.cpu_count() or 1
    fd_limit = raise_fd_limit()
    cluster.join(services, library.roots if library is not None else [])
    if workers > 1:  # one process counts in memory: nothing mapped from a disk that can fill
        metrics.use_directory(metrics.shared_directory(settings.data_dir))
    # Several workers: this process holds the ports (bound, not listening) and each worker
    # listens on its own socket of the group, so the kernel spreads connections evenly (one
    # shared listening socket lets whichever worker wakes first take a whole burst of them).
    shared = workers > 1 and hasattr(socket, "SO_REUSEPORT")
    sock = bind(settings.host, settings.port, shared=shared, listen=not shared)
    port = sock.getsockname()[1]
    plain = (
        [bind(settings.host, settings.plain_port, shared=shared, listen=not shared)]
        if settings.plain_port is not None
        else []
    )
    try:
        if workers == 1:
            _serve(
                services, sock, plain, library, fd_limit, lambda: announce(base_url(settings, port))
            )
            return
        _check_tls(settings)
        roots = library.roots if library is not None else None
        services.close()  # each worker opens its own connections
        _Supervisor(services, roots, [sock, *plain], shared, fd_limit, workers).run(
            lambda: announce(base_url(settings, port))
        )
    finally:
        sock.close()
        for extra in plain:
            extra.close()
        if workers > 1:
            cluster.leave(services)
            services.close()
            log.info("server stopped")


def _check_tls(settings: Settings) -> None:
    """Load the certificate once before the workers do, so a bad one fails the start."""
    if settings.tls_cert:
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
                str(settings.tls_cert), str(settings.tls_key)
            )
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(
                f"cannot use TLS certificate {settings.tls_cert} with key {settings.tls_key}: {exc}"
            ) from None


def _serve(
    services: Services,
    sock: socket.socket,
    plain: list[socket.socket],
    library: Library | None,
    fd_limit: int,
    announce: Callable[[], None] | None,
) -> None:
    """One server process on the bound sockets until a signal; then its roles go to others."""
    settings = services.settings
    protocol, guard = _http_protocol(
        settings.header_timeout, connection_cap(fd_limit, settings.max_connections)
    )
    draining = threading.Event()
    config = uvicorn.Config(
        create_app(services, library, draining),
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
        # no WebSocket endpoint: an upgrade request is served as plain HTTP (with uvicorn's
        # default, any request carrying `Upgrade: websocket` was answered 500)
        ws="none",
    )
    try:
        config.load()  # loads the certificate now, so a bad one fails before we announce
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(
            f"cannot use TLS certificate {settings.tls_cert} with key {settings.tls_key}: {exc}"
        ) from None
    config.connection_guard = guard  # type: ignore[attr-defined]  # read by the protocol
    # Everything built so far (modules, the app, settings) lives as long as the process: out of
    # the collector's sight, so a full collection during a request walks only what requests
    # made (a 100-item page paused ~100 ms when one ran). The young generations only are
    # collected first: the collector ran while modules were imported, and a full pass over them
    # found nothing while it cost a worker ~30 ms of its start.
    gc.collect(1)
    gc.freeze()
    server = _Server(
        config,
        handshake_timeout=settings.header_timeout,
        plain_sockets=plain,
        drain=settings.shutdown_drain,
        draining=draining,
    )
    if announce is not None:
        announce()
        for extra in plain:
            log.info("plain HTTP beside TLS", extra={"port": extra.getsockname()[1]})
    try:
        server.run(sockets=[sock])
    finally:
        services.close()
        log.info("server stopped")


RESTART_DELAY_MAX = 30.0  # seconds between restarts of a worker that keeps dying
_QUICK_EXIT = 5.0  # a worker that exits sooner after its start is failing, not stopping
POOL_SHUTDOWN_WAIT = 5.0  # seconds a stopping worker waits for its scan and helper pools to end
_PR_SET_PDEATHSIG = 1


class _Supervisor:
    """Forks the workers, replaces dead ones, stops them all on SIGTERM or SIGINT."""

    def __init__(
        self,
        services: Services,
        roots: list[Path] | None,
        sockets: list[socket.socket],
        shared: bool,
        fd_limit: int,
        count: int,
    ) -> None:
        self.services = services
        self.roots = roots
        self.sockets = sockets
        self.shared = shared
        self.fd_limit = fd_limit
        self.count = count
        self.children: dict[int, tuple[int, float]] = {}  # pid -> (worker number, started)
        self.failures: dict[int, int] = {}  # worker number -> quick exits in a row
        self.pending: dict[int, float] = {}  # worker number -> when to start it again
        self.stopping = False

    def run(self, announce: Callable[[], None]) -> None:
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            for number in range(1, self.count + 1):
                self._fork(number)
            announce()
            log.info("workers started", extra={"workers": self.count, "pid": os.getpid()})
            while not self.stopping:
                self._reap()
                now = time.monotonic()
                for number, when in list(self.pending.items()):
                    if when <= now:
                        del self.pending[number]
                        self._fork(number)
                time.sleep(0.1)
        finally:
            self._stop_all()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, _sig: int, _frame: object) -> None:
        self.stopping = True

    def _fork(self, number: int) -> None:
        pid = os.fork()
        if pid == 0:  # the worker
            code = 1
            try:
                code = self._work(number)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                log.exception("worker failed", extra={"worker": number})
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(Exception):
                        stream.flush()
                os._exit(code)
        self.children[pid] = (number, time.monotonic())

    def _work(self, number: int) -> int:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        _end_with_parent()
        os.environ[cluster.WORKER_ENV] = str(number)
        settings = self.services.settings
        services = Services.open(settings, self.services.clock)
        library = Library(services, self.roots) if self.roots is not None else None
        sockets = self.sockets
        if self.shared:  # this worker's own listening sockets, on the ports the supervisor holds
            host = self.services.settings.host
            sockets = [bind(host, s.getsockname()[1], shared=True) for s in self.sockets]
            for held in self.sockets:
                held.close()
        log.info("worker started", extra={"worker": number, "pid": os.getpid()})
        try:
            _serve(services, sockets[0], sockets[1:], library, self.fd_limit, None)
        finally:
            # This process ends by os._exit, which skips the finalizers that release its helper
            # pools' semaphores (library/workers.py): the stopped scan, which holds what its
            # pool's futures refer to, and the pools are waited for here.
            deadline = time.monotonic() + POOL_SHUTDOWN_WAIT
            ended = library is None or library.join(POOL_SHUTDOWN_WAIT)
            if not (workers.shutdown_all(max(0.0, deadline - time.monotonic())) and ended):
                log.warning("the library's helpers did not end in time", extra={"worker": number})
        return 0

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            gone = self.children.pop(pid, None)
            if gone is None:
                continue
            metrics.process_gone(pid)
            number, started = gone
            code = os.waitstatus_to_exitcode(status)
            if self.stopping:
                continue
            quick = time.monotonic() - started < _QUICK_EXIT
            self.failures[number] = self.failures.get(number, 0) + 1 if quick else 0
            delay = min(RESTART_DELAY_MAX, 0.5 * 2 ** self.failures[number]) if quick else 0.0
            log.error(
                "worker exited; starting another",
                extra={"worker": number, "pid": pid, "status": code, "delay_s": delay},
            )
            self.pending[number] = time.monotonic() + delay

    def _stop_all(self) -> None:
        """SIGTERM to every worker; those still running after the grace are killed."""
        self.stopping = True
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        settings = self.services.settings
        deadline = time.monotonic() + settings.shutdown_drain + settings.shutdown_grace + 10
        while self.children and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.05)
        for pid in list(self.children):
            log.error("worker outlived the shutdown grace; killed", extra={"pid": pid})
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            metrics.process_gone(pid)
        self.children.clear()


def _end_with_parent() -> None:
    """A worker gets SIGTERM when its supervisor dies, even by SIGKILL (Linux)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):
            pass
