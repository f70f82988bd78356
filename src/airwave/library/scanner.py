"""Folder of music -> catalogue: incremental, resumable, tag reading in worker processes."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import Connection, Row, delete, func, insert, or_, select, text, update
from sqlalchemy.orm import Session

from airwave.library import containment, names
from airwave.library.containment import IMAGE_MAX_BYTES
from airwave.library.tags import (
    AUDIO_EXTENSIONS,
    EmbeddedPicture,
    ReadError,
    TrackTags,
    describe_image,
    quick_hash,
)
from airwave.library.workers import TagJob, read_all
from airwave.store import bulk, search_entries, stamps
from airwave.store.db import Database
from airwave.store.models import (
    Album,
    Artist,
    Artwork,
    Genre,
    LibraryFile,
    LibraryRoot,
    SearchEntry,
    Track,
    TrackGenre,
)

BATCH = 500
_by_path = attrgetter("path")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".webp", ".gif")
COVER_NAMES = ("cover", "folder", "front", "album")
LYRICS_EXTENSIONS = (".lrc", ".txt")
PLAYLIST_EXTENSIONS = (".m3u", ".m3u8", ".xspf")
VARIOUS_ARTISTS = "Various Artists"
Progress = Callable[[str, int, int], None]


@dataclass
class ScanReport:
    files_seen: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    moved: int = 0
    tags_read: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    known_bad: int = 0
    seconds: float = 0.0
    interrupted: bool = False
    playlist_files: int = 0  # seen in the folders: none, and there are no playlists to follow

    @property
    def files_per_second(self) -> float:
        return self.files_seen / self.seconds if self.seconds else 0.0


class FoundFile(NamedTuple):
    """An audio file the walk found (made with tuple.__new__ there: no Python call per file)."""

    path: str
    size: int
    mtime_ns: int
    sidecar_lyrics: str | None


@dataclass
class Walk:
    files: list[FoundFile] = field(default_factory=list)
    covers: dict[str, str] = field(default_factory=dict)  # directory -> cover image path
    artist_images: dict[str, str] = field(default_factory=dict)  # directory -> artist image path
    errors: list[tuple[str, str]] = field(default_factory=list)
    roots: containment.Roots = field(default_factory=lambda: containment.Roots(()))
    playlist_files: int = 0  # .m3u, .m3u8, .xspf seen (core.library keeps playlists of them)


def walk(roots: Iterable[Path]) -> Walk:
    """Every audio file under the roots (following links that stay inside them, never looping),
    with its neighbours; links out, non-regular and over-size files go to `errors`, unread.

    This runs over every file of the library at every rescan, so its loop is kept lean: an
    unchanged library of 20,000 files costs little more than their stat calls."""
    absolute = [str(Path(r).absolute()) for r in roots]
    result = Walk(roots=containment.Roots(absolute))
    add, new_tuple = result.files.append, tuple.__new__
    errors = result.errors
    audio_ext, image_ext = AUDIO_EXTENSIONS, IMAGE_EXTENSIONS
    lyrics_ext, playlist_ext = LYRICS_EXTENSIONS, PLAYLIST_EXTENSIONS
    is_regular = stat.S_ISREG
    join = os.path.join
    seen_dirs: set[str] = set()  # real paths: a folder reached twice (through links) is read once
    # (folder, its real path when known): a folder that is no link lies where its parent really
    # is, so only links and the roots are resolved (realpath costs a stat per path component),
    # and only they can lead outside the roots
    stack: list[tuple[str, str | None]] = [(a, None) for a in absolute]
    while stack:
        directory, real_dir = stack.pop()
        try:
            if real_dir is None:
                real_dir = os.path.realpath(directory)
                if real_dir not in seen_dirs and not result.roots.allows(real_dir):
                    errors.append(
                        (directory, f"folder resolves outside the library (to {real_dir})")
                    )
                    seen_dirs.add(real_dir)
                    continue
            if real_dir in seen_dirs:
                continue
            seen_dirs.add(real_dir)
            entries = list(os.scandir(directory))
        except OSError as exc:
            errors.append((directory, f"cannot read directory: {exc.strerror or exc}"))
            continue
        # a name that is not valid UTF-8 (kept by Python as surrogates) makes its path unusable;
        # names and folders that are ASCII need no check
        plain_dir = directory.isascii()
        by_stem: dict[str, list[str]] | None = None
        audio: list[os.DirEntry[str]] = []
        for entry in entries:
            name = entry.name
            if name[0] == ".":
                continue
            try:
                if entry.is_dir():
                    stack.append((entry.path, None if entry.is_symlink() else join(real_dir, name)))
                    continue
            except OSError:
                continue
            dot = name.rfind(".")
            ext = name[dot:].lower() if dot > 0 else ""
            if ext in audio_ext:
                if not (plain_dir and name.isascii()):
                    try:
                        entry.path.encode("utf-8")
                    except UnicodeEncodeError:
                        errors.append(
                            (
                                entry.path.encode("utf-8", "surrogateescape").decode(
                                    "utf-8", "replace"
                                ),
                                "file name is not valid UTF-8; rename it to include it",
                            )
                        )
                        continue
                audio.append(entry)
            elif ext in image_ext:
                low = name[:dot].lower()
                if low in COVER_NAMES:
                    current = result.covers.get(directory)
                    better = current is None or COVER_NAMES.index(low) < COVER_NAMES.index(
                        Path(current).stem.lower()
                    )
                    if better and _acceptable(entry, real_dir, result, IMAGE_MAX_BYTES):
                        result.covers[directory] = entry.path
                elif low == "artist" and _acceptable(entry, real_dir, result, IMAGE_MAX_BYTES):
                    result.artist_images[directory] = entry.path
            elif ext in lyrics_ext:
                if by_stem is None:
                    by_stem = defaultdict(list)
                by_stem[name[:dot]].append(entry.path)
            elif ext in playlist_ext:
                result.playlist_files += 1
        for entry in audio:
            try:
                st = entry.stat()
            except OSError as exc:
                errors.append((entry.path, f"cannot stat: {exc.strerror or exc}"))
                continue
            # A regular file that is no link lies in this (allowed) folder and audio has no size
            # cap: nothing more to judge. Links and anything else are judged in full.
            if (entry.is_symlink() or not is_regular(st.st_mode)) and not _acceptable(
                entry, real_dir, result, containment.AUDIO_MAX_BYTES, st
            ):
                continue
            lyrics = None
            if by_stem:
                sidecars = sorted(
                    by_stem.get(os.path.splitext(entry.name)[0], []),
                    key=lambda p: not p.lower().endswith(".lrc"),
                )
                lyrics = next(
                    (
                        p
                        for p in sidecars
                        if _acceptable_path(p, result, containment.LYRICS_MAX_BYTES)
                    ),
                    None,
                )
            add(new_tuple(FoundFile, (entry.path, st.st_size, st.st_mtime_ns, lyrics)))
    return result  # in no particular order: a scan sorts the files it reads


def _acceptable(
    entry: os.DirEntry[str],
    real_dir: str,
    result: Walk,
    limit: int | None,
    st: os.stat_result | None = None,
) -> bool:
    """Whether a directory entry may be read; refusals go to the walk's errors. Cheap for files."""
    try:
        if entry.is_symlink():
            return _acceptable_path(entry.path, result, limit)
        st = st or entry.stat(follow_symlinks=True)
        containment.judge(st, os.path.join(real_dir, entry.name), result.roots, limit)
    except containment.Refused as exc:
        result.errors.append((entry.path, str(exc)))
        return False
    except OSError as exc:
        result.errors.append((entry.path, f"cannot stat: {exc.strerror or exc}"))
        return False
    return True


