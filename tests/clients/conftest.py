"""Replays of published third-party clients of the REST API, each from its own source.

Every module here follows one client: it sends what that client's source sends (path, headers,
cookies, body fields, `null` vs absent vs `""`, order of calls) and reads each answer as strictly
as the client's language does (see `readers.py`).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from support import Backend, Server, unique, wait_indexed


@pytest.fixture(scope="module")
def backend_kind() -> str:
    """Replays check the wire contract: SQLite only (storage runs on PostgreSQL elsewhere)."""
    return "sqlite"


@dataclass
class Account:
    username: str
    password: str


@pytest.fixture(scope="session")
def airwave(
    tmp_path_factory: pytest.TempPathFactory, small_demo_library: Path, demo_template: Callable
) -> Iterator[Server]:
    """A server on the demo library, as a new user runs it: the defaults, nothing loosened.
    One per test process: every replay signs in with accounts of its own."""
    backend = Backend("sqlite", tmp_path_factory.mktemp("clients"), None)
    args = ["--library", str(small_demo_library)]
    demo_template(backend, tuple(args), {})
    server = Server(backend, args).start()
    try:
        wait_indexed(server)
        yield server
    finally:
        server.stop()


def make_account(server: Server, tier: str = "free") -> Account:
    """A listener made by the operator (`airwave user add`), as a client's user would have."""
    account = Account(unique("listener"), "correct horse battery")
    made = server.admin(
        "user", "add", account.username, "--tier", tier, "--password-stdin", input=account.password
    )
    assert made.returncode == 0, made.stderr
    return account


@pytest.fixture
def account(airwave: Server) -> Account:
    return make_account(airwave)


@pytest.fixture
def premium_account(airwave: Server) -> Account:
    return make_account(airwave, "premium")


# --- the tuner clients: TLS on 443 and plain HTTP on 80 of a loopback address of their own ---


def can_bind_low_ports(host: str) -> bool:
    """Ports 80 and 443 need root (the CI runs as root); tuner tests skip without them."""
    try:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((host, 80))
        return True
    except OSError:
        return False


def needs_low_ports(host: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not can_bind_low_ports(host), reason=f"ports 80 and 443 on {host} need root (the CI has it)"
    )


@contextmanager
def tuner_server(
    tmp_path_factory: pytest.TempPathFactory, library: Path, host: str, demo_template: Callable
) -> Iterator[tuple[Server, Path]]:
    """A server as tuner clients need it: TLS on 443 (a trustme certificate for `host`) and
    plain HTTP on 80 (`--plain-port`), on the library; yields it and the CA file to trust."""
    ca = trustme.CA()
    issued = ca.issue_cert(host)
    folder = tmp_path_factory.mktemp("tuner-tls")
    cert, key, ca_file = folder / "cert.pem", folder / "key.pem", folder / "ca.pem"
    cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    backend = Backend("sqlite", tmp_path_factory.mktemp("tuner"), None)
    args = [
        "--host", host, "--port", "443", "--plain-port", "80",
        "--tls-cert", str(cert), "--tls-key", str(key),
        "--library", str(library),
    ]  # fmt: skip
    demo_template(backend, tuple(args), {})
    server = Server(backend, args).start()
    try:
        plain = Server(server.backend)
        plain.url = f"http://{host}"  # the plain listener answers /healthz too
        wait_indexed(plain)
        yield server, ca_file
    finally:
        server.stop()


@pytest.fixture(scope="module")
def tuner(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    small_demo_library: Path,
    demo_template: Callable,
) -> Iterator[tuple[Server, Path]]:
    """The module's tuner server, on the loopback address its HOST names."""
    with tuner_server(
        tmp_path_factory, small_demo_library, request.module.HOST, demo_template
    ) as running:
        yield running


def pithos_client(host: str) -> dict[str, str]:
    """Pithos's `android-generic` client (its data.py), as its force-client setting gives it,
    with the rpcUrl pointing at a test server: Pithos builds `proto + rpcUrl + query`."""
    return {
        "deviceModel": "android-generic",
        "username": "android",
        "password": "AC7IBG09A3DTSYM4R41UJWL07VLN8JI7",
        "rpcUrl": f"://{host}/services/json/?",
        "encryptKey": "6#26FRL$ZWD",
        "decryptKey": "R=U!LH$O2B#",
        "version": "5",
    }
