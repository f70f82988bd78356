"""Where a test instance keeps its data: SQLite in a data dir, or a throw-away PostgreSQL schema."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

POSTGRES_URL = os.environ.get(
    "AIRWAVE_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def postgres_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL.replace("+psycopg", ""), connect_timeout=2):
            return True
    except Exception:
        return False


def backend_params() -> list:
    """The backends a storage test runs on, as pytest params: SQLite, and PostgreSQL when it is
    reachable (skipped, and said so, when it is not)."""
    import pytest

    return [
        "sqlite",
        pytest.param(
            "postgresql",
            marks=pytest.mark.skipif(not postgres_available(), reason="no PostgreSQL"),
        ),
    ]


class PostgresSchema:
    """A throw-away schema in the test database; the URL puts it first on the search path."""

    def __init__(self) -> None:
        import psycopg

        self.name = "aw_" + secrets.token_hex(6)
        self._plain = POSTGRES_URL.replace("+psycopg", "")
        with psycopg.connect(self._plain, autocommit=True) as conn:
            # pg_trgm lives in public for every test schema (a schema's own copy would die with it)
            where = conn.execute(
                "SELECT extnamespace::regnamespace::text FROM pg_extension "
                "WHERE extname = 'pg_trgm'"
            ).fetchone()
            if where is None:
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
                except psycopg.errors.UniqueViolation:
                    pass  # another test process created it at the same moment
            elif where[0] != "public":
                conn.execute("ALTER EXTENSION pg_trgm SET SCHEMA public")
            conn.execute(f'CREATE SCHEMA "{self.name}"')
        sep = "&" if "?" in POSTGRES_URL else "?"
        self.url = f"{POSTGRES_URL}{sep}options=-csearch_path%3D{self.name}%2Cpublic"

    @property
    def plain_url(self) -> str:
        """The test database's URL for libpq tools (psql, pg_dump)."""
        return self._plain

    def is_empty(self) -> bool:
        """No table yet: nothing has migrated or restored into this schema."""
        import psycopg

        with psycopg.connect(self._plain, autocommit=True) as conn:
            found = conn.execute(
                "SELECT 1 FROM information_schema.tables WHERE table_schema = %s LIMIT 1",
                (self.name,),
            ).fetchone()
        return found is None

    def execute(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self._plain, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{self.name}", public')
            conn.execute(sql)

    def drop(self) -> None:
        import psycopg

        with psycopg.connect(self._plain, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.name}" CASCADE')


@dataclass
class Backend:
    """Where an instance keeps its data: SQLite in the data dir, or a PostgreSQL schema."""

    kind: str
    data_dir: Path
    pg: PostgresSchema | None = None

    @property
    def env(self) -> dict[str, str]:
        env = {"AIRWAVE_DATA_DIR": str(self.data_dir)}
        if self.pg is not None:
            env["AIRWAVE_DATABASE_URL"] = self.pg.url
        return env

    def execute(self, sql: str) -> None:
        """Run SQL on the instance's database from outside the server."""
        if self.pg is not None:
            self.pg.execute(sql)
        else:
            import sqlite3

            with sqlite3.connect(self.data_dir / "airwave.db") as conn:
                conn.execute(sql)