def _acceptable_path(path: str, result: Walk, limit: int | None) -> bool:
    try:
        containment.check(path, result.roots, limit)
    except containment.Refused as exc:
        result.errors.append((path, str(exc)))
        return False
    except OSError as exc:
        result.errors.append((path, f"cannot stat: {exc.strerror or exc}"))
        return False
    return True


def fingerprint(artist: str, album: str, title: str, duration: float) -> str:
    """Identity of a recording from its tags, for recognising a moved file."""
    key = "|".join(
        [
            names.merge_key(artist),
            names.merge_key(album),
            names.search_key(title),
            str(round(duration)),
        ]
    )
    return hashlib.sha1(key.encode()).hexdigest()


# PostgreSQL: `count` new track ids from the tracks table's own sequence
_NEXT_TRACK_IDS = text(
    "SELECT nextval(pg_get_serial_sequence('tracks', 'id')) FROM generate_series(1, :count)"
)
# what a rescan compares every file with (`bad`: the file was unreadable)
_KNOWN_STATS = "SELECT path, size, mtime_ns, error IS NOT NULL AS bad FROM library_files"
# what it needs of the files it looks at more closely
_KNOWN_FILES = select(
    LibraryFile.id,
    LibraryFile.path,
    LibraryFile.size,
    LibraryFile.mtime_ns,
    LibraryFile.content_hash,
    LibraryFile.track_id,
    LibraryFile.error,
)


