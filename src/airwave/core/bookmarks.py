"""Bookmarks: tracks and artists a listener saved to come back to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import bindparam, delete, exists, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from airwave.core import ids
from airwave.core.catalog import catalog
from airwave.core.plays import spin_by_token
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import Album, Artist, Bookmark, Track
from airwave.store.prepared import Prepared

BookmarkType = Literal["artist", "track"]
KIND_OF: dict[str, str] = {"artist": "AR", "track": "TR"}
TYPE_OF: dict[str, BookmarkType] = {"AR": "artist", "TR": "track"}


def target(db: Session, token: str, kind: BookmarkType | None = None) -> tuple[str, int]:
    """(kind, row id) of a musicId/pandoraId naming a present artist or track."""
    ref = catalog.resolve(token, "artist", "track")
    if kind is not None and ref.kind != kind:
        raise ApiError(
            ErrorCode.INVALID_PANDORA_TYPE, f"{token[:80]!r} names a {ref.kind}, not a {kind}"
        )
    if ref.kind == "artist":
        catalog.artist(db, ref.id)
    else:
        catalog.track(db, ref.id)
    return KIND_OF[ref.kind], ref.id


def add(db: Session, listener_id: int, kind: str, ref_id: int, now: datetime) -> Bookmark:
    """Bookmark an object; bookmarking it again returns the existing bookmark unchanged."""
    found = _find(db, listener_id, kind, ref_id)
    if found is not None:
        return found
    row = Bookmark(listener_id=listener_id, kind=kind, ref_id=ref_id, created_at=now)
    try:
        with db.begin_nested():
            db.add(row)
    except IntegrityError:  # a concurrent add of the same object won
        found = _find(db, listener_id, kind, ref_id)
        assert found is not None
        return found
    return row


def _find(db: Session, listener_id: int, kind: str, ref_id: int) -> Bookmark | None:
    return db.scalar(
        select(Bookmark).where(
            Bookmark.listener_id == listener_id, Bookmark.kind == kind, Bookmark.ref_id == ref_id
        )
    )


def get(db: Session, listener_id: int, bookmark_id: str) -> Bookmark:
    number = ids.parse_number(bookmark_id)
    row = db.get(Bookmark, number) if number is not None else None
    if row is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no bookmark {bookmark_id[:40]!r}")
    if row.listener_id != listener_id:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "that bookmark belongs to another listener")
    return row


def remove_object(db: Session, listener_id: int, kind: str, ref_id: int) -> None:
    """Delete the bookmark of one object; NOT_FOUND when the listener has none."""
    gone = db.execute(
        delete(Bookmark).where(
            Bookmark.listener_id == listener_id, Bookmark.kind == kind, Bookmark.ref_id == ref_id
        )
    ).rowcount
    if not gone:
        raise ApiError(ErrorCode.NOT_FOUND, "that object is not bookmarked")


def _present(kind: str):  # noqa: ANN202 - a SQL expression
    """Bookmarks whose object still exists (a track row, or an artist row)."""
    if kind == "TR":
        return exists().where(Track.id == Bookmark.ref_id)
    return exists().where(Artist.id == Bookmark.ref_id)


def page(
    db: Session, listener_id: int, kind: str, start: int, size: int
) -> tuple[int, list[Bookmark]]:
    """One kind of the listener's bookmarks, newest first, with the total."""
    where = [Bookmark.listener_id == listener_id, Bookmark.kind == kind, _present(kind)]
    total = db.scalar(select(func.count(Bookmark.id)).where(*where)) or 0
    rows = db.scalars(
        select(Bookmark)
        .where(*where)
        .order_by(Bookmark.created_at.desc(), Bookmark.id.desc())
        .offset(start)
        .limit(size)
    )
    return total, list(rows)


def count(db: Session, listener_id: int) -> int:
    return sum(page(db, listener_id, kind, 0, 0)[0] for kind in ("AR", "TR"))


def marked(db: Session, listener_id: int, kind: str, ref_ids: list[int] | set[int]) -> set[int]:
    """Which of these objects the listener has bookmarked (one query)."""
    if not ref_ids:
        return set()
    return set(_MARKED.scalars(db, listener_id=listener_id, kind=kind, ids=list(set(ref_ids))))


