"""The data directory and what holds secrets in it (password hashes, URL-signing keys) are
owner-only."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import Backend, Server

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The common umask 022, under which files used to come out world-readable."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _secret_files(data_dir: Path, sqlite: bool) -> list[Path]:
    names = ["url-signing-keys.json"] + (
        ["airwave.db", "airwave.db-wal", "airwave.db-shm"] if sqlite else []
    )
    files = [data_dir / name for name in names]
    missing = [f.name for f in files if not f.exists()]
    assert not missing, f"expected in {data_dir}: {missing}"
    return files


def _fresh(make_backend: Callable[[], Backend]) -> Backend:
    backend = make_backend()
    backend.data_dir = backend.data_dir / "instance" / "data"  # not there yet: the CLI creates it
    return backend


def test_a_fresh_data_dir_is_owner_only(make_backend: Callable[[], Backend]) -> None:
    backend = _fresh(make_backend)
    server = Server(backend).start()
    try:
        assert server.cli("user", "list").returncode == 0
        assert server.cli("secret", "list").returncode == 0
        assert _mode(backend.data_dir) == 0o700
        for path in _secret_files(backend.data_dir, backend.pg is None):
            assert _mode(path) == 0o600, path.name
    finally:
        server.stop()


def test_start_makes_an_existing_data_dir_owner_only(make_backend: Callable[[], Backend]) -> None:
    backend = _fresh(make_backend)
    tool = Server(backend)
    assert tool.cli("secret", "list").returncode == 0
    assert tool.cli("user", "list").returncode == 0
    server = Server(backend).start()  # leaves -wal and -shm behind when killed
    server.stop(9)
    secrets = _secret_files(backend.data_dir, backend.pg is None)
    for path in [backend.data_dir, *secrets]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # as an older version made them
    server = Server(backend).start()
    try:
        assert _mode(backend.data_dir) == 0o700
        for path in secrets:
            assert _mode(path) == 0o600, path.name
        assert server.wait_for_log(lambda line: "made owner-only" in line)
    finally:
        server.stop()
