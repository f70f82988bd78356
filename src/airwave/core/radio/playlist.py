"""Fragments and spins: what a station plays next, track tokens, skips, the active player,
replays, tired tracks."""

from __future__ import annotations

import random
import secrets
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from airwave import metrics
from airwave.config import Settings, TierPolicy
from airwave.core import bookmarks, collection, ids
from airwave.core.catalog import catalog
from airwave.core.plays import spin_by_token
from airwave.core.radio import ads, delivery, listening, player, stations
from airwave.core.radio.engine.known import UNREAD, Known, Stamp, Unread
from airwave.core.radio.engine.picker import Pick, Picker, Steering
from airwave.core.radio.engine.rules import History, Played, Rules
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.store import bulk
from airwave.store.models import (
    AuthSession,
    Feedback,
    Listener,
    SkipEvent,
    Spin,
    Station,
    StationSeed,
    TiredTrack,
    Track,
    TrackProfile,
)
from airwave.store.prepared import Columns, Prepared

FRAGMENT_SIZE = 4
# table columns: the statements a fragment runs every time go through SQLAlchemy Core, not the ORM
_SPINS = Spin.__table__.c
_FEEDBACK = Feedback.__table__.c
_TRACKS = Track.__table__.c
_TIRED = TiredTrack.__table__.c
_SEEDS = StationSeed.__table__.c
_PROFILES = TrackProfile.__table__.c

# statements built once: building and hashing one costs more than running it; the ones every
# fragment runs compiled once and run on the driver's cursor (store/prepared.py)
_SPIN_COLUMNS = Columns(Spin)
_RECENT_SPINS = Prepared(
    select(func.count()).select_from(
        select(_SPINS.id)
        .where(
            _SPINS.listener_id == bindparam("listener_id"),
            _SPINS.issued_at > bindparam("since"),
            _SPINS.is_replay.is_(False),
        )
        .limit(bindparam("limit"))
        .subquery()
    )
)
_STATION_SPINS = select(
    _SPINS.id, _SPINS.track_id, _SPINS.artist_id, _SPINS.album_id, _SPINS.issued_at
).where(_SPINS.station_id == bindparam("station_id"), _SPINS.is_replay.is_(False))
_LAST_SPINS = Prepared(
    _STATION_SPINS.order_by(_SPINS.issued_at.desc(), _SPINS.id.desc()).limit(bindparam("limit"))
)
_WINDOW_SPINS = Prepared(
    _STATION_SPINS.where(_SPINS.issued_at > bindparam("since"))
    .order_by(_SPINS.issued_at.desc(), _SPINS.id.desc())
    .limit(2000)
)
_TIRED_IDS = Prepared(
    select(_TIRED.track_id).where(
        _TIRED.listener_id == bindparam("listener_id"), _TIRED.until > bindparam("now")
    )
)
_STATION_FEEDBACK = Prepared(
    select(_FEEDBACK.track_id, _FEEDBACK.is_positive, _TRACKS.artist_id)
    .join(Track.__table__, _TRACKS.id == _FEEDBACK.track_id)
    .where(_FEEDBACK.station_id == bindparam("station_id"))
    .order_by(_FEEDBACK.created_at.desc(), _FEEDBACK.id.desc())
)
_STATION_SEEDS = Prepared(  # as stations.seeds_of orders them
    select(_SEEDS.kind, _SEEDS.ref_id)
    .where(_SEEDS.station_id == bindparam("station_id"))
    .order_by(_SEEDS.created_at, _SEEDS.id)
)
_MEASURED_GAINS = Prepared(
    select(_PROFILES.track_id, _PROFILES.gain_db).where(
        _PROFILES.track_id.in_(bindparam("ids", expanding=True))
    )
)
TIRED_FOR = timedelta(days=30)
REASONS = ("Normal", "Skip", "ThumbsDown", "Tired")


@dataclass
class Fragment:
    station: Station
    spins: list[Spin]
    allow_skip: bool
    skips_left: int | None  # None = unlimited
    ad_breaks: list[ads.AdBreak] = field(
        default_factory=list
    )  # free tier: ads placed between the spins
    # read while choosing, so that the track objects need not read them again: the station's
    # seeds (None: not read) and each station's thumbs-up (shuffle: the stations it drew from)
    seeds: set[tuple[str, int]] | None = None
    liked: dict[int, set[int]] = field(default_factory=dict)
    # the catalogue's stamp the spins were chosen under: the track objects' reads, after the
    # write, come later still, so the stamp holds for them (one statement fewer a fragment)
    stamp: Stamp | None | Unread = UNREAD