_BOOKMARKS = Bookmark.__table__.c
_MARKED = Prepared(  # every fragment asks
    select(_BOOKMARKS.ref_id).where(
        _BOOKMARKS.listener_id == bindparam("listener_id"),
        _BOOKMARKS.kind == bindparam("kind"),
        _BOOKMARKS.ref_id.in_(bindparam("ids", expanding=True)),
    )
)


def album_marked(db: Session, listener_id: int, album_id: int) -> bool:
    """An album counts as bookmarked when every present track of it is."""
    track_ids = set(
        db.scalars(
            select(Track.id)
            .join(Album, Album.id == Track.album_id)
            .where(Track.album_id == album_id, catalog.PRESENT)
        )
    )
    return bool(track_ids) and marked(db, listener_id, "TR", track_ids) == track_ids


# ---------------------------------------------------------------- use cases of bookmark/*


@dataclass(frozen=True)
class BookmarkView:
    """A bookmark with the track (tracks) or the artist and its picture (artists) it names."""

    bookmark: Bookmark
    track: catalog.TrackView | None = None
    artist: catalog.ArtistView | None = None
    is_available: bool = True


def views(db: Session, rows: list[Bookmark]) -> list[BookmarkView]:
    """Bookmarks with what a client lists them with (bookmarks of objects gone from the catalogue
    are left out)."""
    tracks = {
        v.track.id: v for v in catalog.track_views(db, [r.ref_id for r in rows if r.kind == "TR"])
    }
    artist_ids = [r.ref_id for r in rows if r.kind != "TR"]
    artists = {v.artist.id: v for v in catalog.artist_views(db, artist_ids)}
    playable = catalog.artists_with_tracks(db, list(artists))
    out = []
    for row in rows:
        if row.kind == "TR":
            view = tracks.get(row.ref_id)
            if view is not None:
                out.append(
                    BookmarkView(row, track=view, is_available=view.track.missing_since is None)
                )
        elif (artist := artists.get(row.ref_id)) is not None:
            out.append(BookmarkView(row, artist=artist, is_available=row.ref_id in playable))
    return out


def add_bookmark(
    db: Session,
    listener_id: int,
    music_id: str | None,
    pandora_id: str | None,
    track_token: str | None,
    kind: BookmarkType | None,
    now: datetime,
) -> BookmarkView:
    """bookmark/add: an artist or track named by its id, or the track (or its artist) of a
    trackToken."""
    if track_token is not None:
        spin = spin_by_token(db, listener_id, track_token, now)
        target_kind, ref_id = ("AR", spin.artist_id) if kind == "artist" else ("TR", spin.track_id)
    else:
        target_kind, ref_id = target(
            db, music_id if music_id is not None else pandora_id or "", kind
        )
    row = add(db, listener_id, target_kind, ref_id, now)
    db.flush()
    return views(db, [row])[0]


def delete_bookmark(
    db: Session,
    listener_id: int,
    bookmark_id: str | None,
    music_id: str | None,
    pandora_id: str | None,
) -> None:
    """bookmark/delete: by bookmarkId, or by the musicId/pandoraId of the object bookmarked."""
    if bookmark_id is not None:
        db.delete(get(db, listener_id, bookmark_id))
    else:
        ref = catalog.resolve(
            music_id if music_id is not None else pandora_id or "", "artist", "track"
        )
        remove_object(db, listener_id, KIND_OF[ref.kind], ref.id)


@dataclass(frozen=True)
class BookmarkPage:
    total: int
    items: list[BookmarkView]


def lists(
    db: Session, listener_id: int, kind: BookmarkType | None, start: int, size: int
) -> dict[str, BookmarkPage]:
    """bookmark/getBookmarks: a page of each kind ("AR", "TR"); a kind left out still counts its
    total."""
    out = {}
    for code, name in (("AR", "artist"), ("TR", "track")):
        total, rows = page(db, listener_id, code, start, size if kind in (None, name) else 0)
        out[code] = BookmarkPage(total, views(db, rows))
    return out