Stats = dict[str, tuple[int, int, object]]  # path -> size, mtime_ns, unreadable (truthy)


class KnownFiles:
    """What a rescan compares every file with (`_KNOWN_STATS` of the files under its folders),
    kept by a process that scans again and again (a server) while the catalogue stamp stays the
    one read before them: every transaction that changes library_files sets a new stamp
    (store/stamps.py), in whichever process or host it runs, so what is kept is the table as it
    is. An unchanged rescan then reads one row instead of every file's."""

    LIMIT = 100_000  # files: a larger library is read each time (~35 MB kept per 100,000)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[object, ...] | None = None
        self._stats: Stats | None = None

    def stats(self, db: Session, prefixes: tuple[str, ...], read: Callable[[], Stats]) -> Stats:
        """What was kept, while the catalogue stamp (read first, in the scan's read: a change
        committed after it sets a new one) is the one it was read under; else `read()`, kept."""
        stamp = stamps.catalog_stamp(db)
        if stamp is None:
            return read()
        key = (db.get_bind().engine.url, stamp, prefixes)
        with self._lock:
            if key == self._key and self._stats is not None:
                return self._stats
        stats = read()
        with self._lock:
            self._key, self._stats = (key, stats) if len(stats) <= self.LIMIT else (None, None)
        return stats


class Scanner:
    """One scan of one library into one database."""

    def __init__(
        self,
        database: Database,
        *,
        now: Callable[[], datetime],
        workers: int | None = None,
        progress: Progress | None = None,
        known_files: KnownFiles | None = None,
    ) -> None:
        self.database = database
        self.now = now
        self.workers = workers if workers is not None else (os.cpu_count() or 1)
        self.progress = progress or (lambda stage, done, total: None)
        self.known_files = known_files

    def scan(self, roots: Sequence[Path], *, full: bool = False) -> ScanReport:
        started = time.perf_counter()
        report = ScanReport()
        self.progress("walking", 0, 0)
        found = walk(roots)
        report.errors.extend(found.errors)
        report.files_seen = len(found.files)
        report.playlist_files = found.playlist_files
        root_prefixes = tuple(str(Path(r).absolute()).rstrip(os.sep) + os.sep for r in roots)
        record_roots(self.database, [str(Path(r).absolute()) for r in roots], self.now())
        to_read: list[FoundFile] = []
        doubtful: list[FoundFile] = []  # known, but its size or time differs
        seen_paths = set()
        unchanged = known_bad = 0
        with self.database.read() as db:
            connection = db.connection()

            def read() -> Stats:
                return _known_stats(connection, root_prefixes)

            kept = self.known_files
            stats = kept.stats(db, root_prefixes, read) if kept is not None else read()
            lookup = stats.get
            for item in found.files:
                path = item.path
                seen_paths.add(path)
                known_stat = lookup(path)
                if known_stat is None:
                    to_read.append(item)
                elif full:
                    to_read.append(item)
                    doubtful.append(item)
                elif known_stat[0] == item.size and known_stat[1] == item.mtime_ns:
                    unchanged += 1
                    if known_stat[2]:
                        known_bad += 1
                else:
                    doubtful.append(item)
            vanished_paths = [path for path in stats if path not in seen_paths]
            known = _known_rows(connection, [f.path for f in doubtful] + vanished_paths)
        touched: list[tuple[int, int]] = []  # (file id, new mtime): content did not change
        if not full:
            for item in doubtful:
                row = known[item.path]
                if (
                    row.size == item.size
                    and row.content_hash
                    and _safe_hash(item, found.roots) == row.content_hash
                ):
                    touched.append((row.id, item.mtime_ns))
                    unchanged += 1
                else:
                    to_read.append(item)
        report.unchanged += unchanged
        report.known_bad += known_bad
        to_read.sort(key=_by_path)  # read and numbered in path order
        vanished = [known[path] for path in vanished_paths]
        writer = CatalogWriter(self.database, self.now(), found)
        if touched:
            writer.touch(touched)
        if vanished:
            report.removed = writer.remove(vanished)
        total = len(to_read)
        self.progress("reading", 0, total)
        done = 0
        batch: list[TrackTags | ReadError] = []
        try:
            covered: set[str] = set()
            jobs: list[TagJob] = []
            for f in to_read:
                folder = os.path.dirname(f.path)
                cover = found.covers.get(folder) if folder not in covered else None
                covered.add(folder)
                jobs.append((f.path, f.sidecar_lyrics, cover, found.roots))
            for result in read_all(jobs, self.workers):
                report.tags_read += 1
                batch.append(result)
                if len(batch) >= BATCH:
                    writer.write(batch, known, report)
                    done += len(batch)
                    batch = []
                    self.progress("reading", done, total)
            if batch:
                writer.write(batch, known, report)
                done += len(batch)
        except KeyboardInterrupt:
            report.interrupted = True
        finally:
            writer.finish(
                changed=bool(report.added or report.updated or report.removed or report.moved)
            )
            self.progress("reading", done, total)
            report.seconds = time.perf_counter() - started
        return report


