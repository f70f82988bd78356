"""Lists of artists (bookmarks, recommendations, search results): each artist's picture, listener
count and whether it still has tracks are read for the whole list at once, so a list costs the
same statements for 3 artists or 12, and shows what artist_picture shows one at a time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event, update
from sqlalchemy.orm import Session

from airwave.core import bookmarks
from airwave.core.catalog import catalog
from airwave.store.db import Database
from airwave.store.models import Album, Artist, Artwork, Bookmark, Track

from .conftest import Rows


@contextmanager
def _counted(database: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        seen.append(statement)

    event.listen(database.engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(database.engine, "before_cursor_execute", count)


def _artists(db: Session, rows: Rows, n: int) -> list[int]:
    """n artists: every third with a picture of its own, the others with 0-5 album covers."""
    made = []
    for i in range(n):
        track = rows.track()
        artist_id = track.artist_id
        if i % 3 == 0:
            art = Artwork(content_hash=f"own{artist_id:036d}", source_path="/a.jpg")
            db.add(art)
            db.flush()
            db.execute(update(Artist).where(Artist.id == artist_id).values(art_id=art.id))
        for k in range(i % 6):
            cover = Artwork(content_hash=f"c{artist_id:020d}{k:018d}", source_path="/c.jpg")
            db.add(cover)
            db.flush()
            db.add(
                Album(
                    title=f"x{k}",
                    title_key=f"x{artist_id}-{k}",
                    artist_id=artist_id,
                    year=2000 + (k * 7) % 5 if k != 2 else None,
                    art_id=cover.id,
                    created_at=rows.now,
                )
            )
        made.append(artist_id)
    db.flush()
    db.expire_all()
    return made


def test_an_artist_list_costs_the_same_statements_for_3_or_12_artists(
    database: Database, db: Session, rows: Rows
) -> None:
    artists = _artists(db, rows, 12)
    with _counted(database) as few:
        catalog.artist_views(db, artists[:3])
    db.expire_all()
    with _counted(database) as many:
        views = catalog.artist_views(db, artists)
    assert len(many) == len(few), many
    assert [v.artist.id for v in views] == artists
    for view in views:  # as artist_picture shows each alone
        row = db.get(Artist, view.artist.id)
        assert row is not None
        alone = catalog.artist_picture(db, row)
        assert view.picture.mosaic == alone.mosaic
        assert (view.picture.artwork and view.picture.artwork.id) == (
            alone.artwork and alone.artwork.id
        )
    assert any(len(v.picture.mosaic) == 4 for v in views)  # capped at four covers


def test_a_bookmark_list_costs_the_same_statements_for_3_or_12_artists(
    database: Database, db: Session, rows: Rows
) -> None:
    artists = _artists(db, rows, 12)
    gone = artists[5]
    db.execute(update(Track).where(Track.artist_id == gone).values(missing_since=rows.now))
    listener = rows.listener()
    marks = []
    for artist_id in artists:
        mark = Bookmark(listener_id=listener.id, kind="AR", ref_id=artist_id, created_at=rows.now)
        db.add(mark)
        marks.append(mark)
    db.flush()
    with _counted(database) as few:
        bookmarks.views(db, marks[:3])
    with _counted(database) as many:
        views = bookmarks.views(db, marks)
    assert len(many) == len(few), many
    assert [v.artist.artist.id for v in views if v.artist] == artists
    assert [v.artist.artist.id for v in views if v.artist and not v.is_available] == [gone]
