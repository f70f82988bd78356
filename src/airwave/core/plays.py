"""The play log: the trackTokens naming spins, how spins ended (receipt and skip URLs) and the
export operators report royalties from."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, TextIO, cast

from sqlalchemy import CursorResult, func, or_, select, update
from sqlalchemy.orm import Session

from airwave.audio.signing import ReceiptGrant
from airwave.core.clock import iso_timestamp
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AdSpin, Album, Artist, Listener, Spin, Station, Track

Outcome = Literal["completed", "skipped"]


@dataclass(frozen=True)
class SpinEnd:
    """How a spin ended; `recorded` is False when an earlier receipt had already settled it (the
    first wins)."""

    spin_id: int
    outcome: str
    seconds_played: float
    recorded: bool


def record_end(
    db: Session, grant: ReceiptGrant, outcome: Outcome, seconds: float | None, now: datetime
) -> SpinEnd:
    """Settle a spin as completed or skipped, once; later receipts for it change nothing and say
    so."""
    spin = db.get(Spin, grant.spin_id)
    if spin is None:
        raise ApiError(ErrorCode.NOT_FOUND, "this spin is not in the play log")
    if spin.listener_id != grant.listener_id:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "this spin was played by another listener")
    if spin.outcome is not None:
        return SpinEnd(spin.id, spin.outcome, spin.seconds_played, False)
    duration = db.scalar(select(Track.duration).where(Track.id == spin.track_id)) or 0.0
    played = seconds_played(outcome, seconds, spin.started_at or spin.issued_at, duration, now)
    result = db.execute(
        update(Spin)
        .where(Spin.id == spin.id, Spin.outcome.is_(None))
        .values(outcome=outcome, ended_at=now, seconds_played=played)
    )
    changed = cast("CursorResult[Any]", result).rowcount
    if not changed:  # another receipt for the same spin committed first
        db.refresh(spin)
        return SpinEnd(spin.id, spin.outcome or outcome, spin.seconds_played, False)
    return SpinEnd(spin.id, outcome, played, True)


def seconds_played(
    outcome: Outcome, reported: float | None, started: datetime, duration: float, now: datetime
) -> float:
    """What the client reported, else the whole track (completed) or the time since it started
    (skipped);
    never more than the track lasts."""
    if reported is not None and math.isfinite(reported):
        played = max(0.0, reported)
    elif outcome == "completed" and duration > 0:
        played = duration
    else:
        played = max(0.0, (now - started).total_seconds())
    return round(min(played, duration) if duration > 0 else played, 3)


@dataclass(frozen=True)
class Play:
    """One line of the play log export."""

    spin_id: int
    started_at: str
    listener_id: int
    station_id: int | None
    station: str
    track_id: int
    title: str
    artist: str
    album: str
    isrc: str
    musicbrainz_id: str
    duration: float
    seconds_played: float
    outcome: str  # "completed", "skipped", or "" when the client never reported the end
    audio_encoding: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


PLAY_FIELDS: tuple[str, ...] = tuple(Play.__dataclass_fields__)


def play_log(db: Session, since: datetime, until: datetime) -> Iterator[Play]:
    """Spins that started playing (or were reported ended) in [since, until), oldest first."""
    start = func.coalesce(Spin.started_at, Spin.issued_at)
    query = (
        select(
            Spin.id,
            Spin.started_at,
            Spin.issued_at,
            Spin.listener_id,
            Spin.station_id,
            Station.name,
            Spin.track_id,
            Track.title,
            Artist.name,
            Album.title,
            Track.isrc,
            Track.mbid,
            Track.duration,
            Spin.seconds_played,
            Spin.outcome,
            Spin.audio_encoding,
        )
        .join(Track, Track.id == Spin.track_id)
        .join(Artist, Artist.id == Track.artist_id)
        .join(Album, Album.id == Track.album_id)
        .outerjoin(Station, Station.id == Spin.station_id)
        .where(or_(Spin.started_at.is_not(None), Spin.outcome.is_not(None)))
        .where(start >= since, start < until)
        .order_by(start, Spin.id)
        .execution_options(yield_per=1000)
    )
    for r in db.execute(query):
        yield Play(
            spin_id=r[0],
            started_at=iso_timestamp(r[1] or r[2]),
            listener_id=r[3],
            station_id=r[4],
            station=r[5] or "",
            track_id=r[6],
            title=r[7],
            artist=r[8],
            album=r[9],
            isrc=r[10] or "",
            musicbrainz_id=r[11] or "",
            duration=round(r[12] or 0.0, 3),
            seconds_played=round(r[13] or 0.0, 3),
            outcome=r[14] or "",
            audio_encoding=r[15] or "",
        )


def write_export(plays: Iterator[Play], handle: TextIO, fmt: Literal["csv", "json"]) -> int:
    """Write plays as CSV (header row, one line per play) or a JSON array of objects; returns how
    many."""
    count = 0
    if fmt == "csv":
        writer = csv.DictWriter(handle, fieldnames=PLAY_FIELDS, lineterminator="\n")
        writer.writeheader()
        for play in plays:
            writer.writerow(play.as_dict())
            count += 1
        return count
    handle.write("[")
    for play in plays:
        handle.write(",\n" if count else "\n")
        handle.write(json.dumps(play.as_dict(), ensure_ascii=False))
        count += 1
    handle.write("\n]\n" if count else "]\n")
    return count


TOKEN_LIFETIME = timedelta(hours=24)  # a trackToken names its spin for a day


def spin_by_token(
    db: Session, listener_id: int, token: str, now: datetime, *, for_update: bool = False
) -> Spin:
    """The spin a trackToken names: NOT_FOUND, USER_NOT_AUTHORIZED (another listener's) or
    CONTENT_HAS_EXPIRED."""
    query = select(Spin).where(Spin.token == token[:64])
    if for_update:  # locked and fresh, even when this session read the spin before
        query = query.with_for_update().execution_options(populate_existing=True)
    spin = db.scalar(query)
    if spin is None:
        refuse_ad_token(db, listener_id, token)
        raise ApiError(ErrorCode.NOT_FOUND, "unknown trackToken")
    if spin.listener_id != listener_id:
        raise ApiError(
            ErrorCode.USER_NOT_AUTHORIZED, "that trackToken was issued to another listener"
        )
    if now - spin.issued_at > TOKEN_LIFETIME:
        raise ApiError(ErrorCode.CONTENT_HAS_EXPIRED, "that trackToken is more than 24 hours old")
    return spin


def refuse_ad_token(db: Session, listener_id: int, token: str) -> None:
    """For track-token endpoints: a clear refusal when the token is an adToken (ads take no
    feedback)."""
    owner = db.scalar(select(AdSpin.listener_id).where(AdSpin.token == token[:64]))
    if owner is None:
        return
    if owner != listener_id:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "that adToken was issued to another listener")
    raise ApiError(
        ErrorCode.CALL_NOT_ALLOWED,
        "that is an ad's token: ads take no feedback, tired or bookmark; report their plays with "
        "ad/registerImpression",
    )


NOW_PLAYING_GRACE = timedelta(minutes=5)  # a pause, a slow network: still "now" this long after
NOW_PLAYING_LOOKBACK = timedelta(hours=3)


@dataclass(frozen=True)
class NowPlaying:
    """A track a listener started and has not finished, as apps show who listens to what."""

    track_id: int
    username: str
    started_at: datetime
    player_id: int  # the session that plays it; 0 when unknown


def now_playing(db: Session, viewer_id: int, now: datetime) -> list[NowPlaying]:
    """Each listener's latest started, unfinished spin whose track would still be playing (plus a
    grace), newest first; listeners with a private profile show only to themselves."""
    rows = db.execute(
        select(Spin.track_id, Spin.listener_id, Spin.started_at, Spin.session_id)
        .add_columns(Listener.username, Listener.profile_private, Track.duration)
        .join(Listener, Listener.id == Spin.listener_id)
        .join(Track, Track.id == Spin.track_id)
        .where(
            Spin.started_at.is_not(None),
            Spin.started_at > now - NOW_PLAYING_LOOKBACK,
            Spin.outcome.is_(None),
        )
        .order_by(Spin.started_at.desc(), Spin.id.desc())
        .limit(2000)
    )
    seen: set[int] = set()
    found = []
    for track_id, listener_id, started, session_id, username, private, duration in rows:
        if listener_id in seen:
            continue
        seen.add(listener_id)
        if private and listener_id != viewer_id:
            continue
        if started + timedelta(seconds=duration or 0) + NOW_PLAYING_GRACE < now:
            continue
        found.append(NowPlaying(track_id, username, started, session_id or 0))
    return found
