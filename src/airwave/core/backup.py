"""`airwave backup` / `airwave restore`: database, signing keys, ad files and config in one archive.

The archive is a gzip'd tar: `manifest.json` first (format, time, database kind, schema revision,
every other member with its size and SHA-256), then `database/…`, `files/…` and `config/…`.
Restoring verifies every checksum before anything in the target is touched.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
import tempfile
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from airwave import __version__
from airwave.audio.signing import KEY_FILE
from airwave.config import ADS_DIR, Settings
from airwave.core.accounts.app_passwords import KEY_FILE as APP_PASSWORD_KEY_FILE
from airwave.store import backup as store
from airwave.store.db import Database

FORMAT = 1
MANIFEST = "manifest.json"
_DB_MEMBER = {"sqlite": "database/airwave.db", "postgresql": "database/airwave.pgdump"}


class BackupError(Exception):
    """A backup or restore that cannot go ahead; the message is for the operator."""


@dataclass
class Manifest:
    """What an archive holds; written first so a reader knows the contents before unpacking."""

    database: str
    revision: str | None
    data_dir: str
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    airwave_version: str = __version__
    format: int = FORMAT
    pg_schema: str | None = None
    pg_trgm_schema: str | None = None
    config_file: str | None = None  # archive member holding the TOML settings, when one was in use
    files: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> bytes:
        return json.dumps(self.__dict__, indent=1).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Manifest:
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else None
            raise BackupError(
                f"unsupported backup format {found!r}; this Airwave reads format {FORMAT}"
            )
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        try:
            return cls(**known)
        except TypeError as exc:
            raise BackupError(f"the backup's manifest is incomplete: {exc}") from None


@dataclass(frozen=True)
class RestoreReport:
    manifest: Manifest
    migrated_to: (
        str | None
    )  # the revision migrations brought the restored database to, when they ran
    files: int


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _data_files(data_dir: Path) -> list[tuple[Path, str]]:
    """Keys and operator files of the data dir that the database alone cannot recreate."""
    found: list[tuple[Path, str]] = []
    for name in (KEY_FILE, APP_PASSWORD_KEY_FILE):
        keys = data_dir / name
        if keys.is_file():
            found.append((keys, f"files/{name}"))
    ads = data_dir / ADS_DIR
    if ads.is_dir():
        for path in sorted(p for p in ads.rglob("*") if p.is_file() and not p.name.startswith(".")):
            found.append((path, f"files/{path.relative_to(data_dir).as_posix()}"))
    return found


def create_backup(settings: Settings, out: Path) -> Manifest:
    """Write a consistent backup of a (possibly serving) instance to `out` once it is complete."""
    url = settings.resolved_database_url
    try:
        kind = store.kind_of(url)
    except store.StoreBackupError as exc:
        raise BackupError(str(exc)) from None
    out = out.resolve()
    if out.is_dir():
        raise BackupError(f"{out} is a directory; give the archive's file name")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".airwave-backup-", dir=out.parent) as tmp:
        db_file = Path(tmp) / PurePosixPath(_DB_MEMBER[kind]).name
        try:
            # the database first: the signing keys copied afterwards are never older than its URLs
            snap = (
                store.sqlite_snapshot(url, db_file)
                if kind == "sqlite"
                else store.postgres_dump(url, db_file)
            )
        except store.StoreBackupError as exc:
            raise BackupError(str(exc)) from None
        manifest = Manifest(
            kind,
            snap.revision,
            str(settings.data_dir.resolve()),
            pg_schema=snap.schema,
            pg_trgm_schema=snap.trgm_schema,
        )
        members: list[tuple[Path, str]] = [(db_file, _DB_MEMBER[kind])]
        staged = Path(tmp) / "files"
        for source, name in _data_files(settings.data_dir):
            copy = staged / name  # copied once, so checksum and archive see the same bytes
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)
            members.append((copy, name))
        if settings.config_file is not None and Path(settings.config_file).is_file():
            name = f"config/{Path(settings.config_file).name}"
            members.append((Path(settings.config_file), name))
            manifest.config_file = name
        for path, name in members:
            manifest.files.append(
                {"name": name, "size": path.stat().st_size, "sha256": _sha256(path)}
            )
        partial = Path(tmp) / "archive.tar.gz"
        with tarfile.open(partial, "w:gz") as tar:
            info = tarfile.TarInfo(MANIFEST)
            raw = manifest.to_json()
            info.size, info.mtime, info.mode = len(raw), int(datetime.now().timestamp()), 0o600
            tar.addfile(info, io.BytesIO(raw))
            for path, name in members:
                tar.add(path, arcname=name, recursive=False)
        partial.chmod(0o600)  # it holds the signing keys
        partial.replace(out)
    return manifest


def read_manifest(archive: Path) -> Manifest:
    """The manifest of an archive, without unpacking the rest."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            return _manifest_of(tar, archive)
    except FileNotFoundError:
        raise BackupError(f"{archive}: no such file") from None
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise _damaged(archive, exc) from None


def _safe(name: str) -> bool:
    """A member name that stays inside the folders a restore writes to."""
    parts = PurePosixPath(name).parts
    return (
        len(parts) >= 2
        and parts[0] in ("database", "files", "config")
        and ".." not in parts
        and not name.startswith("/")
    )


