"""Slow, idle and broken clients on the wire: request-head and keep-alive timeouts, a flood of idle
sockets beyond the descriptor limit, the TLS handshake bound, and unparsable HTTP answered in the
error envelope (spec §4).

Everything here is transport-level and independent of the database, so it runs on SQLite only.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import trustme
from support import Backend, Server, assert_error

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only

HEADER_TIMEOUT = 1.5
KEEP_ALIVE_TIMEOUT = 1.0
FD_LIMIT = 256
ENV = {
    "AIRWAVE_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
    "AIRWAVE_KEEP_ALIVE_TIMEOUT": str(KEEP_ALIVE_TIMEOUT),
}


@pytest.fixture(scope="module")
def backend_kind() -> str:
    return "sqlite"


@pytest.fixture(scope="module")
def server(make_backend: Callable[[], Backend]) -> Iterator[Server]:
    """A server whose process may hold only FD_LIMIT descriptors."""
    started = Server(make_backend(), [], dict(ENV), fd_limit=FD_LIMIT).start()
    yield started
    started.stop()


def _address(server: Server) -> tuple[str, int]:
    host, port = server.url.split("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def _connect(server: Server, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(_address(server), timeout=5)
    if data:
        sock.sendall(data)
    return sock


def _read_until_closed(sock: socket.socket, timeout: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    start = time.monotonic()
    sock.settimeout(timeout)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        raise AssertionError(f"still open after {timeout} s; got {received!r}") from None
    finally:
        sock.close()
    return received, time.monotonic() - start


def _response(raw: bytes) -> httpx.Response:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = [tuple(part.strip() for part in line.split(":", 1)) for line in lines]
    return httpx.Response(int(status_line.split()[1]), headers=headers, content=body)


def _assert_envelope(raw: bytes, status: int) -> None:
    response = _response(raw)
    assert_error(response, status, "INVALID_REQUEST")
    assert response.headers["connection"] == "close"
    assert response.headers["content-type"] == "application/json"


def test_idle_sockets_beyond_the_descriptor_limit_do_not_starve_clients(server: Server) -> None:
    flood = []
    try:
        for i in range(FD_LIMIT + 64):
            flood.append(_connect(server, b"POST /api/v1/meta/getEndp" if i % 2 else b""))
        for _ in range(3):
            began = time.monotonic()
            server.client(timeout=5).ok("v1/meta/getEndpoints")  # a new connection each time
            assert time.monotonic() - began < 2
        assert server.wait_for_log(lambda line: "connection limit" in line and "dropped" in line)
        # the ones not dropped to make room are closed once their head timeout passes
        deadline = time.monotonic() + HEADER_TIMEOUT + 3
        for sock in flood:
            _read_until_closed(sock, max(deadline - time.monotonic(), 0.1))
    finally:
        for sock in flood:
            sock.close()


def test_silent_connection_is_closed_after_the_header_timeout(server: Server) -> None:
    received, took = _read_until_closed(_connect(server), HEADER_TIMEOUT + 3)
    assert received == b""
    assert HEADER_TIMEOUT - 0.3 < took < HEADER_TIMEOUT + 1.5


def test_dribbled_request_head_gets_408_at_the_deadline(server: Server) -> None:
    """Steady trickling does not extend the deadline (slowloris)."""
    sock = _connect(server)
    began = time.monotonic()
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    try:
        for byte in head:
            sock.sendall(bytes([byte]))
            time.sleep(0.1)
    except (BrokenPipeError, ConnectionResetError):
        pass
    received, _ = _read_until_closed(sock, HEADER_TIMEOUT + 3)
    took = time.monotonic() - began
    assert HEADER_TIMEOUT - 0.3 < took < HEADER_TIMEOUT + 1.5
    _assert_envelope(received, 408)


def test_idle_keep_alive_connection_is_closed(server: Server) -> None:
    sock = _connect(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    received, took = _read_until_closed(sock, KEEP_ALIVE_TIMEOUT + 3)
    assert received.startswith(b"HTTP/1.1 200 ")
    assert KEEP_ALIVE_TIMEOUT - 0.3 < took < KEEP_ALIVE_TIMEOUT + 1.5


def test_second_request_on_a_kept_alive_connection_has_its_own_deadline(server: Server) -> None:
    sock = _connect(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.settimeout(5)
    assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
    sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # and never the rest
    received, took = _read_until_closed(sock, HEADER_TIMEOUT + 3)
    assert HEADER_TIMEOUT - 0.3 < took < HEADER_TIMEOUT + 1.5
    _assert_envelope(received, 408)


GOOD = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
CHUNKED = (
    b"POST /api/v1/meta/getEndpoints HTTP/1.1\r\nHost: x\r\n"
    b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
)


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n", id="garbage"),
        pytest.param(b"GET /healthz HTTP/9\r\nHost: x\r\n\r\n", id="bad-request-line"),
        pytest.param(b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", id="bad-header"),
        pytest.param(CHUNKED + b"zz\r\n{}\r\n0\r\n\r\n", id="bad-chunked-body"),
        pytest.param(GOOD + b"\x00\x01 nonsense\r\n\r\n", id="bad-second-request"),
    ],
)
def test_unparsable_http_gets_400_in_the_envelope(server: Server, request_bytes: bytes) -> None:
    received, _ = _read_until_closed(_connect(server, request_bytes), 5)
    if received.startswith(b"HTTP/1.1 200 "):  # the well-formed first request of a pipeline
        received = received[received.index(b"HTTP/1.1 400 ") :]
    _assert_envelope(received, 400)


SWITCH = (
    b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
)


@pytest.mark.parametrize("protocol", [b"websocket", b"h2c"])
def test_a_request_asking_to_switch_protocols_is_answered_as_plain_http(
    server: Server, protocol: bytes
) -> None:
    """Airwave speaks only HTTP here: a request that asks for WebSocket or HTTP/2 is answered as
    the HTTP request it also is (a WebSocket one was answered 500, with an error in the log), and
    logs no warning about it (uvicorn warned twice for each, once to install a WebSocket
    library)."""
    logged = len(server.log_lines())
    body = b'{"x": 1}'
    requests = [
        b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + SWITCH + b"Upgrade: " + protocol + b"\r\n\r\n",
        b"POST /api/v1/meta/getEndpoints HTTP/1.1\r\nHost: x\r\n"
        + SWITCH
        + b"Upgrade: "
        + protocol
        + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        + body,
    ]
    health, _ = _read_until_closed(_connect(server, requests[0]), 5)
    assert _response(health).status_code == 200
    api, _ = _read_until_closed(_connect(server, requests[1]), 5)
    # the protocol's own answer: no CSRF token with this request
    assert_error(_response(api), 403, "INVALID_CSRF_TOKEN")
    # (the module's server is shared: other tests' broken requests may log meanwhile)
    said = [line for line in server.log_lines()[logged:] if '"airwave.access"' not in line]
    assert [line for line in said if "upgrade" in line.lower() or '"error"' in line] == []


def test_oversized_request_head_gets_431_in_the_error_envelope(server: Server) -> None:
    sock = _connect(server)
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000)
    except (BrokenPipeError, ConnectionResetError):
        pass
    received, _ = _read_until_closed(sock, 5)
    _assert_envelope(received, 431)


def test_tls_handshake_that_never_comes_is_cut_at_the_header_timeout(
    make_backend: Callable[[], Backend], tmp_path_factory: pytest.TempPathFactory
) -> None:
    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1")
    directory: Path = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(key))
    args = ["--tls-cert", str(cert), "--tls-key", str(key)]
    tls = Server(make_backend(), args, dict(ENV)).start()
    try:
        silent, began = _connect(tls), time.monotonic()
        context = ssl.create_default_context()
        ca.configure_trust(context)
        assert httpx.get(tls.url + "/healthz", verify=context).status_code == 200
        received, _ = _read_until_closed(silent, HEADER_TIMEOUT + 3)
        took = time.monotonic() - began
        assert received == b""
        assert HEADER_TIMEOUT - 0.3 < took < HEADER_TIMEOUT + 1.5
    finally:
        tls.stop()


def _segments_received(sock: socket.socket) -> int:
    """tcpi_segs_in of Linux's struct tcp_info: the segments this socket has received."""
    return struct.unpack_from("I", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256), 140)[
        0
    ]


