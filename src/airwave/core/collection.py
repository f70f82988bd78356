"""A listener's collection ("My Collection"): the artists, albums, tracks and playlists they keep
for listening on demand.

Sorted views page with a cursor: the sort key and id of the last item seen, so that items added
while a client pages never shift or repeat the pages that follow. Every change counts in the
listener's collection version (collections/getVersion), for clients that sync.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import Row, and_, delete, func, or_, select, tuple_, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from airwave.core import ids
from airwave.core.catalog import catalog
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import Album, Artist, CollectionItem, Listener, Playlist, Track

CODE_OF: dict[str, str] = {"artist": "AR", "album": "AL", "track": "TR", "playlist": "PL"}
KIND_OF: dict[str, ids.Kind] = {
    "AR": "artist",
    "AL": "album",
    "TR": "track",
    "PL": "playlist",
}
MAX_ITEMS = 100_000  # items in one listener's collection

Order = Literal["added", "recent", "name", "artist"]
ORDERS: tuple[Order, ...] = ("added", "recent", "name", "artist")


@dataclass(frozen=True)
class Item:
    ref: ids.Ref
    added_at: datetime
    touched_at: datetime


@dataclass(frozen=True)
class Page:
    items: list[Item]
    total: int
    cursor: str | None  # for the next page; None after the last


def _names(db: Session, listener_id: int, ref: ids.Ref) -> tuple[str, str]:
    """(name, artist name) of a collectable object, checking it may be collected."""
    if ref.kind == "artist":
        artist = catalog.artist(db, ref.id)
        return artist.name, artist.name
    if ref.kind == "album":
        album = catalog.album(db, ref.id)
        owner = db.get(Artist, album.artist_id)
        return album.title, owner.name if owner else ""
    if ref.kind == "track":
        track = catalog.track(db, ref.id)
        performer = db.get(Artist, track.artist_id)
        return track.title, performer.name if performer else ""
    if ref.kind == "playlist":
        playlist = db.get(Playlist, ref.id)
        if playlist is None:
            raise ApiError(ErrorCode.NOT_FOUND, f"no playlist PL:{ref.id}")
        if playlist.listener_id != listener_id:
            raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "that playlist is another listener's")
        owner = db.get(Listener, playlist.listener_id)
        return playlist.name, owner.username if owner else ""
    raise ApiError(
        ErrorCode.INVALID_PANDORA_TYPE,
        f"a {ref.kind} cannot be collected (artists, albums, tracks and playlists can)",
    )


def parse(token: str) -> ids.Ref:
    """A pandoraId (or musicId) of something collectable."""
    return catalog.resolve(token, "artist", "album", "track", "playlist")


def _bump(db: Session, listener_id: int) -> None:
    db.execute(
        update(Listener)
        .where(Listener.id == listener_id)
        .values(collection_version=Listener.collection_version + 1)
    )


def _find(db: Session, listener_id: int, ref: ids.Ref) -> CollectionItem | None:
    return db.scalar(
        select(CollectionItem).where(
            CollectionItem.listener_id == listener_id,
            CollectionItem.kind == CODE_OF[ref.kind],
            CollectionItem.ref_id == ref.id,
        )
    )


def add(db: Session, listener_id: int, ref: ids.Ref, now: datetime) -> CollectionItem:
    """Collect an object; collecting it again changes nothing."""
    name, artist = _names(db, listener_id, ref)
    found = _find(db, listener_id, ref)
    if found is not None:
        return found
    size = db.scalar(
        select(func.count(CollectionItem.id)).where(CollectionItem.listener_id == listener_id)
    )
    if (size or 0) >= MAX_ITEMS:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"a collection holds at most {MAX_ITEMS} items")
    row = CollectionItem(
        listener_id=listener_id,
        kind=CODE_OF[ref.kind],
        ref_id=ref.id,
        sort_name=name.casefold()[:255],
        sort_artist=artist.casefold()[:255],
        added_at=now,
        touched_at=now,
    )
    try:
        with db.begin_nested():
            db.add(row)
    except IntegrityError:  # a concurrent add of the same object won
        found = _find(db, listener_id, ref)
        assert found is not None
        return found
    _bump(db, listener_id)
    return row


def remove(db: Session, listener_id: int, ref: ids.Ref) -> bool:
    """Take an object out of the collection; False when it was not in it."""
    gone = db.execute(
        delete(CollectionItem).where(
            CollectionItem.listener_id == listener_id,
            CollectionItem.kind == CODE_OF[ref.kind],
            CollectionItem.ref_id == ref.id,
        )
    ).rowcount
    if gone:
        _bump(db, listener_id)
    return bool(gone)


def touch(db: Session, listener_id: int, refs: Sequence[ids.Ref], now: datetime) -> None:
    """Mark collected objects as just played (the "recent" order)."""
    for ref in refs:
        if ref.kind in CODE_OF:
            db.execute(
                update(CollectionItem)
                .where(
                    CollectionItem.listener_id == listener_id,
                    CollectionItem.kind == CODE_OF[ref.kind],
                    CollectionItem.ref_id == ref.id,
                )
                .values(touched_at=now)
            )


def has(db: Session, listener_id: int, refs: Sequence[ids.Ref]) -> set[ids.Ref]:
    """Which of these objects are in the collection."""
    wanted = [r for r in refs if r.kind in CODE_OF]
    if not wanted:
        return set()
    rows = db.execute(
        select(CollectionItem.kind, CollectionItem.ref_id).where(
            CollectionItem.listener_id == listener_id,
            CollectionItem.ref_id.in_({r.id for r in wanted}),
        )
    )
    held = {(k, i) for k, i in rows}
    return {r for r in wanted if (CODE_OF[r.kind], r.id) in held}


def added_at(db: Session, listener_id: int, refs: Sequence[ids.Ref]) -> dict[ids.Ref, datetime]:
    """When each of these objects was collected (those in the collection only)."""
    wanted = [r for r in refs if r.kind in CODE_OF]
    if not wanted:
        return {}
    rows = db.execute(
        select(CollectionItem.kind, CollectionItem.ref_id, CollectionItem.added_at).where(
            CollectionItem.listener_id == listener_id,
            CollectionItem.ref_id.in_({r.id for r in wanted}),
        )
    )
    held = {(k, i): at for k, i, at in rows}
    return {r: held[(CODE_OF[r.kind], r.id)] for r in wanted if (CODE_OF[r.kind], r.id) in held}


def counts(db: Session, listener_id: int) -> dict[str, int]:
    """Items per kind (AR, AL, TR, PL), every kind present."""
    found = dict(
        db.execute(
            select(CollectionItem.kind, func.count(CollectionItem.id))
            .where(CollectionItem.listener_id == listener_id)
            .group_by(CollectionItem.kind)
        ).all()
    )
    return {code: int(found.get(code, 0)) for code in ("AR", "AL", "TR", "PL")}


def version(db: Session, listener_id: int) -> int:
    return int(
        db.scalar(select(Listener.collection_version).where(Listener.id == listener_id)) or 0
    )


def _codes(kinds: Sequence[str] | None) -> list[str]:
    if not kinds:
        return list(KIND_OF)
    codes = [k.upper() for k in kinds if k.upper() in KIND_OF]
    if not codes:
        raise ApiError(
            ErrorCode.INVALID_PANDORA_TYPE, "types are AR, AL, TR and PL (artists, albums, ...)"
        )
    return codes


def _keys(order: Order) -> list:  # noqa: ANN401  # SQL expressions
    """Sort keys (each ascending or descending) ending with the id, which breaks ties."""
    c = CollectionItem
    return {
        "added": [c.id.desc()],
        "recent": [c.touched_at.desc(), c.id.desc()],
        "name": [c.sort_name.asc(), c.id.asc()],
        "artist": [c.sort_artist.asc(), c.sort_name.asc(), c.id.asc()],
    }[order]


def _cursor_of(order: Order, item: Row) -> str:  # a row of page()'s columns
    values: list[object] = {
        "added": [item.id],
        "recent": [item.touched_at.isoformat(), item.id],
        "name": [item.sort_name, item.id],
        "artist": [item.sort_artist, item.sort_name, item.id],
    }[order]
    raw = json.dumps([order, values], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _after(order: Order, cursor: str):  # noqa: ANN202  # a SQL condition
    """Rows after the cursor's row in this order."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        named, values = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if named != order or not isinstance(values, list):
            raise ValueError(named)
        c = CollectionItem
        # row values, which both backends answer with a range scan of the order's index
        if order == "added":
            (last_id,) = values
            return c.id < int(last_id)
        if order == "recent":
            at, last_id = datetime.fromisoformat(values[0]), int(values[1])
            return tuple_(c.touched_at, c.id) < tuple_(at, last_id)
        if order == "name":
            name, last_id = str(values[0]), int(values[1])
            return tuple_(c.sort_name, c.id) > tuple_(name, last_id)
        artist, name, last_id = str(values[0]), str(values[1]), int(values[2])
        return tuple_(c.sort_artist, c.sort_name, c.id) > tuple_(artist, name, last_id)
    except (ValueError, TypeError, IndexError, json.JSONDecodeError, UnicodeDecodeError):
        raise ApiError(
            ErrorCode.INVALID_REQUEST, "that cursor is not one this sort order gave out"
        ) from None