def _known_stats(connection: Connection, prefixes: tuple[str, ...]) -> Stats:
    """Every known file's size and time under the folders, as the driver's plain tuples: this is
    read at every rescan, and most files are unchanged. Full rows are fetched only for the files
    a scan must look at more closely."""
    cursor = connection.connection.cursor()
    try:
        cursor.execute(_KNOWN_STATS)
        return {
            path: (size, mtime_ns, bad)
            for path, size, mtime_ns, bad in cursor.fetchall()
            if path.startswith(prefixes)
        }
    finally:
        cursor.close()


def record_roots(database: Database, roots: Sequence[str], now: datetime) -> None:
    """Remember the folders scanned: a server without library folders serves only from these."""
    with database.write() as db:
        for root in roots:
            digest = hashlib.sha1(root.encode("utf-8", "surrogateescape")).hexdigest()
            row = db.scalar(select(LibraryRoot).where(LibraryRoot.path_hash == digest))
            if row is None:
                db.add(LibraryRoot(path=root, path_hash=digest, scanned_at=now))
            else:
                row.scanned_at = now


def recorded_roots(database: Database) -> list[str]:
    """The folders scans have recorded."""
    with database.read() as db:
        return list(db.scalars(select(LibraryRoot.path).order_by(LibraryRoot.id)))


def _safe_hash(item: FoundFile, roots: containment.Roots) -> str | None:
    try:
        return quick_hash(item.path, item.size, roots)
    except OSError:
        return None