def _read_one_response(sock: socket.socket) -> httpx.Response:
    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += sock.recv(65536)
    length = int(_response(raw).headers["content-length"])
    while len(raw.partition(b"\r\n\r\n")[2]) < length:
        raw += sock.recv(65536)
    return _response(raw)


def test_a_small_answer_leaves_in_one_tcp_segment(server: Server) -> None:
    """Head and body in one write: one segment per small answer, not two (the head alone, then
    the body). Loopback delivers each write as its own segment, so the count is exact; a bare
    ACK of the request may come first, so the fewest segments over several calls tell."""
    sock = socket.create_connection(_address(server), timeout=5)
    try:
        counts = []
        for _ in range(12):
            before = _segments_received(sock)
            sock.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _read_one_response(sock).status_code == 200
            counts.append(_segments_received(sock) - before)
        assert min(counts) == 1, counts
    finally:
        sock.close()


def test_a_client_that_expects_100_continue_gets_it_before_it_sends_the_body(
    server: Server,
) -> None:
    body = b'{"username": "nobody", "password": "wrong"}'
    sock = socket.create_connection(_address(server), timeout=5)
    try:
        sock.sendall(
            b"POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Cookie: csrftoken=t\r\nX-CsrfToken: t\r\nExpect: 100-continue\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
        )
        interim = b""
        while b"\r\n\r\n" not in interim:
            interim += sock.recv(65536)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        assert_error(_read_one_response(sock), 401, "AUTH_INVALID_USERNAME_PASSWORD")
    finally:
        sock.close()