def page(
    db: Session,
    listener_id: int,
    *,
    kinds: Sequence[str] | None = None,
    order: Order = "added",
    limit: int = 100,
    offset: int = 0,
    cursor: str | None = None,
    artist_id: int | None = None,
) -> Page:
    """A page of the collection in one order; `cursor` (from the previous page) or `offset`."""
    codes = _codes(kinds)
    where = [CollectionItem.listener_id == listener_id]
    if set(codes) != set(KIND_OF):  # every kind: no filter, so a deep offset reads only the index
        where.append(CollectionItem.kind.in_(codes))
    if artist_id is not None:
        where.append(_by_artist(artist_id))
    codes_key = tuple(codes)
    current = version(db, listener_id)  # what the totals and landmarks of this view are of
    total = _total(db, listener_id, current, where, (codes_key, artist_id))
    c = CollectionItem  # plain columns: a hundred ORM objects cost more than the query
    columns = (c.id, c.kind, c.ref_id, c.added_at, c.touched_at, c.sort_name, c.sort_artist)
    view = None
    before = 0  # rows read ahead of the page: the one before it, which marks where it starts
    if cursor:
        query = select(*columns).where(*where, _after(order, cursor))
    elif offset:
        skip, seek = offset, []
        if order in _LANDMARK_ORDERS:
            # where an earlier page of this very view began or ended: seek there, skip the rest
            view = (
                db.get_bind().engine.url,
                listener_id,
                current,
                codes_key,
                artist_id,
                order,
            )
            start, token = _landmark(view, offset)
            if token is not None:
                skip, seek = offset - start, [_after(order, token)]
            before = 1 if skip else 0
        # the ids of the page first, from the order's index alone (an index-only scan skips the
        # rows before the offset without reading them), then those rows: reading every skipped
        # row made offset 50,000 cost 25-30 ms on PostgreSQL
        wanted = (
            select(c.id)
            .where(*where, *seek)
            .order_by(*_keys(order))
            .offset(skip - before)
            .limit(limit + 1 + before)
        ).subquery()
        query = select(*columns).join(wanted, wanted.c.id == c.id)
    else:
        query = select(*columns).where(*where)
    rows = db.execute(query.order_by(*_keys(order)).limit(limit + 1 + before)).all()
    if view is not None:
        if before and rows:
            _remember(view, offset, _cursor_of(order, rows[0]))  # the same offset, asked again
        rows = rows[before:]
        if rows:
            _remember(view, offset + min(len(rows), limit), _cursor_of(order, rows[:limit][-1]))
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(
        [Item(ids.Ref(KIND_OF[r.kind], r.ref_id), r.added_at, r.touched_at) for r in rows],
        total,
        _cursor_of(order, rows[-1]) if more and rows else None,
    )


