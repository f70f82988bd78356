"""Replays of published third-party clients of the REST API, each from its own source.

Every module here follows one client: it sends what that client's source sends (path, headers,
cookies, body fields, `null` vs absent vs `""`, order of calls) and reads each answer as strictly
as the client's language does (see `readers.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
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
def airwave(tmp_path_factory: pytest.TempPathFactory, small_demo_library: Path) -> Iterator[Server]:
    """A server on the demo library, as a new user runs it: the defaults, nothing loosened.
    One per test process: every replay signs in with accounts of its own."""
    backend = Backend("sqlite", tmp_path_factory.mktemp("clients"), None)
    server = Server(backend, ["--library", str(small_demo_library)]).start()
    try:
        wait_indexed(server)
        yield server
    finally:
        server.stop()


def make_account(server: Server, tier: str = "free") -> Account:
    """A listener made by the operator (`airwave user add`), as a client's user would have."""
    account = Account(unique("listener"), "correct horse battery")
    made = server.cli(
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
