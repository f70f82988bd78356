"""Core rules of the collection and playlists: orders and cursors, versions, edits."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from airwave.core import collection, ids, playlists
from airwave.core.catalog import catalog
from airwave.core.clock import FixedClock
from airwave.errors import ApiError, ErrorCode

from .conftest import Rows


def _titles(db: Session, page: collection.Page) -> list[str]:
    from airwave.store.models import Track

    return [db.get(Track, i.ref.id).title for i in page.items]


def test_orders_and_a_cursor_that_holds_while_items_are_added(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    me = rows.listener("premium")
    tracks = [rows.track() for _ in range(7)]
    for n, track in enumerate(tracks):
        track.title = "gfedcba"[n]  # names in the reverse order of adding
        collection.add(db, me.id, ids.Ref("track", track.id), clock.now() + timedelta(seconds=n))
    newest = collection.page(db, me.id, order="added", limit=3)
    assert _titles(db, newest) == ["a", "b", "c"] and newest.total == 7
    by_name = collection.page(db, me.id, order="name", limit=3)
    assert _titles(db, by_name) == ["a", "b", "c"]
    # items added after the first page never shift the pages that follow its cursor
    for n in range(3):
        extra = rows.track()
        extra.title = f"0{n}"  # sorts before every name already there
        collection.add(db, me.id, ids.Ref("track", extra.id), clock.now() + timedelta(minutes=n))
    rest, cursor = [], by_name.cursor
    while cursor:
        page = collection.page(db, me.id, order="name", limit=3, cursor=cursor)
        rest += _titles(db, page)
        cursor = page.cursor
    assert rest == ["d", "e", "f", "g"]
    older = collection.page(db, me.id, order="added", limit=3, cursor=newest.cursor)
    assert _titles(db, older) == ["d", "e", "f"]
    # a cursor of another order is refused, not misread
    with pytest.raises(ApiError) as refused:
        collection.page(db, me.id, order="added", cursor=by_name.cursor)
    assert refused.value.error is ErrorCode.INVALID_REQUEST
    # playing on demand moves an item to the front of "recent"
    collection.touch(db, me.id, [ids.Ref("track", tracks[0].id)], clock.now() + timedelta(hours=1))
    assert _titles(db, collection.page(db, me.id, order="recent", limit=1)) == ["g"]


def test_an_offset_page_is_the_cursor_page_in_every_order(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    """Deep offsets read the page's ids from the order's index first, then those rows: the same
    items, in the same order, as walking there by cursor, for every kind filter too."""
    me = rows.listener("premium")
    rng = random.Random(7)
    for n in range(23):
        track = rows.track()
        track.title = rng.choice("abc") + str(n)  # ties on the first letters
        at = clock.now() + timedelta(seconds=rng.randint(0, 5))  # ties on the time
        collection.add(db, me.id, ids.Ref("track", track.id), at)
    for order in ("added", "recent", "name", "artist"):
        walked: list[ids.Ref] = []
        cursor = None
        for _ in range(5):
            page = collection.page(db, me.id, order=order, limit=5, cursor=cursor)
            walked += [i.ref for i in page.items]
            cursor = page.cursor
        assert len(walked) == 23 and cursor is None
        for offset in (0, 1, 5, 17, 22, 23, 40):
            page = collection.page(db, me.id, order=order, limit=5, offset=offset)
            assert [i.ref for i in page.items] == walked[offset : offset + 5], (order, offset)
            assert (page.cursor is not None) == (offset + 5 < 23)
            kinds = collection.page(db, me.id, kinds=["TR"], order=order, offset=offset)
            assert [i.ref for i in kinds.items] == walked[offset:]


def test_offset_pages_stay_right_page_after_page_and_after_the_collection_changes(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    """Offset paging seeks from where an earlier page of the same view ended: the pages are
    those of a walk by cursor, page after page, out of order, and again after adds and removes
    (a new version: nothing remembered of the old one is used)."""
    me = rows.listener("premium")
    rng = random.Random(11)
    made = []
    for n in range(40):
        track = rows.track()
        track.title = rng.choice("ab") + str(n % 7)  # many ties on the name
        made.append(track)
        collection.add(db, me.id, ids.Ref("track", track.id), clock.now())

    def walk(order: collection.Order) -> list[ids.Ref]:
        out: list[ids.Ref] = []
        cursor = None
        while True:
            page = collection.page(db, me.id, order=order, limit=6, cursor=cursor)
            out += [i.ref for i in page.items]
            if (cursor := page.cursor) is None:
                return out

    for order in ("added", "name", "artist", "recent"):
        walked = walk(order)
        for offset in (*range(0, 45, 6), 13, 31, 7, 30, 0, 36):
            page = collection.page(db, me.id, order=order, limit=6, offset=offset)
            assert [i.ref for i in page.items] == walked[offset : offset + 6], (order, offset)
    # the collection changes: offsets answer the new one
    collection.remove(db, me.id, ids.Ref("track", made[3].id))
    extra = rows.track()
    extra.title = "a0"
    collection.add(db, me.id, ids.Ref("track", extra.id), clock.now() + timedelta(seconds=1))
    for order in ("added", "name", "artist"):
        walked = walk(order)
        assert ids.Ref("track", made[3].id) not in walked and len(walked) == 40
        for offset in (0, 6, 12, 18, 24, 30, 36, 13):
            page = collection.page(db, me.id, order=order, limit=6, offset=offset)
            assert [i.ref for i in page.items] == walked[offset : offset + 6], (order, offset)


def test_collection_adds_once_counts_and_versions(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    me = rows.listener("premium")
    track = rows.track()
    ref = ids.Ref("track", track.id)
    first = collection.add(db, me.id, ref, clock.now())
    assert collection.add(db, me.id, ref, clock.now()).id == first.id
    assert collection.version(db, me.id) == 1
    assert collection.counts(db, me.id) == {"AR": 0, "AL": 0, "TR": 1, "PL": 0}
    assert collection.has(db, me.id, [ref, ids.Ref("album", track.album_id)]) == {ref}
    assert collection.remove(db, me.id, ref) and not collection.remove(db, me.id, ref)
    assert collection.version(db, me.id) == 2
    with pytest.raises(ApiError) as refused:
        collection.add(db, me.id, ids.Ref("genre", 1), clock.now())
    assert refused.value.error is ErrorCode.INVALID_PANDORA_TYPE


def _order(db: Session, playlist: playlists.Playlist) -> list[int]:
    return [e.track_id for e in playlists.entries(db, playlist, 0, 100)]


def test_playlist_edits_are_versioned_and_all_or_nothing(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    me, other = rows.listener("premium"), rows.listener("premium")
    a, b, c, d = (rows.track(duration=60.0).id for _ in range(4))
    playlist = playlists.create(db, me.id, "  Morning   mix ", "", [a, b, c], clock.now())
    assert (playlist.name, playlist.version, playlist.total_tracks) == ("Morning mix", 1, 3)
    assert playlist.duration == 180.0
    token = ids.pandora_id("playlist", playlist.id)
    with pytest.raises(ApiError) as foreign:
        playlists.owned(db, other.id, token)
    assert foreign.value.error is ErrorCode.USER_NOT_AUTHORIZED

    playlists.append(db, playlist, 1, [a], clock.now())  # the same track twice: two entries
    assert _order(db, playlist) == [a, b, c, a] and playlist.version == 2
    with pytest.raises(ApiError) as stale:
        playlists.append(db, playlist, 1, [d], clock.now())
    assert stale.value.error is ErrorCode.PLAYLIST_VERSION_MISMATCH
    assert _order(db, playlist) == [a, b, c, a]

    items = [e.item_id for e in playlists.entries(db, playlist, 0, 100)]
    # a bad index anywhere refuses the whole edit
    with pytest.raises(ApiError) as bad:
        playlists.edit(
            db, playlist, 2, clock.now(), deletes=[items[1]], moves=[playlists.Move(items[0], 9)]
        )
    assert bad.value.error is ErrorCode.PLAYLIST_BAD_RANGE
    assert _order(db, playlist) == [a, b, c, a] and playlist.version == 2
    # deletes, then moves on what is left, then inserts one after another
    playlists.edit(
        db,
        playlist,
        2,
        clock.now(),
        deletes=[items[1]],
        moves=[playlists.Move(items[3], 0)],
        inserts=[(d, 1), (b, 4)],
    )
    assert _order(db, playlist) == [a, d, a, c, b] and playlist.version == 3
    assert [e.position for e in playlists.entries(db, playlist, 0, 100)] == [0, 1, 2, 3, 4]
    assert playlist.total_tracks == 5 and playlist.duration == 300.0

    before = sorted(_order(db, playlist))
    playlists.shuffle(db, playlist, 3, clock.now(), random.Random(4))
    assert sorted(_order(db, playlist)) == before and playlist.version == 4
    with pytest.raises(ApiError) as too_long:
        playlists.append(db, playlist, 4, [a] * playlists.MAX_TRACKS, clock.now())
    assert too_long.value.error is ErrorCode.INVALID_REQUEST and playlist.version == 4

    in_collection = collection.has(db, me.id, [ids.Ref("playlist", playlist.id)])
    assert in_collection == {ids.Ref("playlist", playlist.id)}
    playlists.delete_playlist(db, playlist, clock.now())
    assert not collection.has(db, me.id, [ids.Ref("playlist", playlist.id)])


def test_playlist_pictures_come_from_their_first_covers(
    db: Session, rows: Rows, clock: FixedClock
) -> None:
    from airwave.store.models import Album, Artwork

    me = rows.listener("premium")
    tracks = [rows.track() for _ in range(5)]
    for n, track in enumerate(tracks[:4]):  # the fifth track's album has no cover
        art = Artwork(content_hash=f"{n:040x}", source_path=f"/music/{n}.jpg")
        db.add(art)
        db.flush()
        db.get(Album, track.album_id).art_id = art.id
    db.flush()
    made = {
        "one cover": [tracks[0].id, tracks[4].id, tracks[0].id],
        "four covers": [t.id for t in tracks],
        "no cover": [tracks[4].id],
        "empty": [],
    }
    lists = {
        name: playlists.create(db, me.id, name, "", entries, clock.now())
        for name, entries in made.items()
    }
    shown = playlists.pictures(db, [p.id for p in lists.values()])
    assert shown[lists["one cover"].id].artwork.content_hash == f"{0:040x}"
    mosaic = shown[lists["four covers"].id]
    assert mosaic.artwork is None and mosaic.mosaic == tuple(f"{n:040x}" for n in range(4))
    assert shown[lists["no cover"].id] == shown[lists["empty"].id] == catalog.Picture()
    # notes name the owner and show the same pictures, and leave others' playlists out
    other = playlists.create(db, rows.listener().id, "theirs", "", [], clock.now())
    notes = playlists.notes(db, me.id, [lists["four covers"].id, other.id])
    assert list(notes) == [lists["four covers"].id]
    assert notes[lists["four covers"].id].picture == mosaic
