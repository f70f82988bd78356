"""Copying a live database out and back in: SQLite's backup API, pg_dump/pg_restore."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url

from airwave.store.db import _alembic_config

SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


class StoreBackupError(Exception):
    """The database could not be copied out or in; the message says why in operator terms."""


@dataclass(frozen=True)
class Snapshot:
    """A database copied to one file, with what a restore needs to know about it."""

    kind: str  # "sqlite" or "postgresql"
    path: Path
    revision: str | None
    schema: str | None = None  # PostgreSQL: the schema the tables live in
    trgm_schema: str | None = None  # PostgreSQL: where the pg_trgm extension lives


def kind_of(url: str) -> str:
    """`sqlite` or `postgresql`: the backends Airwave runs on."""
    backend = make_url(url).get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise StoreBackupError(f"backups support SQLite and PostgreSQL, not {backend}")
    return backend


def head_revision() -> str | None:
    """The newest schema revision this version of Airwave knows."""
    return ScriptDirectory.from_config(_alembic_config()).get_current_head()


def known_revision(revision: str | None) -> bool:
    """True when this version's migrations contain `revision` (None: an unmigrated database)."""
    if revision is None:
        return True
    try:
        return ScriptDirectory.from_config(_alembic_config()).get_revision(revision) is not None
    except Exception:  # alembic raises its own errors for unknown or malformed ids
        return False


# ---------------------------------------------------------------- SQLite


def sqlite_path(url: str) -> Path:
    database = make_url(url).database
    if not database or database == ":memory:":
        raise StoreBackupError("an in-memory SQLite database cannot be backed up or restored")
    return Path(database)


def sqlite_snapshot(url: str, dest: Path) -> Snapshot:
    """Copy a (possibly busy, WAL-mode) SQLite database through the backup API into one file.

    One backup step copies every page inside a single read transaction, so the copy is the database
    as of one commit; WAL readers do not block the server's writers meanwhile.
    """
    source_path = sqlite_path(url)
    if not source_path.is_file():
        raise StoreBackupError(f"there is no database at {source_path}")
    source = sqlite3.connect(f"file:{source_path}?mode=ro", uri=True, timeout=30)
    try:
        target = sqlite3.connect(dest)
        try:
            source.backup(target, pages=-1)
            target.execute(
                "PRAGMA journal_mode=DELETE"
            )  # a single file, whatever mode the source was in
            check = target.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise StoreBackupError(f"the copied database failed its integrity check: {check}")
            revision = _sqlite_revision(target)
        finally:
            target.close()
    except sqlite3.Error as exc:
        raise StoreBackupError(f"cannot copy {source_path}: {exc}") from None
    finally:
        source.close()
    return Snapshot("sqlite", dest, revision)


def _sqlite_revision(conn: sqlite3.Connection) -> str | None:
    try:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError:
        return None
    return row[0] if row else None


def sqlite_revision_of(path: Path) -> str | None:
    """The schema revision recorded in a SQLite file (None when it has none)."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return _sqlite_revision(conn)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StoreBackupError(f"{path.name} is not a readable SQLite database: {exc}") from None


def sqlite_has_database(url: str) -> bool:
    path = sqlite_path(url)
    return path.is_file() and path.stat().st_size > 0


def sqlite_install(snapshot: Path, url: str) -> None:
    """Put a snapshot in place of the instance's database file (no server may be running on it)."""
    path = sqlite_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(f".{path.name}.restoring")
    shutil.copyfile(snapshot, staged)
    for suffix in SQLITE_SIDECARS:  # a stale WAL would be replayed over the restored pages
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.replace(staged, path)


# ---------------------------------------------------------------- PostgreSQL


def _libpq(url: str) -> tuple[str, dict[str, str]]:
    """A libpq URI for the pg_* tools; the password goes in the environment instead."""
    parsed: URL = make_url(url)
    env = dict(os.environ)
    if parsed.password is not None:
        env["PGPASSWORD"] = str(parsed.password)
    uri = parsed.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    return uri, env


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise StoreBackupError(
            f"{name} is not on PATH; install the PostgreSQL client tools "
            f'(the same major version as the server or newer) or see README "Backups"'
        )
    return found


