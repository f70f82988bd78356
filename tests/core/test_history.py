"""A listener's history: the plays that began (or were reported ended), newest first, theirs
only, with the station they played on."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.orm import Session

from airwave.core.history import history
from airwave.store.models import Spin

from .conftest import Rows


def spin(db: Session, rows: Rows, listener_id: int, track_id: int, minutes: int, **kw: object):
    at = rows.now + timedelta(minutes=minutes)
    row = Spin(
        token=f"t{listener_id}-{track_id}-{minutes}",
        listener_id=listener_id,
        track_id=track_id,
        artist_id=0,
        album_id=0,
        issued_at=at - timedelta(seconds=5),
        **kw,
    )
    db.add(row)
    db.flush()
    return row


def test_history_lists_what_began_newest_first(db: Session, rows: Rows) -> None:
    me, other = rows.listener(), rows.listener()
    station = rows.station(me)
    first, second, never = rows.track(), rows.track(), rows.track()
    now = rows.now
    a = spin(db, rows, me.id, first.id, 1, started_at=now + timedelta(minutes=1))
    b = spin(
        db,
        rows,
        me.id,
        second.id,
        2,
        started_at=now + timedelta(minutes=2),
        station_id=station.id,
        outcome="skipped",
        seconds_played=12.4,
    )
    # a receipt without trackStarted still counts; a spin served but never begun does not
    c = spin(
        db, rows, me.id, first.id, 3, outcome="completed", seconds_played=180.0, reason="OnDemand"
    )
    spin(db, rows, me.id, never.id, 4)
    spin(db, rows, other.id, never.id, 5, started_at=now + timedelta(minutes=5))

    page = history(db, me.id, 0, 10)
    assert page.total == 3
    assert [h.spin_id for h in page.items] == [c.id, b.id, a.id]
    assert [h.track.track.id for h in page.items] == [first.id, second.id, first.id]
    assert page.items[1].station_id == station.id
    assert page.items[1].station_name == station.name
    assert page.items[1].outcome == "skipped" and page.items[1].seconds_played == 12.4
    assert page.items[2].station_id is None and page.items[2].outcome is None
    assert [h.on_demand for h in page.items] == [True, False, False]
    assert all(h.is_available for h in page.items)

    # pages
    assert [h.spin_id for h in history(db, me.id, 1, 1).items] == [b.id]
    past_end = history(db, me.id, 5, 10)
    assert past_end.total == 3 and past_end.items == []
    assert history(db, rows.listener().id, 0, 10).total == 0


def test_a_track_gone_from_the_library_stays_in_history_marked(db: Session, rows: Rows) -> None:
    me = rows.listener()
    track = rows.track()
    spin(db, rows, me.id, track.id, 1, started_at=rows.now)
    track.missing_since = rows.now
    db.flush()
    (heard,) = history(db, me.id, 0, 10).items
    assert heard.is_available is False
