"""Lists of artists (bookmarks, recommendations, search results) and of genres (annotations,
recommendations): what each shows is read for the whole list at once, so a list costs the same
statements for 3 artists or 12, and shows what artist_picture shows one at a time."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from airwave.core import bookmarks, ids, music
from airwave.core.catalog import catalog
from airwave.store import stamps
from airwave.store.db import Database
from airwave.store.models import Album, Artist, Artwork, Bookmark, Genre, Track, TrackGenre

from .conftest import Rows, statements


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
    with statements(database, db) as few:
        catalog.artist_views(db, artists[:3])
    db.expire_all()
    with statements(database, db) as many:
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
    with statements(database, db) as few:
        bookmarks.views(db, marks[:3])
    with statements(database, db) as many:
        views = bookmarks.views(db, marks)
    assert len(many) == len(few), many
    assert [v.artist.artist.id for v in views if v.artist] == artists
    assert [v.artist.artist.id for v in views if v.artist and not v.is_available] == [gone]


def test_genre_annotations_read_each_genres_sample_and_the_rest_at_once(
    database: Database, db: Session, rows: Rows
) -> None:
    """A genre is annotated as a station to start (a sample track, its count, its listeners):
    only each genre's sample is drawn on its own; the samples' tracks, the counts and the
    listener counts are read for all of them (some eight statements a genre before)."""
    genre_ids = []
    for n in range(12):
        genre = Genre(name=f"g{n}", name_key=f"g{n}", category="c")
        db.add(genre)
        db.flush()
        for position in range(3):
            db.add(TrackGenre(track_id=rows.track().id, genre_id=genre.id, position=position))
        genre_ids.append(genre.id)
    stamps.bump_catalog(db)
    db.flush()
    refs = [ids.Ref("genre", g) for g in genre_ids]
    with statements(database, db) as few:
        music.annotate(db, refs[:3])
    with statements(database, db) as many:
        notes = music.annotate(db, refs)
    assert len(many) - len(few) <= 2 * 9, many  # a sample's one or two statements a genre
    assert [ref.id for ref in notes] == genre_ids
    assert all(len(note.samples) == 1 and note.track_count == 3 for note in notes.values())