def _run(cmd: list[str], env: dict[str, str], what: str) -> str:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise StoreBackupError(f"{what} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def _pg_facts(url: str) -> tuple[str, str | None, str | None, list[str]]:
    """The current schema, its alembic revision, pg_trgm's schema and the schema's tables."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            schema = conn.execute(text("SELECT current_schema()")).scalar_one()
            tables = list(
                conn.execute(
                    text(
                        "SELECT tablename FROM pg_tables WHERE schemaname = :s ORDER BY tablename"
                    ),
                    {"s": schema},
                ).scalars()
            )
            revision = None
            if "alembic_version" in tables:
                revision = conn.execute(
                    text(f'SELECT version_num FROM "{schema}".alembic_version')
                ).scalar_one_or_none()
            trgm = conn.execute(
                text(
                    "SELECT extnamespace::regnamespace::text FROM pg_extension "
                    "WHERE extname = 'pg_trgm'"
                )
            ).scalar_one_or_none()
    except Exception as exc:
        raise StoreBackupError(f"cannot reach the database: {exc}") from None
    finally:
        engine.dispose()
    return schema, revision, trgm, tables


def postgres_dump(url: str, dest: Path) -> Snapshot:
    """pg_dump the instance's schema (custom format: one consistent snapshot; writers go on)."""
    schema, _, trgm, tables = _pg_facts(url)
    if not tables:
        raise StoreBackupError(f"schema {schema} has no tables: nothing to back up")
    uri, env = _libpq(url)
    _run(
        [
            _tool("pg_dump"),
            "--format=custom",
            "--no-owner",
            "--no-privileges",
            f"--schema={schema}",
            f"--file={dest}",
            f"--dbname={uri}",
        ],
        env,
        "pg_dump",
    )
    # read the revision from the dump itself, so it is the one of the snapshot
    revision = _dump_revision(dest, schema, env)
    return Snapshot("postgresql", dest, revision, schema, trgm)


def _dump_revision(dump: Path, schema: str, env: dict[str, str]) -> str | None:
    script = _run(
        [
            _tool("pg_restore"),
            "--data-only",
            f"--schema={schema}",
            "--table=alembic_version",
            "--file=-",
            str(dump),
        ],
        env,
        "pg_restore (reading the schema revision)",
    )
    lines = script.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("COPY ") and "alembic_version" in line and i + 1 < len(lines):
            value = lines[i + 1].strip()
            return None if value == "\\." else value
    return None


def postgres_has_database(url: str) -> bool:
    return bool(_pg_facts(url)[3])


def postgres_restore(
    url: str, dump: Path, source_schema: str, trgm_schema: str | None, *, force: bool
) -> None:
    """Load a dump into the URL's current schema; with force, its tables are dropped first."""
    target, _, trgm, tables = _pg_facts(url)
    uri, env = _libpq(url)
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            if (
                target != source_schema
                and conn.execute(
                    text("SELECT 1 FROM pg_namespace WHERE nspname = :s"), {"s": source_schema}
                ).first()
            ):
                raise StoreBackupError(
                    f"the backup's schema {source_schema} exists in this database; restore into it "
                    f"(put it first on the search_path) or drop it before restoring into {target}"
                )
            if tables and not force:
                raise StoreBackupError(
                    f"schema {target} already has tables; use --force to replace them"
                )
            for table in tables:
                conn.execute(text(f'DROP TABLE IF EXISTS "{target}"."{table}" CASCADE'))
            if trgm is None:
                where = f' SCHEMA "{trgm_schema}"' if trgm_schema else ""
                conn.execute(text(f"CREATE EXTENSION IF NOT EXISTS pg_trgm{where}"))
        listing = _run([_tool("pg_restore"), "--list", str(dump)], env, "pg_restore --list")
        # extensions are the database's, not the schema's; the schema exists when restoring into it
        skip = (" EXTENSION - ", "COMMENT - EXTENSION ") + (
            (" SCHEMA - ", "COMMENT - SCHEMA ") if target == source_schema else ()
        )
        keep = [line for line in listing.splitlines() if not any(s in line for s in skip)]
        toc = dump.with_name(dump.name + ".toc")
        toc.write_text("\n".join(keep) + "\n")
        _run(
            [
                _tool("pg_restore"),
                "--no-owner",
                "--no-privileges",
                "--exit-on-error",
                "--single-transaction",
                f"--use-list={toc}",
                f"--dbname={uri}",
                str(dump),
            ],
            env,
            "pg_restore",
        )
        if target != source_schema:
            with engine.begin() as conn:
                moved = (
                    conn.execute(
                        text("SELECT tablename FROM pg_tables WHERE schemaname = :s"),
                        {"s": source_schema},
                    )
                    .scalars()
                    .all()
                )
                for (
                    table
                ) in moved:  # indexes, constraints and owned sequences move with their table
                    conn.execute(
                        text(f'ALTER TABLE "{source_schema}"."{table}" SET SCHEMA "{target}"')
                    )
                conn.execute(text(f'DROP SCHEMA "{source_schema}"'))
    except StoreBackupError:
        raise
    except Exception as exc:
        raise StoreBackupError(f"cannot restore into schema {target}: {exc}") from None
    finally:
        engine.dispose()


def rebase_paths(url: str, old_prefix: str, new_prefix: str) -> int:
    """Point stored file paths under the old data dir (ad audio and art copies) at the new one."""
    if old_prefix == new_prefix:
        return 0
    engine = create_engine(url)
    changed = 0
    try:
        with engine.begin() as conn:
            for table, column in (("ad_campaigns", "path"), ("artwork", "source_path")):
                result = conn.execute(
                    text(
                        f"UPDATE {table} SET {column} = :new || substr({column}, :cut) "
                        f"WHERE substr({column}, 1, :n) = :old"
                    ),
                    {
                        "new": new_prefix,
                        "old": old_prefix,
                        "n": len(old_prefix),
                        "cut": len(old_prefix) + 1,
                    },
                )
                changed += result.rowcount or 0
    finally:
        engine.dispose()
    return changed
