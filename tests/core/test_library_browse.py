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
    # a file goes missing and another track is added: the next pages count them
    tracks[3].missing_since = clock.now()
    added = rows.track()
    added.title = "Song 9"
    stamps.bump_catalog(db)
    db.flush()
    page = browse.library_page(db, "track", "ALPHA", "", 0, 10)
    assert page.total == 5 and tracks[3].id not in page.ids and added.id in page.ids
    assert browse.library_page(db, "track", "ALPHA", "song 3", 0, 2).total == 0
    assert browse.library_page(db, "album", "ALPHA", "", 0, 2).total == 5
