"""Fixtures: each database test runs on SQLite and, when reachable, on PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from support import Backend, PostgresSchema, Server, postgres_available

_PG = postgres_available()
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.skipif(not _PG, reason="no PostgreSQL"))]


@pytest.fixture(params=BACKENDS, scope="module")
def backend_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def make_backend(backend_kind: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[], Backend]]:
    """Fresh, independent instances' storage on the module's backend."""
    made: list[Backend] = []

    def make() -> Backend:
        data_dir = tmp_path_factory.mktemp("airwave")
        backend = Backend(backend_kind, data_dir, PostgresSchema() if backend_kind == "postgresql" else None)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        if backend.pg is not None:
            backend.pg.drop()


@pytest.fixture(scope="module")
def start_server(make_backend: Callable[[], Backend]) -> Iterator[Callable[..., Server]]:
    """Start `airwave serve` with extra args/env on a fresh instance; stopped after the module."""
    running: list[Server] = []

    def start(*args: str, env: dict[str, str] | None = None, backend: Backend | None = None) -> Server:
        server = Server(backend or make_backend(), list(args), dict(env or {})).start()
        running.append(server)
        return server

    yield start
    for server in running:
        server.stop()


@pytest.fixture(scope="module")
def server(start_server: Callable[..., Server]) -> Server:
    """A server with open registration, shared by a module's tests."""
    return start_server("--open-registration")


def pytest_configure(config: pytest.Config) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
