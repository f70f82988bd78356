"""The instance's music library: scans (at start, on demand, on file changes), their status,
and what follows a scan (sound analysis, the similarity space, the library's playlist files)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import select

from airwave import processes
from airwave.core import members
from airwave.core.catalog import freshness
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.library import workers
from airwave.library.containment import Roots
from airwave.library.profiler import ProfileReport
from airwave.library.scanner import KnownFiles, Scanner, ScanReport, recorded_roots
from airwave.store import cluster
from airwave.store.models import Playlist

log = logging.getLogger("airwave.library")
LIBRARY_LEASE = "library"  # held by whoever scans: one server process, or `airwave scan`


@dataclass
class ScanStatus:
    state: str = "idle"  # idle | scanning | indexing
    stage: str = ""
    done: int = 0
    total: int = 0
    scans: int = 0
    indexed: int = 0  # scans whose similarity space (neighbours, sound profiles) is complete
    last: ScanReport | None = None
    last_total_seconds: float = 0.0  # the last scan and what followed it (playlists, similarity)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "state": self.state,
            "stage": self.stage,
            "done": self.done,
            "total": self.total,
            "scans": self.scans,
            "indexed": self.indexed,
        }
        if self.last is not None:
            r = self.last
            out["last"] = {
                "files": r.files_seen,
                "added": r.added,
                "updated": r.updated,
                "removed": r.removed,
                "moved": r.moved,
                "unchanged": r.unchanged,
                "tag_reads": r.tags_read,
                "errors": len(r.errors),
                "seconds": round(r.seconds, 3),
                "total_seconds": round(self.last_total_seconds, 3),
            }
        return out


def refresh_similarity(
    services: Services,
    progress: Callable[[str, int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> ProfileReport | None:
    """Bring the stations' similarity space up to date: neighbours from tags at once, then sound
    profiles.

    The neighbour table is rebuilt before the (slower) sound analysis so new tracks play on stations
    right away, and again after it when the analysis changed anything.
    """
    from airwave.library import profiler

    settings = services.settings
    if progress:
        progress("similarity", 0, 1)
    if not freshness.is_current(services.database):  # else not even numpy is imported
        from airwave.core.catalog import similarity_index

        store = settings.data_dir / similarity_index.STORE
        similarity_index.build(services.database, services.clock.now, store=store)
    if not settings.analyze_audio:
        return None
    report = profiler.run(
        services.database,
        services.clock.now,
        workers=settings.analysis_workers or os.cpu_count() or 1,
        progress=progress,
        should_stop=should_stop,
    )
    if (report.analysed or report.failed) and not (should_stop and should_stop()):
        # (a stopping server leaves the build to its next start: the lists are stale till then)
        from airwave.core.catalog import similarity_index

        if progress:
            progress("similarity", 0, 1)
        store = settings.data_dir / similarity_index.STORE
        similarity_index.build(services.database, services.clock.now, store=store)
        log.info(
            "sound analysed",
            extra={
                "tracks": report.analysed,
                "failed": report.failed,
                "seconds": round(report.seconds, 2),
                "tracks_per_cpu_second": round(report.tracks_per_cpu_second, 1),
            },
        )
    return report


def serving_roots(services: Services, library: Library | None) -> Roots:
    """Where the files the server reads for the catalogue (audio, art) may really live.

    The library's roots and every folder a scan recorded (a catalogue made by `airwave scan`,
    served without `library_dirs`), and the ads folder; nothing else of the data directory.
    """
    roots = library.roots if library is not None else services.settings.library_dirs
    known = [*(os.path.abspath(r) for r in roots), *recorded_roots(services.database)]
    ads = services.settings.ads_dir  # the operator's ad files and their art
    return Roots([*known, ads], deny=[services.settings.data_dir])


def sync_playlists(
    services: Services, roots: list[Path], files_seen: int | None = None
) -> str | None:
    """The library's playlist files (.m3u, .m3u8, .xspf) as playlists of the operator (the
    first administrator), kept in step scan after scan. A line saying what changed, if
    anything did. `files_seen`: how many the scan saw; with none there and no playlist made
    from a file before, there is nothing to do (and nothing to walk)."""
    if files_seen == 0 and not _file_playlists(services):
        return None
    from airwave.core import playlists

    files = playlists.library_files(roots)
    with services.database.write() as db:
        owner = playlists.library_owner(db)
        if owner is None:
            if files:
                log.info(
                    "library playlist files need an administrator account to own them",
                    extra={"files": len(files)},
                )
                return f"{len(files)} playlist files wait for an administrator account to own them"
            return None
        synced = playlists.sync_library_files(db, owner, files, roots, services.clock.now())
    if not (synced.made or synced.updated or synced.removed):
        return None
    log.info(
        "library playlists",
        extra={
            "made": synced.made,
            "updated": synced.updated,
            "removed": synced.removed,
            "unmatched_entries": synced.unmatched,
        },
    )
    return (
        f"playlist files: {synced.made} new, {synced.updated} changed, {synced.removed} gone; "
        f"{synced.unmatched} entries match no track"
    )


def _file_playlists(services: Services) -> bool:
    """Whether any playlist was made from a playlist file."""
    with services.database.read() as db:
        return (
            db.scalar(select(Playlist.id).where(Playlist.source_path.is_not(None)).limit(1))
            is not None
        )


class LibraryHeld(Exception):
    """Another live process holds the library lease (a server, or another `airwave scan`)."""

    def __init__(self, holder: str, until: datetime) -> None:
        super().__init__(f"the library is held by {holder} until {until:%H:%M:%S} UTC")
        self.holder, self.until = holder, until


@contextmanager
def hold_library(services: Services) -> Iterator[None]:
    """Hold the instance's library lease for a scan outside the server (`airwave scan`): renewed
    while the block runs, given up when it ends. LibraryHeld, at once, while another live
    process holds it; a server that starts meanwhile scans only after this one is done."""
    me = members.member_id(services)
    ttl = timedelta(seconds=services.settings.lease_ttl)

    def dead(holder: str) -> bool:
        return members.gone_from_this_host(services, holder)

    def take(wait: float | None = None) -> cluster.Lease | None:
        """None when taken (or renewed); else the lease as another holds it."""
        now = members.now()
        with services.database.write(wait) as db:
            if cluster.take_lease(db, LIBRARY_LEASE, me, now, ttl, dead):
                return None
            return next(lease for lease in cluster.leases(db) if lease.name == LIBRARY_LEASE)

    held = take()
    if held is not None:
        raise LibraryHeld(held.holder or "?", held.expires_at)
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(max(0.2, services.settings.lease_ttl / 4)):
            try:
                with processes.fork_guard:  # the scan's own batches may hold the writer a while
                    other = take(wait=services.settings.lease_ttl / 2)
            except Exception as exc:  # a busy database: the next round tries again
                log.warning("could not renew the library lease: %s", exc)
                continue
            if other is not None:
                log.error("library lease lost", extra={"holder": other.holder, "member": me})

    renewer = threading.Thread(target=renew, name="library-lease", daemon=True)
    renewer.start()
    processes.declare_fork_safe(renewer)  # the command's tag readers may still be forked
    try:
        yield
    finally:
        stop.set()
        renewer.join()
        processes.declare_fork_safe(renewer, False)
        with services.database.write() as db:
            cluster.release_lease(db, LIBRARY_LEASE, me)


class Library:
    """Scans the configured folders into the catalogue, one scan at a time.

    In a server, only the process holding the instance's `library` lease scans (`leading`,
    set by core/cluster.py); the others show what it publishes and pass rescans on to it.
    """

    def __init__(self, services: Services, roots: list[Path] | None = None) -> None:
        self.services = services
        self.roots = [
            Path(r) for r in (roots if roots is not None else services.settings.library_dirs)
        ]
        self.status = ScanStatus()
        self.known_files = KnownFiles()  # an unchanged rescan reads one row, not every file's
        self._stop = threading.Event()
        self.leading = False
        self.on_change: Callable[[], None] = lambda: None  # the scan started or ended
        self._thread: threading.Thread | None = None  # the scan running, or the last one

    def shared_status(self, published: dict[str, object] | None) -> dict[str, object]:
        """The scan status of the instance: this process's own while it holds the library,
        else what the holder published (idle and nothing done when none holds it)."""
        if self.leading or published is None:
            return self.status.as_dict()
        return published

    def scan(self, full: bool = False) -> ScanReport:
        stop = self._stop  # this scan's; a later start makes a new one
        started = time.perf_counter()
        with self.status.lock:
            self.status.state, self.status.done, self.status.total = "scanning", 0, 0
            self.on_change()
            try:
                report = Scanner(
                    self.services.database,
                    now=self.services.clock.now,
                    workers=self.services.settings.scan_workers or os.cpu_count() or 1,
                    progress=self._progress,
                    known_files=self.known_files,
                ).scan(self.roots, full=full)
            except BaseException:
                self.status.state = "idle"
                raise
            # not idle in between: whoever sees this scan counted sees it idle only once done
            self.status.state = "indexing"
            self.status.last = report
            self.status.scans += 1
            log.info(
                "library scanned",
                extra={
                    "files": report.files_seen,
                    "added": report.added,
                    "updated": report.updated,
                    "removed": report.removed,
                    "errors": len(report.errors),
                    "seconds": round(report.seconds, 2),
                },
            )
            for path, message in report.errors[:50]:
                log.warning("skipped file", extra={"path": path, "reason": message})
            try:
                sync_playlists(self.services, self.roots, report.playlist_files)
                refresh_similarity(self.services, progress=self._progress, should_stop=stop.is_set)
                self.status.indexed += 1
            finally:
                self.status.last_total_seconds = time.perf_counter() - started
                self.status.state = "idle"
                self.on_change()
        return report

    def rescan(self) -> bool:
        """A scan in the background now, unless one runs (False then: it is already on its way).
        A process that does not hold the library asks the one that does, through the database."""
        if not self.roots:
            return False
        if not self.leading:
            with self.services.database.write() as db:
                cluster.request_work(db, "library", datetime.now(UTC))
            return True
        if self.status.state != "idle" or self.status.lock.locked():
            return False
        self._thread = threading.Thread(
            target=self._run, args=(False,), name="library-rescan", daemon=True
        )
        self._thread.start()
        return True

    def _progress(self, stage: str, done: int, total: int) -> None:
        self.status.stage, self.status.done, self.status.total = stage, done, total

    def start(self, watch: bool = False) -> threading.Thread | None:
        """Scan in the background now, then (with watch) after every change under the roots."""
        if not self.roots:
            return None
        self._stop = threading.Event()  # a process may hold the library again after losing it
        thread = threading.Thread(target=self._run, args=(watch,), name="library-scan", daemon=True)
        self._thread = thread
        thread.start()
        return thread

    def _run(self, watch: bool) -> None:
        try:
            self.scan()
            if watch:
                self.watch()
        except Exception:
            if self._stop.is_set():  # the server is stopping: the next start resumes the work
                log.info("library scan stopped with the server")
            else:
                log.exception("library scan failed")

    def watch(self) -> None:
        from watchfiles import watch

        existing = [str(r) for r in self.roots if r.exists()]
        for _changes in watch(*existing, stop_event=self._stop, debounce=1500, step=200):
            self.scan()

    def stop(self) -> None:
        """Stop scanning soon: queued tag reads and analyses are dropped (what is committed
        stays; the next scan continues from there)."""
        self._stop.set()
        workers.cancel_all()

    def join(self, timeout: float) -> bool:
        """Wait (up to `timeout` seconds) for a stopped scan to end; False if it has not."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()


def start_scan(library: Library | None, is_admin: bool) -> None:
    """An administrator's rescan of the library (Subsonic startScan), unless one is on its way:
    USER_NOT_AUTHORIZED for anyone else, CALL_NOT_ALLOWED on a server that scans no folder."""
    if not is_admin:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "only administrators may start a scan")
    if library is None or not library.roots:
        raise ApiError(ErrorCode.CALL_NOT_ALLOWED, "this server scans no library folder")
    library.rescan()