class CatalogWriter:
    """Batched, idempotent writes of scan results; caches name -> id for artists, albums, genres."""

    def __init__(self, database: Database, now: datetime, found: Walk) -> None:
        self.database = database
        self.now = now
        self.found = found
        self.folder_covers: dict[str, EmbeddedPicture | None] = {}
        self._loaded = False  # the caches are read at the first write: a rescan may have none

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        with self.database.read() as db:
            self.artists = {k: i for i, k in db.execute(select(Artist.id, Artist.name_key))}
            self.albums = {
                (a, k): i
                for i, a, k in db.execute(select(Album.id, Album.artist_id, Album.title_key))
            }
            self.album_art = {
                i for (i,) in db.execute(select(Album.id).where(Album.art_id.is_not(None)))
            }
            self.genres = {k: i for i, k in db.execute(select(Genre.id, Genre.name_key))}
            self.artwork = {h: i for i, h in db.execute(select(Artwork.id, Artwork.content_hash))}
            self.artist_art = {
                i for (i,) in db.execute(select(Artist.id).where(Artist.art_id.is_not(None)))
            }
            self.missing = (
                db.scalar(select(func.count(Track.id)).where(Track.missing_since.is_not(None))) or 0
            )

    # ------------------------------------------------------------------ lookups that create

    def _artist(self, db: Session, name: str, mbid: str | None, folder: str | None) -> int:
        key = names.merge_key(name)[:512]
        found = self.artists.get(key)
        if found is None:
            found = _new_id(
                db,
                Artist,
                {
                    "name": name[:512],
                    "name_key": key,
                    "sort_name": names.sort_name(name)[:512],
                    "mbid": mbid,
                    "folder": folder,
                    "is_composer": False,
                    "created_at": self.now,
                },
            )
            self.artists[key] = found
        if found not in self.artist_art and folder and folder in self.found.artist_images:
            image = self.found.artist_images[folder]
            picture = describe_image(image, self.found.roots)  # rare: one artist.* per folder
            if picture is not None:
                self._link_art(db, Artist, found, picture, image, False)
        return found

    def _album(self, db: Session, artist_id: int, tags: TrackTags, compilation: bool) -> int:
        key = (artist_id, names.merge_key(tags.album)[:512])
        found = self.albums.get(key)
        if found is None:
            found = _new_id(
                db,
                Album,
                {
                    "title": tags.album,
                    "title_key": key[1],
                    "artist_id": artist_id,
                    "year": tags.year,
                    "is_compilation": compilation,
                    "mbid": tags.mbid_album,
                    "created_at": self.now,
                },
            )
            self.albums[key] = found
        if found not in self.album_art:
            directory = os.path.dirname(tags.path)
            if tags.folder_cover is not None:
                self.folder_covers[directory] = tags.folder_cover
            cover_path = self.found.covers.get(directory)
            cover = self.folder_covers.get(directory)
            if cover is None and cover_path:  # the folder's first file was read in an earlier scan
                cover = describe_image(cover_path, self.found.roots)
                self.folder_covers[directory] = cover
            if cover is not None and cover_path:
                self._link_art(db, Album, found, cover, cover_path, False)
            elif tags.picture is not None:
                self._link_art(db, Album, found, tags.picture, tags.path, True)
        return found

    def _genre(self, db: Session, name: str) -> int:
        key = names.merge_key(name)[:128]
        found = self.genres.get(key)
        if found is None:
            found = _new_id(
                db,
                Genre,
                {"name": name[:128], "name_key": key, "category": names.genre_category(name)},
            )
            self.genres[key] = found
        return found

    def _artwork(
        self,
        db: Session,
        content_hash: str,
        source: str,
        embedded: bool,
        width: int,
        height: int,
        colour: str,
    ) -> int:
        found = self.artwork.get(content_hash)
        if found is None:
            found = _new_id(
                db,
                Artwork,
                {
                    "content_hash": content_hash,
                    "source_path": source,
                    "embedded": embedded,
                    "width": width,
                    "height": height,
                    "dominant_color": colour,
                },
            )
            self.artwork[content_hash] = found
        return found

    def _link_art(
        self,
        db: Session,
        model: type[Album] | type[Artist],
        row_id: int,
        picture: EmbeddedPicture,
        source: str,
        embedded: bool,
    ) -> None:
        art_id = self._artwork(
            db,
            picture.content_hash,
            source,
            embedded,
            picture.width,
            picture.height,
            picture.dominant_color,
        )
        table = model.__table__
        db.connection().execute(update(table).where(table.c.id == row_id).values(art_id=art_id))
        (self.album_art if model is Album else self.artist_art).add(row_id)

    # ------------------------------------------------------------------ batches

    def write(self, batch: list[TrackTags | ReadError], known: dict, report: ScanReport) -> None:
        self._load()
        with self.database.write() as db:
            stamps.bump_catalog(db)
            new_files, file_updates, genre_rows, entries = [], [], [], []
            inserts: list[tuple[TrackTags, dict]] = []
            updates: list[dict] = []
            for result in batch:
                row = known.get(result.path)
                if isinstance(result, ReadError):
                    report.errors.append((result.path, result.message))
                    values = {
                        "path": result.path,
                        "path_hash": _path_hash(result.path),
                        "size": result.size,
                        "mtime_ns": result.mtime_ns,
                        "content_hash": None,
                        "track_id": None,
                        "error": result.message,
                        "scanned_at": self.now,
                    }
                    if row is None:
                        new_files.append(values)
                    else:
                        file_updates.append({"id": row.id, **values, "track_id": row.track_id})
                    continue
                track = self._track_values(db, result)
                if row is not None and row.track_id is not None:
                    updates.append({"id": row.track_id, **track})
                    file_updates.append({"id": row.id, **self._file_values(result, row.track_id)})
                    report.updated += 1
                else:
                    inserts.append((result, track))
            if inserts:
                reattached = self._reattach(db, inserts)
                fresh = [(tags, values) for tags, values in inserts if id(tags) not in reattached]
                for tags, values in inserts:
                    if id(tags) in reattached:
                        track_id = reattached[id(tags)]
                        updates.append({"id": track_id, **values})
                        report.moved += 1
                        self._file_row(tags, track_id, known, new_files, file_updates)
                if fresh:
                    ids = self._insert_tracks(db, [values for _, values in fresh])
                    for (tags, _values), track_id in zip(fresh, ids):
                        self._file_row(tags, track_id, known, new_files, file_updates)
                        report.added += 1
                        self._genre_rows(db, tags, track_id, genre_rows)
                        entries.append(self._track_entry(tags, track_id))
            if updates:
                db.execute(update(Track), updates)  # by primary key; rare (changed or moved files)
                ids = [u["id"] for u in updates]
                db.execute(delete(TrackGenre).where(TrackGenre.track_id.in_(ids)))
                db.execute(
                    delete(SearchEntry).where(SearchEntry.kind == "TR", SearchEntry.ref_id.in_(ids))
                )
                by_path = {r.path: r for r in batch if isinstance(r, TrackTags)}
                for u in updates:
                    tags = by_path[u["path"]]
                    self._genre_rows(db, tags, u["id"], genre_rows)
                    entries.append(self._track_entry(tags, u["id"]))
            conn = db.connection()
            bulk.insert_rows(conn, LibraryFile.__table__, new_files)
            if file_updates:
                db.execute(update(LibraryFile), file_updates)
            bulk.insert_rows(conn, TrackGenre.__table__, genre_rows)
            search_entries.add(conn, entries)

    def _insert_tracks(self, db: Session, rows: list[dict]) -> list[int]:
        """Insert tracks, returning their ids in order, as one batched statement on each backend."""
        table = Track.__table__
        if self.database.is_sqlite:
            # The write transaction holds SQLite's only write lock, so ids can be handed out here;
            # RETURNING in parameter order would make SQLAlchemy insert row by row.
            first = (db.scalar(select(func.max(Track.id))) or 0) + 1
            ids = list(range(first, first + len(rows)))
            bulk.insert_rows(
                db.connection(), table, [{"id": i, **row} for i, row in zip(ids, rows)]
            )
            return ids
        # PostgreSQL: the ids drawn from the table's sequence in one statement, then the rows in
        # one COPY; a multi-row INSERT ... RETURNING cost the server more to parse and plan than
        # to insert
        conn = db.connection()
        ids = sorted(conn.execute(_NEXT_TRACK_IDS, {"count": len(rows)}).scalars())
        bulk.insert_rows(conn, table, [{"id": i, **row} for i, row in zip(ids, rows)])
        return ids

    def _file_values(self, tags: TrackTags, track_id: int) -> dict:
        return {
            "path": tags.path,
            "path_hash": _path_hash(tags.path),
            "size": tags.size,
            "mtime_ns": tags.mtime_ns,
            "content_hash": tags.quick_hash,
            "track_id": track_id,
            "error": None,
            "scanned_at": self.now,
        }

    def _file_row(
        self, tags: TrackTags, track_id: int, known: dict, new_files: list, file_updates: list
    ) -> None:
        row = known.get(tags.path)
        values = self._file_values(tags, track_id)
        if row is None:
            new_files.append(values)
        else:
            file_updates.append({"id": row.id, **values})

    def _track_values(self, db: Session, tags: TrackTags) -> dict:
        artist_name = names.main_artist(tags.artist)
        album_artist = tags.album_artist
        compilation = tags.compilation or (album_artist or "").strip().lower() in (
            "various artists",
            "various",
        )
        if compilation and not album_artist:
            album_artist = VARIOUS_ARTISTS
        album_artist = names.main_artist(album_artist) if album_artist else artist_name
        track_dir = os.path.dirname(tags.path)
        artist_folder = os.path.dirname(track_dir)
        artist_id = self._artist(db, artist_name, tags.mbid_artist, artist_folder)
        album_artist_id = (
            artist_id
            if names.merge_key(album_artist) == names.merge_key(artist_name)
            else self._artist(db, album_artist, None, artist_folder)
        )
        album_id = self._album(db, album_artist_id, tags, compilation)
        return {
            "title": tags.title,
            "artist_id": artist_id,
            "album_id": album_id,
            "track_no": tags.track_no,
            "disc_no": tags.disc_no,
            "year": tags.year,
            "duration": tags.duration,
            "bitrate": tags.bitrate,
            "sample_rate": tags.sample_rate,
            "channels": tags.channels,
            "codec": tags.codec,
            "composer": tags.composer[:512] if tags.composer else None,
            "explicit": tags.explicit,
            "rg_track_gain": tags.rg_track_gain,
            "rg_track_peak": tags.rg_track_peak,
            "rg_album_gain": tags.rg_album_gain,
            "mbid": tags.mbid_track,
            "isrc": tags.isrc,
            "fingerprint": fingerprint(artist_name, tags.album, tags.title, tags.duration),
            "lyrics": tags.lyrics,
            "lyrics_source": tags.lyrics_source,
            "path": tags.path,
            "missing_since": None,
            "added_at": self.now,
        }

    def _genre_rows(self, db: Session, tags: TrackTags, track_id: int, rows: list) -> None:
        seen: set[int] = set()
        for position, name in enumerate(tags.genres):
            genre_id = self._genre(db, name)
            if genre_id not in seen:  # 'Rock' and 'rock' are one genre
                seen.add(genre_id)
                rows.append({"track_id": track_id, "genre_id": genre_id, "position": position})

    @staticmethod
    def _track_entry(tags: TrackTags, track_id: int) -> dict:
        return {
            "kind": "TR",
            "ref_id": track_id,
            "name": tags.title[:512],
            "key": names.search_key(tags.title)[:512],
            "context": names.main_artist(tags.artist)[:512],
            "weight": 0,
        }

    def _reattach(self, db: Session, inserts: list[tuple[TrackTags, dict]]) -> dict[int, int]:
        """New files that are missing tracks come back (moved/renamed): same track id, same
        feedback."""
        if not self.missing:
            return {}
        mbids = {t.mbid_track for t, _ in inserts if t.mbid_track}
        prints = {v["fingerprint"] for _, v in inserts}
        rows = db.execute(
            select(Track.id, Track.mbid, Track.fingerprint).where(
                Track.missing_since.is_not(None),
                or_(Track.mbid.in_(mbids), Track.fingerprint.in_(prints)),
            )
        ).all()
        by_mbid = {r.mbid: r.id for r in rows if r.mbid}
        by_print = {r.fingerprint: r.id for r in rows}
        out: dict[int, int] = {}
        used: set[int] = set()
        for tags, values in inserts:
            track_id = by_mbid.get(tags.mbid_track) if tags.mbid_track else None
            track_id = track_id or by_print.get(values["fingerprint"])
            if track_id and track_id not in used:
                out[id(tags)] = track_id
                used.add(track_id)
        self.missing -= len(out)
        return out

    def touch(self, rows: list[tuple[int, int]]) -> None:
        with self.database.write() as db:
            stamps.bump_catalog(db)  # what the files are compared with changed (KnownFiles)
            db.execute(update(LibraryFile), [{"id": i, "mtime_ns": m} for i, m in rows])

    def remove(self, rows: list) -> int:
        """Files gone from disk: their tracks become missing (not deleted) and leave search."""
        self._load()
        track_ids = [r.track_id for r in rows if r.track_id is not None]
        with self.database.write() as db:
            stamps.bump_catalog(db)
            for chunk in _chunks(track_ids, 500):
                db.execute(update(Track).where(Track.id.in_(chunk)).values(missing_since=self.now))
                db.execute(
                    delete(SearchEntry).where(
                        SearchEntry.kind == "TR", SearchEntry.ref_id.in_(chunk)
                    )
                )
            for chunk in _chunks([r.id for r in rows], 500):
                db.execute(delete(LibraryFile).where(LibraryFile.id.in_(chunk)))
        self.missing += len(track_ids)
        return len(track_ids)

    def finish(self, changed: bool) -> None:
        """Artists, albums and genres are searchable while they have a present track."""
        if not changed:
            return
        present = select(Track.id).where(Track.missing_since.is_(None))
        with self.database.write() as db:
            live = {
                "AR": set(
                    db.scalars(
                        select(Track.artist_id).where(Track.missing_since.is_(None)).distinct()
                    )
                )
                | set(
                    db.scalars(
                        select(Album.artist_id)
                        .join(Track, Track.album_id == Album.id)
                        .where(Track.missing_since.is_(None))
                        .distinct()
                    )
                ),
                "AL": set(
                    db.scalars(
                        select(Track.album_id).where(Track.missing_since.is_(None)).distinct()
                    )
                ),
                "GE": set(
                    db.scalars(
                        select(TrackGenre.genre_id)
                        .where(TrackGenre.track_id.in_(present))
                        .distinct()
                    )
                ),
            }
            indexed: dict[str, set[int]] = defaultdict(set)
            for kind, ref_id in db.execute(
                select(SearchEntry.kind, SearchEntry.ref_id).where(SearchEntry.kind != "TR")
            ):
                indexed[kind].add(ref_id)
            for kind, ids in live.items():
                gone = indexed[kind] - ids
                for chunk in _chunks(sorted(gone), 500):
                    db.execute(
                        delete(SearchEntry).where(
                            SearchEntry.kind == kind, SearchEntry.ref_id.in_(chunk)
                        )
                    )
                new = sorted(ids - indexed[kind])
                for chunk in _chunks(new, 500):
                    search_entries.add(db.connection(), self._entries(db, kind, chunk))

    @staticmethod
    def _entries(db: Session, kind: str, ids: list[int]) -> list[dict]:
        if kind == "AR":
            rows = [
                (i, n, "")
                for i, n in db.execute(select(Artist.id, Artist.name).where(Artist.id.in_(ids)))
            ]
        elif kind == "AL":
            rows = list(
                db.execute(
                    select(Album.id, Album.title, Artist.name)
                    .join(Artist, Artist.id == Album.artist_id)
                    .where(Album.id.in_(ids))
                )
            )
        else:
            rows = [
                (i, n, "")
                for i, n in db.execute(select(Genre.id, Genre.name).where(Genre.id.in_(ids)))
            ]
        return [
            {
                "kind": kind,
                "ref_id": i,
                "name": n[:512],
                "key": names.search_key(n)[:512] or n.casefold()[:512],
                "context": (c or "")[:512],
                "weight": 0,
            }
            for i, n, c in rows
        ]


_INSERTS: dict[type, object] = {}


def _new_id(db: Session, model: type[Artist | Album | Genre | Artwork], values: dict) -> int:
    """Insert one row and return its id, through the connection: a few thousand of these in a
    large first scan cost a fraction of what the session's ORM path costs."""
    statement = _INSERTS.get(model)
    if statement is None:
        table = model.__table__
        statement = _INSERTS[model] = insert(table).returning(table.c.id)
    return db.connection().execute(statement, values).scalar_one()


def _known_rows(connection: Connection, paths: list[str]) -> dict[str, Row]:
    """The stored rows of these files, by path (a few by their path hashes, many at once)."""
    if len(paths) > 2_000:
        wanted = set(paths)
        return {row.path: row for row in connection.execute(_KNOWN_FILES) if row.path in wanted}
    known = {}
    for chunk in _chunks([_path_hash(p) for p in paths], 500):
        for row in connection.execute(_KNOWN_FILES.where(LibraryFile.path_hash.in_(chunk))):
            known[row.path] = row
    return known


def _path_hash(path: str) -> str:
    return hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