# Landmarks of offset paging: in a view (a listener's collection at one version, kinds, artist
# and order), the cursor of the row just before a position where a page began or ended. A later
# page at that position or past it seeks there by the order's index and skips only what lies
# between, so offset paging costs its page, not its depth. Any add or remove moves the version
# on, and with it every landmark of the collection; "recent" moves without a new version (plays
# touch items), so it has none.
_LANDMARK_ORDERS = ("added", "name", "artist")
_LANDMARKS: OrderedDict[tuple[object, ...], dict[int, str]] = OrderedDict()
_LANDMARKS_KEPT = 512  # views (a few MB at most: a cursor is under 200 bytes)
_LANDMARKS_PER_VIEW = 64


def _landmark(view: tuple[object, ...], offset: int) -> tuple[int, str | None]:
    """The nearest landmark at or before `offset` in a view: its position and cursor."""
    with _TOTALS_LOCK:
        marks = _LANDMARKS.get(view)
        if not marks:
            return 0, None
        _LANDMARKS.move_to_end(view)
        best = max((p for p in marks if p <= offset), default=0)
        return (best, marks[best]) if best else (0, None)


def _remember(view: tuple[object, ...], position: int, token: str) -> None:
    with _TOTALS_LOCK:
        marks = _LANDMARKS.setdefault(view, {})
        _LANDMARKS.move_to_end(view)
        marks[position] = token
        while len(marks) > _LANDMARKS_PER_VIEW:
            del marks[min(marks)]
        while len(_LANDMARKS) > _LANDMARKS_KEPT:
            _LANDMARKS.popitem(last=False)


