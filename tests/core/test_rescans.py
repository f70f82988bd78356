"""A process that scans again and again (a server) keeps what its rescans compare every file with
(scanner.KnownFiles) while the catalogue stamp holds: an unchanged rescan reads no file row, and a
change another process made to the catalogue is never hidden by what was kept."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import media
from sqlalchemy import event, select

from airwave.core.clock import FixedClock
from airwave.library.scanner import KnownFiles, Scanner
from airwave.store.db import Database
from airwave.store.models import LibraryFile, Track


def _titles(database: Database) -> list[str]:
    with database.read() as db:
        return list(db.scalars(select(Track.title).where(Track.missing_since.is_(None))))


def test_an_unchanged_rescan_reads_no_file_rows_and_another_process_changes_count_at_once(
    database: Database, clock: FixedClock, tmp_path: Path
) -> None:
    statements: list[str] = []
    event.listen(
        database.engine,
        "connect",
        lambda connection, _record: connection.set_trace_callback(statements.append),
    )

    def file_rows_read() -> int:
        read = sum("mtime_ns, error IS NOT NULL" in s for s in statements)
        statements.clear()
        return read

    root = tmp_path / "lib"
    song = media.tag(
        media.encode(root / "A" / "B" / "01 Song.flac", 1.0), title="First", artist="A", album="B"
    )
    first = tmp_path / "first.flac"
    shutil.copy2(song, first)  # the bytes and times of the first version, to come back to
    server = Scanner(database, now=clock.now, workers=1, known_files=KnownFiles())
    assert server.scan([root]).added == 1
    assert server.scan([root]).unchanged == 1  # the first scan's writes set a new stamp
    file_rows_read()
    report = server.scan([root])
    assert (report.unchanged, report.tags_read, file_rows_read()) == (1, 0, 0)

    # another process (its own connections to the same file) rescans a changed file
    other = Database(str(database.engine.url))
    try:
        media.tag(song, title="Second", artist="A", album="B")
        assert Scanner(other, now=clock.now, workers=1).scan([root]).updated == 1
    finally:
        other.dispose()
    assert _titles(database) == ["Second"]
    # the file goes back to the first version, times included: the server's kept comparison
    # would call it unchanged, but the catalogue holds the second one
    shutil.copy2(first, song)
    assert os.stat(song).st_mtime_ns == os.stat(first).st_mtime_ns
    report = server.scan([root])
    assert (report.updated, report.tags_read) == (1, 1)
    assert file_rows_read() == 1
    assert _titles(database) == ["First"]
    assert server.scan([root]).unchanged == 1  # its own update set a new stamp: kept again
    file_rows_read()
    # a file whose content stayed while its time moved is recorded with its new time (touched),
    # by another scanner: that counts as a change as well
    os.utime(song, ns=(os.stat(song).st_atime_ns, os.stat(song).st_mtime_ns + 10**9))
    report = Scanner(database, now=clock.now, workers=1).scan([root])  # no kept comparison
    assert (report.unchanged, report.tags_read) == (1, 0)
    assert _recorded_time(database) == os.stat(song).st_mtime_ns
    file_rows_read()
    shutil.copy2(first, song)  # the old time again
    report = server.scan([root])
    assert (report.unchanged, report.tags_read, file_rows_read()) == (1, 0, 1)
    assert _recorded_time(database) == os.stat(song).st_mtime_ns


def _recorded_time(database: Database) -> int:
    with database.read() as db:
        return db.scalars(select(LibraryFile.mtime_ns)).one()