@dataclass(frozen=True)
class TrackItem:
    """A spin as a client gets it: the catalogue view, signed URLs and what this listener did
    with it."""

    spin: Spin
    view: catalog.TrackView
    artist_picture: catalog.Picture
    links: delivery.AudioLinks
    gain: float | None  # dB: ReplayGain when tagged, else measured loudness
    lyrics: catalog.Lyrics | None
    station_id: int
    rating: int  # 1 = thumbs-up on its station
    is_seed: bool
    is_bookmarked: bool
    allow_skip: bool
    allow_feedback: bool
    rights: list[str]


@dataclass(frozen=True)
class FragmentItems:
    """playlist/getFragment: tracks with the ads placed between them."""

    station_id: int
    items: list[TrackItem | ads.AdItem]
    skips_left: int | None  # None = unlimited
    qualifies_for_upsell: bool


@dataclass(frozen=True)
class OnDemandPlay:
    """ondemand/getAudioPlaybackInfo: one track's signed URLs, gains and length."""

    links: delivery.AudioLinks
    gain: float | None
    duration: float
    token: str
    album_gain: float | None = None  # dB: the album's ReplayGain tag, when it has one
    track_peak: float | None = None  # the track's ReplayGain peak (1.0 = full scale), if tagged
    album_peak: float | None = None  # the album's peak (catalog.album_peak), with album_gain


def feedback_station(db: Session, spin: Spin) -> Station:
    """The station a spin's feedback belongs to: the station that played it or, for a track
    shuffle played, the station shuffle took it from (so a client that knows nothing of shuffle
    can rate what it plays)."""
    gone = ApiError(ErrorCode.STATION_DOES_NOT_EXIST, "the station of that track has been deleted")
    station_id = spin.origin_station_id or spin.station_id
    if station_id is None:
        raise gone
    # locked before the feedback row's keys lock the listener's: the order getFragment takes
    station = db.get(Station, station_id, with_for_update=True)
    if station is None:  # deleted since the spin was read
        raise gone
    if station.is_shuffle:  # drawn from the whole library, or its station has been deleted
        raise ApiError(
            ErrorCode.CALL_NOT_ALLOWED,
            "that track did not come from one of your stations (shuffle played it from the whole "
            "library, or its station was deleted); start a station from it to rate it",
        )
    return station


# ---------------------------------------------------------------- limits