def _damaged(archive: Path, exc: BaseException) -> BackupError:
    """The error for an unreadable archive, with the first line of the reader's complaint."""
    reason = (
        str(exc).strip().splitlines()[0].rstrip(":") if str(exc).strip() else type(exc).__name__
    )
    return BackupError(f"{archive} is not an Airwave backup or is damaged ({reason})")


def _manifest_of(tar: tarfile.TarFile, archive: Path) -> Manifest:
    member = tar.next()
    if member is None or member.name != MANIFEST or not member.isfile():
        raise BackupError(f"{archive} is not an Airwave backup (it does not start with {MANIFEST})")
    handle = tar.extractfile(member)
    assert handle is not None
    try:
        return Manifest.from_json(handle.read())
    except (ValueError, UnicodeDecodeError) as exc:
        raise BackupError(f"{archive}: the manifest is not valid JSON: {exc}") from None


def _unpack(archive: Path, into: Path) -> Manifest:
    """Extract the listed members into `into` and check sizes and checksums; nothing else goes."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            manifest = _manifest_of(tar, archive)
            expected = {f["name"]: f for f in manifest.files}
            seen: set[str] = set()
            seen_manifest = False
            for member in tar:
                name = member.name
                if name == MANIFEST and not seen_manifest:
                    seen_manifest = True
                    continue
                if name not in expected or name in seen or not member.isfile() or not _safe(name):
                    raise BackupError(
                        f"{archive}: unexpected member {name!r} (not in the manifest)"
                    )
                seen.add(name)
                target = into / PurePosixPath(name)  # names come from the manifest's own list only
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                with open(target, "wb") as sink:
                    shutil.copyfileobj(source, sink)
    except BackupError:
        raise
    except FileNotFoundError:
        raise BackupError(f"{archive}: no such file") from None
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise _damaged(archive, exc) from None
    missing = sorted(set(expected) - seen)
    if missing:
        raise BackupError(f"{archive} is damaged or incomplete: missing {', '.join(missing)}")
    for name, entry in expected.items():
        path = into / PurePosixPath(name)
        if path.stat().st_size != entry["size"] or _sha256(path) != entry["sha256"]:
            raise BackupError(f"{archive} is damaged: {name} does not match its checksum")
    if _DB_MEMBER.get(manifest.database) not in expected:
        raise BackupError(f"{archive}: the manifest names no {manifest.database} database")
    return manifest


def restore_backup(settings: Settings, archive: Path, *, force: bool = False) -> RestoreReport:
    """Restore an archive onto this instance's data dir and database (no server running on them)."""
    url = settings.resolved_database_url
    try:
        kind = store.kind_of(url)
    except store.StoreBackupError as exc:
        raise BackupError(str(exc)) from None
    data_dir = settings.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".airwave-restore-", dir=data_dir) as tmp:
        staged = Path(tmp)
        manifest = _unpack(archive, staged)
        if manifest.database != kind:
            raise BackupError(
                f"{archive} holds a {manifest.database} database but this instance uses {kind}; "
                f"set database_url to a {manifest.database} database to restore it"
            )
        if not store.known_revision(manifest.revision):
            raise BackupError(
                f"the backup's schema revision {manifest.revision} is newer than this Airwave "
                f"({__version__}) knows; restore it with the version that made it "
                f"({manifest.airwave_version}) or newer"
            )
        dump = staged / PurePosixPath(_DB_MEMBER[kind])
        try:
            if kind == "sqlite":
                if store.sqlite_revision_of(dump) != manifest.revision:
                    raise BackupError(
                        f"{archive} is damaged: the database's revision differs from the manifest's"
                    )
                if store.sqlite_has_database(url) and not force:
                    raise BackupError(
                        f"{store.sqlite_path(url)} already exists; use --force to replace it"
                    )
                store.sqlite_install(dump, url)
            else:
                if manifest.pg_schema is None:
                    raise BackupError(f"{archive}: the manifest does not name the dumped schema")
                store.postgres_restore(
                    url, dump, manifest.pg_schema, manifest.pg_trgm_schema, force=force
                )
        except store.StoreBackupError as exc:
            raise BackupError(str(exc)) from None
        files = 0
        for entry in manifest.files:
            name = PurePosixPath(entry["name"])
            if name.parts[0] == "files":
                target = data_dir.joinpath(*name.parts[1:])
            elif name.parts[0] == "config":
                target = (
                    data_dir / name.name
                )  # the operator points --config / AIRWAVE_CONFIG_FILE at it
            else:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(staged / name, target)
            if target.name in (KEY_FILE, APP_PASSWORD_KEY_FILE):
                target.chmod(0o600)
            files += 1
    database = Database(url)
    try:
        migrated = None
        if manifest.revision != store.head_revision():
            database.migrate()
            migrated = store.head_revision()
    finally:
        database.dispose()
    old_ads = str(Path(manifest.data_dir) / ADS_DIR) + "/"
    store.rebase_paths(url, old_ads, str(data_dir.resolve() / ADS_DIR) + "/")
    return RestoreReport(manifest, migrated, files)
