"""Autoplay: when an album, a playlist or a chosen track ends, the music goes on from the station
engine, seeded by what was just played and steered by the thumbs given to autoplay's own picks.

Autoplay never repeats the album or playlist it follows, keeps the instance's separation rules
against the listener's recent on-demand plays, and leaves out thumbed-down and tired tracks.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core import ids, playlists
from airwave.core.catalog import catalog
from airwave.core.radio import delivery
from airwave.core.radio.engine.picker import Picker, Steering
from airwave.core.radio.engine.rules import History, Played
from airwave.core.radio.playlist import engine_random, rules_for, tired_tracks
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AutoplayFeedback, Listener, Playlist, Spin

CODE_OF: dict[str, str] = {"album": "AL", "playlist": "PL", "track": "TR", "artist": "AR"}
CONTEXT_SEEDS = 8  # tracks of the album or playlist that seed its autoplay
RECENT_SEEDS = 4  # of the tracks just played
MAX_SONGS = 50


@dataclass(frozen=True)
class Recommendation:
    track_id: int
    rating: int  # 1 thumbs-up, -1 thumbs-down (given in this context), 0 none
    token: str  # names (context, track) for addAutoplayFeedback


def context_of(db: Session, listener: Listener, token: str) -> ids.Ref:
    """The album, playlist (the listener's own), track or artist autoplay follows."""
    ref = catalog.resolve(token, "album", "playlist", "track", "artist")
    if ref.kind == "playlist":
        playlists.owned(db, listener.id, token)
    elif ref.kind == "album":
        catalog.album(db, ref.id)
    elif ref.kind == "track":
        catalog.track(db, ref.id)
    else:
        catalog.artist(db, ref.id)
    return ref


def _context_tracks(db: Session, context: ids.Ref) -> list[int]:
    if context.kind == "album":
        return catalog.album_tracks(db, context.id)
    if context.kind == "playlist":
        playlist = db.get(Playlist, context.id)
        assert playlist is not None
        return [e.track_id for e in playlists.entries(db, playlist, 0, playlists.MAX_TRACKS)]
    if context.kind == "track":
        return [context.id]
    return []


def token_of(context: ids.Ref, track_id: int) -> str:
    raw = json.dumps([CODE_OF[context.kind], context.id, track_id], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def parse_token(token: str) -> tuple[ids.Ref, int]:
    """(context, track id) of a recommendation's token."""
    try:
        raw = base64.urlsafe_b64decode((token + "=" * (-len(token) % 4)).encode())
        code, context_id, track_id = json.loads(raw)
        kind = {v: k for k, v in CODE_OF.items()}[code]
        if not all(isinstance(n, int) and 0 < n <= ids.MAX_ID for n in (context_id, track_id)):
            raise ValueError(token)
        return ids.Ref(kind, context_id), track_id  # type: ignore[arg-type]
    except (ValueError, KeyError, TypeError, json.JSONDecodeError, UnicodeDecodeError):
        raise ApiError(ErrorCode.INVALID_REQUEST, "that is not an autoplay token") from None


def _thumbs(db: Session, listener_id: int, context: ids.Ref) -> dict[int, bool]:
    rows = db.execute(
        select(AutoplayFeedback.track_id, AutoplayFeedback.is_positive)
        .where(
            AutoplayFeedback.listener_id == listener_id,
            AutoplayFeedback.context_kind == CODE_OF[context.kind],
            AutoplayFeedback.context_id == context.id,
        )
        .order_by(AutoplayFeedback.created_at.desc(), AutoplayFeedback.id.desc())
    )
    return dict(rows.all())


def _recent(db: Session, settings: Settings, listener_id: int, now: datetime) -> History:
    """The listener's recent on-demand plays, newest first, under the instance's rules."""
    rules = rules_for(db, settings)
    rows = db.execute(
        select(Spin.track_id, Spin.artist_id, Spin.album_id, Spin.issued_at)
        .where(Spin.listener_id == listener_id, Spin.station_id.is_(None))
        .order_by(Spin.issued_at.desc(), Spin.id.desc())
        .limit(max(rules.repeat_spins, rules.artist_run, rules.album_run))
    )
    return History([Played(*r) for r in rows], now, rules)


def songs(
    db: Session,
    settings: Settings,
    listener: Listener,
    context: ids.Ref,
    played: Sequence[int],
    count: int,
    now: datetime,
    *,
    outside: bool = True,
) -> list[Recommendation]:
    """Up to `count` tracks to play after `context` (and the tracks just `played`, newest
    first). With `outside`, nothing of the context itself (an album or playlist goes on with
    other music)."""
    delivery.require_on_demand(settings, listener)
    history = _recent(db, settings, listener.id, now)
    rng = engine_random(settings, 0, len(history.spins))
    own = _context_tracks(db, context)
    sample = rng.sample(own, min(len(own), CONTEXT_SEEDS))
    seeds: list[tuple[str, int]] = [
        ("TR", t) for t in dict.fromkeys([*played[:RECENT_SEEDS], *sample])
    ]
    if context.kind == "artist":
        seeds.append(("AR", context.id))
    thumbs = _thumbs(db, listener.id, context)
    downs = [t for t, up in thumbs.items() if not up]
    banned = set(downs) | tired_tracks(db, listener.id, now) | set(played)
    if outside and context.kind in ("album", "playlist"):
        banned |= set(own)
    steering = Steering(
        seeds=seeds,
        positives=[t for t, up in thumbs.items() if up],
        negatives=downs,
        negative_artists=Counter(),
        banned=banned,
        explicit_filter=listener.explicit_filter,
    )
    picks = Picker(db, steering, history, rng).pick(min(count, MAX_SONGS))
    return [
        Recommendation(
            p.track_id,
            {True: 1, False: -1}.get(thumbs.get(p.track_id), 0),  # type: ignore[arg-type]
            token_of(context, p.track_id),
        )
        for p in picks
    ]


def feedback(
    db: Session,
    listener: Listener,
    context: ids.Ref,
    track_id: int,
    positive: bool,
    now: datetime,
) -> None:
    """Thumb a track autoplay chose after `context`: later picks after it lean that way (a
    thumbs-down is never chosen again there). The last thumb counts."""
    catalog.track(db, track_id)
    found = db.scalar(
        select(AutoplayFeedback).where(
            AutoplayFeedback.listener_id == listener.id,
            AutoplayFeedback.context_kind == CODE_OF[context.kind],
            AutoplayFeedback.context_id == context.id,
            AutoplayFeedback.track_id == track_id,
        )
    )
    if found is not None:
        found.is_positive, found.created_at = positive, now
        return
    try:
        with db.begin_nested():
            db.add(
                AutoplayFeedback(
                    listener_id=listener.id,
                    context_kind=CODE_OF[context.kind],
                    context_id=context.id,
                    track_id=track_id,
                    is_positive=positive,
                    created_at=now,
                )
            )
    except IntegrityError:  # the same thumb from another device at the same moment
        pass