_TOTALS: OrderedDict[tuple[object, ...], int] = OrderedDict()
_TOTALS_LOCK = threading.Lock()
_TOTALS_KEPT = 4096


def _total(
    db: Session, listener_id: int, current: int, where: list, key: tuple[object, ...]
) -> int:
    """How many items a view holds. Counting a listener's 100,000 items costs ~10 ms a page, so
    a count is kept per collection version (which every add and remove moves on): one primary
    key lookup while the collection does not change."""
    # the database's URL too: values of one are never taken for another's (tests open many)
    cache_key = (db.get_bind().engine.url, listener_id, current, *key)
    with _TOTALS_LOCK:
        if (known := _TOTALS.get(cache_key)) is not None:
            _TOTALS.move_to_end(cache_key)
            return known
    counted = int(db.scalar(select(func.count(CollectionItem.id)).where(*where)) or 0)
    if version(db, listener_id) == cache_key[2]:  # no change committed while counting
        with _TOTALS_LOCK:
            _TOTALS[cache_key] = counted
            while len(_TOTALS) > _TOTALS_KEPT:
                _TOTALS.popitem(last=False)
    return counted


def _by_artist(artist_id: int):  # noqa: ANN202  # a SQL condition
    """Items of one artist: the artist, their albums, and tracks they perform or whose album is
    theirs."""
    c = CollectionItem
    albums = select(Album.id).where(Album.artist_id == artist_id)
    tracks = select(Track.id).where(or_(Track.artist_id == artist_id, Track.album_id.in_(albums)))
    return or_(
        and_(c.kind == "AR", c.ref_id == artist_id),
        and_(c.kind == "AL", c.ref_id.in_(albums)),
        and_(c.kind == "TR", c.ref_id.in_(tracks)),
    )
