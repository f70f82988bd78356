"""The whole library a page at a time (catalog/browse): totals follow the catalogue."""

from __future__ import annotations

from sqlalchemy.orm import Session

from airwave.core.catalog import browse
from airwave.core.clock import FixedClock
from airwave.store import stamps

from .conftest import Rows


def test_totals_follow_every_change_of_the_catalogue(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    tracks = [rows.track() for _ in range(5)]
    for n, track in enumerate(tracks):
        track.title = f"Song {n}"
    stamps.bump_catalog(db)  # as a scan does in the transaction that changes the catalogue
    db.flush()
    assert browse.library_page(db, "track", "ALPHA", "", 0, 2).total == 5
    assert browse.library_page(db, "track", "ALPHA", "song 3", 0, 2).total == 1
    assert browse.library_page(db, "album", "ALPHA", "", 0, 2).total == 5
    by_name = [t.id for t in sorted(tracks, key=lambda t: (t.title.lower(), t.id))]
    pages = [browse.library_page(db, "track", "ALPHA", "", n, 2).ids for n in (0, 2, 4, 6)]
    assert pages == [by_name[0:2], by_name[2:4], by_name[4:], []]
    # a file goes missing and another track is added: the next pages count them
    tracks[3].missing_since = clock.now()
    added = rows.track()
    added.title = "Song 9"
    stamps.bump_catalog(db)
    db.flush()
    page = browse.library_page(db, "track", "ALPHA", "", 0, 10)
    assert page.total == 5 and tracks[3].id not in page.ids and added.id in page.ids
    assert page.ids == [t for t in by_name if t != tracks[3].id] + [added.id]
    assert browse.library_page(db, "track", "ARTIST", "", 0, 10).total == 5
    assert browse.library_page(db, "track", "ALPHA", "song 3", 0, 2).total == 0
    assert browse.library_page(db, "album", "ALPHA", "", 0, 2).total == 5