def _check_rate(db: Session, settings: Settings, listener_id: int, now: datetime) -> None:
    since = now - timedelta(seconds=settings.fragment_window)
    limit = settings.fragment_limit * FRAGMENT_SIZE + 1
    spins = _RECENT_SPINS.scalar(db, listener_id=listener_id, since=since, limit=limit) or 0
    fragments = -(-spins // FRAGMENT_SIZE)
    if fragments >= settings.fragment_limit:
        raise ApiError(
            ErrorCode.PLAYLIST_EXCEEDED,
            f"at most {settings.fragment_limit} fragments per {settings.fragment_window} s; "
            "wait a moment",
            retry_after=60,
        )


def skips_left(
    db: Session, policy: TierPolicy, listener_id: int, station_id: int, now: datetime
) -> int | None:
    """Skips the listener may still spend on this station now (None = unlimited)."""
    left: list[int] = []
    if policy.station_skip_limit:
        used = (
            db.scalar(
                select(func.count(SkipEvent.id)).where(
                    SkipEvent.listener_id == listener_id,
                    SkipEvent.station_id == station_id,
                    SkipEvent.at > now - timedelta(hours=1),
                )
            )
            or 0
        )
        left.append(policy.station_skip_limit - used)
    if policy.daily_skip_limit:
        used = (
            db.scalar(
                select(func.count(SkipEvent.id)).where(
                    SkipEvent.listener_id == listener_id, SkipEvent.at > now - timedelta(days=1)
                )
            )
            or 0
        )
        left.append(policy.daily_skip_limit - used)
    return max(0, min(left)) if left else None


def _spend_skip(
    db: Session, policy: TierPolicy, listener_id: int, station_id: int, now: datetime
) -> None:
    left = skips_left(db, policy, listener_id, station_id, now)
    if left is not None and left <= 0:
        raise ApiError(
            ErrorCode.STATION_LIMIT_REACHED,
            f"skip limit reached ({policy.station_skip_limit} per station per hour, "
            f"{policy.daily_skip_limit} per day)",
        )
    db.add(SkipEvent(listener_id=listener_id, station_id=station_id, at=now))


# ---------------------------------------------------------------- steering and history


def _history(db: Session, station_id: int, rules: Rules, now: datetime) -> History:
    """The station's recent spins (replays are on demand, not radio): the last N plus all in the
    window, newest first. The last N are read first: the window holds more only when all of them
    are in it (a listener playing along holds far fewer in three hours), and then its read has
    them all."""
    last = max(rules.repeat_spins, rules.artist_run, rules.album_run)
    since = now - rules.window
    rows = _LAST_SPINS.all(db, station_id=station_id, limit=last)
    if len(rows) == last and rows[-1][4] > since:
        rows = _WINDOW_SPINS.all(db, station_id=station_id, since=since)
    return History([Played(r[1], r[2], r[3], r[4]) for r in rows], now, rules)


def rules_for(db: Session, settings: Settings, known: Known | None = None) -> Rules:
    """The separation rules of this instance: strict, or relaxed to the size of a small library."""
    if settings.radio_rules == "strict":
        return Rules()
    known = known if known is not None else Known(db)
    return Rules.relaxed(*known.library_size())


def tired_tracks(db: Session, listener_id: int, now: datetime) -> set[int]:
    """Tracks the listener asked not to hear for a while."""
    return set(_TIRED_IDS.scalars(db, listener_id=listener_id, now=now))


def steering_for(
    db: Session,
    station: Station,
    listener: Listener,
    now: datetime,
    rng: random.Random,
    tired: set[int],
) -> Steering:
    """Seeds, thumbs and bans of one (non-shuffle) station."""
    feedback = _STATION_FEEDBACK.all(db, station_id=station.id)
    positives = [t for t, up, _ in feedback if up]
    negatives = [t for t, up, _ in feedback if not up]
    seeds = [(kind, ref) for kind, ref in _STATION_SEEDS.all(db, station_id=station.id)]
    if station.is_thumbprint:
        liked = list(
            db.scalars(
                select(Feedback.track_id)
                .where(Feedback.listener_id == listener.id, Feedback.is_positive.is_(True))
                .order_by(Feedback.created_at.desc())
                .limit(400)
            )
        )
        liked = list(dict.fromkeys(liked))
        seeds = [("TR", t) for t in rng.sample(liked, min(len(liked), 30))]
    return Steering(
        seeds=seeds,
        positives=positives,
        negatives=negatives,
        negative_artists=Counter(a for _, up, a in feedback if not up),
        banned=set(negatives) | tired,
        explicit_filter=listener.explicit_filter,
    )


LIBRARY_SEED_GENRES = 12


def _library_steering(
    db: Session, listener: Listener, rng: random.Random, tired: set[int]
) -> Steering:
    """The whole library as one station: a sample of its genres as seeds, nothing learnt."""
    genres = catalog.playable_genre_ids(db)
    return Steering(
        seeds=[("GE", g) for g in rng.sample(genres, min(len(genres), LIBRARY_SEED_GENRES))],
        positives=[],
        negatives=[],
        negative_artists=Counter(),
        banned=set(tired),
        explicit_filter=listener.explicit_filter,
    )


def engine_random(settings: Settings, station_id: int, served: int) -> random.Random:
    """The engine's random source: reproducible when the operator (or a test) sets engine_seed."""
    if settings.engine_seed is None:
        return random.Random(secrets.randbits(64))
    return random.Random(f"{settings.engine_seed}:{station_id}:{served}")


# ---------------------------------------------------------------- fragments


def _opener(db: Session, station: Station, picker: Picker) -> list[Pick]:
    """A song station's first fragment opens with its song, as listeners expect, when the rules
    allow it (a thumbed-down, tired, explicit-filtered or vanished song does not open it)."""
    if station.initial_kind != "TR" or station.initial_ref is None:
        return []
    if picker.history.spins:  # the station has played before (its history holds a spin)
        return []
    if db.scalar(select(Spin.id).where(Spin.station_id == station.id).limit(1)) is not None:
        return []
    pinned = picker.pin(station.initial_ref, ids.music_id("track", station.initial_ref))
    return [pinned] if pinned is not None else []


@dataclass(frozen=True)
class FragmentPlan:
    """A fragment's tracks chosen on a read snapshot, before the write transaction: the write
    takes them while the station's newest spin is still `marker` and the catalogue's stamp still
    `stamp` (no scan committed since), and chooses again otherwise.
    Choosing is most of a fragment's work; done outside the write, it does not hold SQLite's one
    write lock while other processes' writers wait."""

    station_id: int
    marker: tuple[int, datetime] | None
    stamp: object  # the catalogue stamp the choice was made under (None: unknown)
    now: datetime
    picks: list[tuple[Pick, int | None]]
    seeds: set[tuple[str, int]] | None
    liked: dict[int, set[int]]
    rng: random.Random  # as the choosing left it: the ads drawn after it draw the same


def _newest_spin(db: Session, station_id: int) -> tuple[int, datetime] | None:
    """The station's newest radio spin (what its history, and so its next choice, starts from)."""
    row = _LAST_SPINS.first(db, station_id=station_id, limit=1)
    return (row[0], row[4]) if row is not None else None


def _choose(
    db: Session,
    settings: Settings,
    listener: Listener,
    station: Station,
    now: datetime,
    known: Known,
    planning: bool = False,
) -> FragmentPlan:
    """The fragment's tracks under the radio rules, from the station's history, seeds, thumbs
    and the listener's tired tracks; reads only. `planning`: on a read snapshot, for a later
    write (the station's newest spin is read to tell whether the choice still holds)."""
    marker = _newest_spin(db, station.id) if planning else None
    rules = rules_for(db, settings, known)
    history = _history(db, station.id, rules, now)
    rng = engine_random(settings, station.id, len(history.spins))
    tired = tired_tracks(db, listener.id, now)
    picks: list[tuple[Pick, int | None]] = []
    seeds: set[tuple[str, int]] | None = None
    liked: dict[int, set[int]] = {}

    def steer(source: Station) -> Steering:
        steering = steering_for(db, source, listener, now, rng, tired)
        liked[source.id] = set(steering.positives)
        return steering

    if station.is_shuffle:
        members = stations.shuffle_member_ids(db, station.id)
        if not members and stations.count_stations(db, listener.id) == 0:
            # a new listener's shuffle, before any station of theirs: the whole library
            picker = Picker(db, _library_steering(db, listener, rng, tired), history, rng, known)
            picks = [(p, None) for p in picker.pick(FRAGMENT_SIZE)]
        elif not members:
            raise ApiError(
                ErrorCode.UNPLAYABLE_SHUFFLE_STATION, "choose at least one station for shuffle"
            )
        pickers: dict[int, Picker] = {}
        order = [rng.choice(members) for _ in range(FRAGMENT_SIZE)] if members else []
        for member in order:
            if member not in pickers:
                source = db.get(Station, member)
                assert source is not None
                pickers[member] = Picker(db, steer(source), history, rng, known)
            got = pickers[member].pick(1)
            if not got:  # this station is exhausted: let another member fill the slot
                for other in members:
                    if other not in pickers:
                        source = db.get(Station, other)
                        assert source is not None
                        pickers[other] = Picker(db, steer(source), history, rng, known)
                    got = pickers[other].pick(1)
                    if got:
                        member = other
                        break
            picks += [(p, member) for p in got]
    else:
        steering = steer(station)
        picker = Picker(db, steering, history, rng, known)
        # a Thumbprint station steers by liked tracks, not by its seeds
        seeds = None if station.is_thumbprint else set(steering.seeds)
        opener = _opener(db, station, picker)
        picks = [(p, None) for p in [*opener, *picker.pick(FRAGMENT_SIZE - len(opener))]]
    return FragmentPlan(station.id, marker, known.stamp, now, picks, seeds, liked, rng)


def plan_fragment(
    db: Session, services: Services, listener: Listener, station_id: str, now: datetime
) -> FragmentPlan | None:
    """The next fragment's tracks chosen on a read snapshot, for write_fragment to take (see
    FragmentPlan); None when there is nothing to plan (the write then decides and answers, in
    the order the rules are checked, whatever error there is).

    Only where writers take turns (SQLite's one write lock): on PostgreSQL the writes of
    different listeners run at once, and a second transaction would only cost."""
    if not services.database.is_sqlite:
        return None
    try:
        station = stations.read_station(db, listener.id, station_id)
        return _choose(db, services.settings, listener, station, now, Known(db), planning=True)
    except ApiError:
        return None


def fragment(
    db: Session,
    settings: Settings,
    listener: Listener,
    session: AuthSession,
    station: Station,
    reason: str,
    now: datetime,
    known: Known | None = None,
    audio_encoding: str | None = None,
    plan: FragmentPlan | None = None,
) -> Fragment:
    """The next tracks of a station, with every rule of spec §6.4-6.6 applied; writes the spins
    (with the encoding delivered, when given). A `plan` chosen for this station at this `now`
    is taken while the station has played nothing since and the catalogue is unchanged."""
    known = known if known is not None else Known(db)
    policy = settings.tier(listener.tier)
    claim = player.claim_player(db, listener, session, now, force=False, save=False)
    _check_rate(db, settings, listener.id, now)
    if reason == "Skip":
        _spend_skip(db, policy, listener.id, station.id, now)
    if (
        plan is None
        or plan.station_id != station.id
        or plan.now != now
        or plan.stamp is None
        or plan.stamp != known.stamp
        or plan.marker != _newest_spin(db, station.id)
    ):
        plan = _choose(db, settings, listener, station, now, known)
    picks, seeds, liked, rng = plan.picks, plan.seeds, plan.liked, plan.rng
    if not picks:
        raise ApiError(
            ErrorCode.PLAYLIST_END,
            "this station has no playable track left; add a seed or remove some thumbs-down",
        )
    values = [
        {
            "token": secrets.token_urlsafe(18),
            "listener_id": listener.id,
            "session_id": session.id,
            "station_id": station.id,
            "origin_station_id": origin,
            "track_id": pick.track_id,
            "artist_id": pick.artist_id,
            "album_id": pick.album_id,
            "seed_music_id": pick.seed_music_id,
            "reason": reason,
            "audio_encoding": audio_encoding,
            "is_replay": False,
            "issued_at": now + timedelta(microseconds=offset),
            "started_at": None,
            "ended_at": None,
            "seconds_played": 0.0,
            "outcome": None,
        }
        for offset, (pick, origin) in enumerate(picks)
    ]
    # one statement for the fragment's spins (their ids told apart by their unique tokens); the
    # Spin objects made of them are detached, for reading (the ORM's constructor cost some 18
    # attribute events a spin)
    inserted = bulk.insert_returning(db.connection(), Spin.__table__, values, ("id", "token"))
    new_ids = {token: spin_id for spin_id, token in inserted}
    spins = [
        _SPIN_COLUMNS.detached(
            [new_ids[row["token"]] if k == "id" else row[k] for k in _SPIN_COLUMNS.keys]
        )
        for row in values
    ]
    lengths = {t: m[3] for t, m in known.meta(p.track_id for p, _ in picks).items() if m}
    player.hold_player(claim, now + timedelta(seconds=sum(lengths.values())) + player.CLAIM_GRACE)
    player.save_claim(db, claim)  # the claim and its hold in one statement
    db.flush()  # a skip (counted below)
    breaks = ads.fragment_breaks(db, settings, listener, station.id, spins, rng, lengths)
    left = skips_left(db, policy, listener.id, station.id, now)
    metrics.FRAGMENTS.labels(listener.tier).inc()
    return Fragment(
        station, spins, left is None or left > 0, left, breaks, seeds, liked, known.stamp
    )


def track_started(
    db: Session, listener: Listener, session: AuthSession, token: str, now: datetime
) -> Spin:
    """The listener began playing a spin: the station's lastPlayed and play time, and the
    player's claim."""
    player.check_player(db, listener.id, session.id, now)
    spin = spin_by_token(db, listener.id, token, now)
    # station, then spin, then listener: the order getFragment and a deletion take rows in, so
    # two calls of one listener never wait on each other in a circle
    station = None
    if spin.station_id is not None:
        station = db.get(Station, spin.station_id, with_for_update=True)
    spin = spin_by_token(db, listener.id, token, now, for_update=True)
    track = db.get(Track, spin.track_id)
    if spin.started_at is None:
        spin.started_at = now
        if station is not None:
            station.last_played_at = now
            station.total_play_time += round(track.duration) if track else 0
        db.flush()
    holder = db.get(Listener, listener.id, with_for_update=True)
    if holder is not None and holder.active_session_id == session.id:
        holder.active_at = now
        playing = timedelta(seconds=track.duration or 0) if track is not None else timedelta()
        player.hold_player(holder, now + playing + player.CLAIM_GRACE)
    return spin


def replay(
    db: Session, settings: Settings, listener: Listener, station: Station, token: str, now: datetime
) -> Spin:
    """A spin played again on request (tiers with replays)."""
    if not settings.tier(listener.tier).replays:
        raise ApiError(ErrorCode.LISTENER_NOT_AUTHORIZED, "replays are not part of your plan")
    original = spin_by_token(db, listener.id, token, now)
    if original.station_id != station.id:
        raise ApiError(ErrorCode.INVALID_REQUEST, "that trackToken was not played on this station")
    source = original.origin_station_id or station.id
    downed = db.scalar(
        select(Feedback.id).where(
            Feedback.station_id == source,
            Feedback.track_id == original.track_id,
            Feedback.is_positive.is_(False),
        )
    )
    track = db.get(Track, original.track_id)
    if downed is not None or track is None or track.missing_since is not None:
        raise ApiError(ErrorCode.CALL_NOT_ALLOWED, "that track cannot be replayed")
    spin = Spin(
        token=secrets.token_urlsafe(18),
        listener_id=listener.id,
        station_id=station.id,
        origin_station_id=original.origin_station_id,
        track_id=original.track_id,
        artist_id=original.artist_id,
        album_id=original.album_id,
        seed_music_id=original.seed_music_id,
        reason="Replay",
        issued_at=now,
        seconds_played=0.0,
        is_replay=True,
    )
    db.add(spin)
    db.flush()
    return spin


def add_tired(db: Session, listener: Listener, token: str, now: datetime) -> None:
    spin = spin_by_token(db, listener.id, token, now)
    row = db.get(TiredTrack, (listener.id, spin.track_id))
    if row is None:
        db.add(TiredTrack(listener_id=listener.id, track_id=spin.track_id, until=now + TIRED_FOR))
    else:
        row.until = now + TIRED_FOR


def ratings(
    db: Session, spins: list[Spin], liked: dict[int, set[int]] | None = None
) -> dict[int, int]:
    """1 for spins whose track has a thumbs-up on its station (`liked`: the thumbs-up already read
    of some stations)."""
    liked = liked or {}
    known = {
        s.id: int(s.track_id in liked[station])
        for s in spins
        if (station := s.origin_station_id or s.station_id) in liked
    }
    pairs = {(s.origin_station_id or s.station_id, s.track_id) for s in spins if s.id not in known}
    if not pairs:
        return known
    liked_pairs = set(
        db.execute(
            select(Feedback.station_id, Feedback.track_id).where(
                Feedback.station_id.in_({p[0] for p in pairs}),
                Feedback.track_id.in_({p[1] for p in pairs}),
                Feedback.is_positive.is_(True),
            )
        ).all()
    )
    return {
        s.id: known[s.id]
        if s.id in known
        else int((s.origin_station_id or s.station_id, s.track_id) in liked_pairs)
        for s in spins
    }


def on_demand(
    db: Session,
    settings: Settings,
    listener: Listener,
    track_id: int,
    encoding: str | None,
    now: datetime,
) -> Spin:
    """A spin of any track outside radio (tiers with on-demand): logged for the play export, no
    station."""
    delivery.require_on_demand(settings, listener)
    track = db.get(Track, track_id)
    if track is None or track.missing_since is not None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no track TR:{track_id}")
    spin = Spin(
        token=secrets.token_urlsafe(18),
        listener_id=listener.id,
        station_id=None,
        origin_station_id=None,
        track_id=track.id,
        artist_id=track.artist_id,
        album_id=track.album_id,
        seed_music_id=None,
        reason="OnDemand",
        audio_encoding=encoding,
        issued_at=now,
        seconds_played=0.0,
        is_replay=False,
    )
    db.add(spin)
    db.flush()
    played = [ids.Ref("track", track.id), ids.Ref("album", track.album_id)]
    collection.touch(db, listener.id, [*played, ids.Ref("artist", track.artist_id)], now)
    return spin


def scrobble(
    db: Session,
    settings: Settings,
    listener: Listener,
    track_id: int,
    *,
    submission: bool,
    at: datetime,
    now: datetime,
) -> Spin:
    """An app reports a play of a library track (Subsonic scrobble) into the play log.

    Not a submission: the track started at `at` (an on-demand spin, its end not yet known). A
    submission: the track was played through; it settles the spin the start opened (the latest
    open one of that track begun within the track's length plus an hour), else logs a finished
    play of its own. A track a station handed out (a station opened in an app) in that window is
    that station's spin, started or played through, on every tier.
    """
    at = min(at, now)
    track = db.get(Track, track_id)
    if track is None or track.missing_since is not None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no track TR:{track_id}")
    window = timedelta(seconds=(track.duration or 0) + 3600)
    radio = _open_station_spin(db, listener.id, track_id, at, window)
    if radio is not None:  # a station handed it out (every tier): its spin is the play
        if radio.started_at is None:
            radio.started_at = at
            station = db.get(Station, radio.station_id)
            if station is not None:
                station.last_played_at = at
                station.total_play_time += round(track.duration or 0)
        if submission:
            radio.outcome, radio.ended_at = "completed", at
            radio.seconds_played = round(track.duration or 0.0, 3)
        return radio
    if not submission:
        spin = on_demand(db, settings, listener, track_id, None, now)
        spin.issued_at = spin.started_at = at
        return spin
    delivery.require_on_demand(settings, listener)
    spin = db.scalar(
        select(Spin)
        .where(
            Spin.listener_id == listener.id,
            Spin.track_id == track_id,
            Spin.station_id.is_(None),
            Spin.outcome.is_(None),
            Spin.issued_at >= at - window,
            Spin.issued_at <= at,
        )
        .order_by(Spin.issued_at.desc(), Spin.id.desc())
        .limit(1)
    )
    if spin is None:
        spin = on_demand(db, settings, listener, track_id, None, now)
        spin.issued_at = spin.started_at = at
    spin.outcome, spin.ended_at = "completed", at
    spin.seconds_played = round(track.duration or 0.0, 3)
    return spin


def _open_station_spin(
    db: Session, listener_id: int, track_id: int, at: datetime, window: timedelta
) -> Spin | None:
    """The latest station spin of this track handed to the listener within `window` before `at`
    and not yet ended."""
    return db.scalar(
        select(Spin)
        .where(
            Spin.listener_id == listener_id,
            Spin.track_id == track_id,
            Spin.station_id.is_not(None),
            Spin.outcome.is_(None),
            Spin.issued_at >= at - window,
            Spin.issued_at <= at,
        )
        .order_by(Spin.issued_at.desc(), Spin.id.desc())
        .limit(1)
        .with_for_update()
    )


# ---------------------------------------------------------------- use cases: fragments, replays, on
# demand, thumbs


def track_items(
    db: Session,
    issuer: delivery.Issuer,
    settings: Settings,
    listener: Listener,
    station: Station,
    spins: list[Spin],
    audio_format: str | None,
    allow_skip: bool,
    known: Known | None = None,
    seeds: set[tuple[str, int]] | None = None,
    liked: dict[int, set[int]] | None = None,
) -> list[TrackItem]:
    """Freshly written spins as clients get them, with signed audio, receipt and skip URLs
    (`seeds`, `liked`: the station's seeds and thumbs-up when already read)."""
    known = known if known is not None else Known(db)
    shown = known.shown(s.track_id for s in spins)
    gains = _gains(db, [v.view.track for v in shown.values()])
    rated = ratings(db, spins, liked)
    saved = bookmarks.marked(db, listener.id, "TR", {s.track_id for s in spins})
    if seeds is None:
        seeds = {(s.kind, s.ref_id) for s in stations.seeds_of(db, station.id)}
    replays = settings.tier(listener.tier).replays
    rights = ["radio"] + (["skip"] if allow_skip else []) + (["replay"] if replays else [])
    out = []
    for spin in spins:
        got = shown[spin.track_id]
        view = got.view
        t, artist = view.track, view.artist
        encoding = delivery.encoding_for(settings, listener, audio_format, t.codec)
        out.append(
            TrackItem(
                spin=spin,
                view=view,
                artist_picture=got.artist_picture,
                links=issuer.track(listener.id, t.id, spin.id, encoding),
                gain=gains.get(t.id),
                lyrics=got.lyrics,
                station_id=station.id,
                rating=rated.get(spin.id, 0),
                is_seed=("TR", t.id) in seeds or ("AR", artist.id) in seeds,
                is_bookmarked=t.id in saved,
                allow_skip=allow_skip,
                # a track shuffle drew from the whole library (no station of the listener's yet)
                # has no station to learn from
                allow_feedback=not (station.is_shuffle and spin.origin_station_id is None),
                rights=rights,
            )
        )
    return out


def _gains(db: Session, tracks: list[Track]) -> dict[int, float | None]:
    """As catalog.gains: the ReplayGain tag, else the measured loudness (read only for tracks
    without a tag)."""
    gains: dict[int, float | None] = {t.id: t.rg_track_gain for t in tracks}
    untagged = [t for t, gain in gains.items() if gain is None]
    if untagged:
        gains.update(_MEASURED_GAINS.all(db, ids=untagged))
    return gains


def write_fragment(
    db: Session,
    services: Services,
    listener: Listener,
    session: AuthSession,
    station_id: str,
    reason: str,
    audio_format: str | None,
    now: datetime,
    plan: FragmentPlan | None = None,
    known: Known | None = None,
) -> Fragment:
    """playlist/getFragment's write: the next spins of a station under every radio rule, with
    their ads (the tracks of `plan`, from plan_fragment, when they still hold). The track objects
    are made by fragment_items, which only reads: after the commit, out of the write lock."""
    settings = services.settings
    station = stations.lock_station(db, listener.id, station_id)
    listening.check_cap(db, settings, listener, now)
    # the play log says what was delivered
    delivered = delivery.encoding_for(settings, listener, audio_format)
    return fragment(db, settings, listener, session, station, reason, now, known, delivered, plan)


def fragment_items(
    db: Session,
    services: Services,
    base_url: str,
    listener: Listener,
    result: Fragment,
    audio_format: str | None,
    now: datetime,
    known: Known | None = None,
) -> FragmentItems:
    """A written fragment as clients get it: tracks with signed URLs, the ads placed between."""
    settings = services.settings
    issuer = delivery.Issuer(services, base_url, now)
    items: list[TrackItem | ads.AdItem] = list(
        track_items(
            db,
            issuer,
            settings,
            listener,
            result.station,
            result.spins,
            audio_format,
            result.allow_skip,
            known if known is not None else Known(db, result.stamp),
            result.seeds,
            result.liked,
        )
    )
    for brk in reversed(result.ad_breaks):  # positions count music tracks: insert from the back
        items.insert(
            brk.position,
            ads.ad_item(db, issuer, settings, listener, brk.spin, brk.campaign, audio_format),
        )
    return FragmentItems(
        result.station.id, items, result.skips_left, not settings.tier(listener.tier).replays
    )


def serve_fragment(
    read: Session,
    write: Callable[[], AbstractContextManager[Session]],
    services: Services,
    base_url: str,
    listener: Listener,
    session: AuthSession,
    station_id: str,
    reason: str,
    audio_format: str | None,
    now: datetime,
) -> FragmentItems:
    """playlist/getFragment with the least work inside the write transaction: the tracks chosen
    on the `read` session where that pays (plan_fragment), the spins written in one `write()`
    transaction, the track objects made from `read` once it has committed (`read` must then see
    what was written: a fresh snapshot)."""
    plan = plan_fragment(read, services, listener, station_id, now)
    with write() as db:
        written = write_fragment(
            db, services, listener, session, station_id, reason, audio_format, now, plan
        )
    return fragment_items(read, services, base_url, listener, written, audio_format, now)


def next_fragment(
    db: Session,
    services: Services,
    base_url: str,
    listener: Listener,
    session: AuthSession,
    station_id: str,
    reason: str,
    audio_format: str | None,
    now: datetime,
) -> FragmentItems:
    """playlist/getFragment in one transaction (write_fragment, then fragment_items)."""
    known = Known(db)
    result = write_fragment(
        db, services, listener, session, station_id, reason, audio_format, now, None, known
    )
    return fragment_items(db, services, base_url, listener, result, audio_format, now, known)


def replay_item(
    db: Session,
    services: Services,
    base_url: str,
    listener: Listener,
    station_id: str,
    token: str,
    audio_format: str | None,
    now: datetime,
) -> TrackItem:
    """ondemand/getReplayTrack: a track of this station played again."""
    settings = services.settings
    station = stations.get_station(db, listener.id, station_id)
    spin = replay(db, settings, listener, station, token, now)
    spin.audio_encoding = delivery.encoding_for(settings, listener, audio_format)
    db.flush()
    issuer = delivery.Issuer(services, base_url, now)
    return track_items(
        db, issuer, settings, listener, station, [spin], audio_format, allow_skip=True
    )[0]


def play_on_demand(
    db: Session,
    services: Services,
    base_url: str,
    listener: Listener,
    session: AuthSession,
    pandora_id: str,
    audio_format: str | None,
    now: datetime,
    source: str | None = None,
) -> OnDemandPlay:
    """ondemand/getAudioPlaybackInfo: any present track, logged as a play outside radio. The
    session becomes the account's active player (another device playing is STREAM_VIOLATION, as
    on stations) for the length of the track; the album or playlist it is played from
    (`source`) counts as played in the listener's collection."""
    ref = catalog.resolve(pandora_id, "track")
    track = catalog.track(db, ref.id)
    encoding = delivery.encoding_for(services.settings, listener, audio_format, track.codec)
    delivery.require_on_demand(services.settings, listener)
    claim = player.claim_player(db, listener, session, now, force=False, save=False)
    spin = on_demand(db, services.settings, listener, ref.id, encoding, now)
    spin.session_id = session.id
    player.hold_player(claim, now + timedelta(seconds=track.duration or 0) + player.CLAIM_GRACE)
    player.save_claim(db, claim)
    context = ids.parse(source) if source else None
    if context is not None and context.kind in ("album", "playlist"):
        collection.touch(db, listener.id, [context], now)
    links = delivery.Issuer(services, base_url, now).track(listener.id, ref.id, spin.id, encoding)
    gain = catalog.gains(db, [track])[track.id]
    album_gain = track.rg_album_gain
    return OnDemandPlay(
        links,
        gain,
        track.duration,
        spin.token,
        album_gain,
        track_peak=track.rg_track_peak,
        album_peak=catalog.album_peak(db, track.album_id) if album_gain is not None else None,
    )


def thumb(
    db: Session, listener_id: int, session_id: int, token: str, positive: bool, now: datetime
) -> stations.FeedbackView:
    """station/addFeedback: thumbs up or down for the track a trackToken names, on the station
    that played it (by the account's active player, or any session while none plays)."""
    player.check_player(db, listener_id, session_id, now)
    spin = spin_by_token(db, listener_id, token, now)
    station = feedback_station(db, spin)
    row = stations.set_feedback(db, listener_id, station.id, spin.track_id, positive, now)
    return stations.feedback_views(db, [row])[0]


def unthumb(
    db: Session, listener_id: int, feedback_id: str | None, token: str | None, now: datetime
) -> int:
    """station/deleteFeedback: take back a thumb named by its feedbackId or by the trackToken it
    was given on; the number of the thumb taken back."""
    if feedback_id is not None:
        row = stations.get_feedback(db, listener_id, feedback_id)
    else:
        spin = spin_by_token(db, listener_id, token or "", now)
        row = stations.feedback_for(db, feedback_station(db, spin).id, spin.track_id)
    db.delete(row)
    return row.id
