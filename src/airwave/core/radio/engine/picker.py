"""Choosing a station's next tracks: candidates near its seeds and thumbs-up, scored, sampled,
filtered by the rules.

Every step reads a bounded number of rows (a few dozen anchor tracks, their neighbour lists,
metadata for the best few hundred candidates), so the cost of a pick does not grow with the
catalogue.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from airwave.core.ids import music_id
from airwave.core.radio.engine.known import Known
from airwave.core.radio.engine.rules import History, Played
from airwave.store.models import Track, TrackGenre
from airwave.store.prepared import Prepared
from airwave.store.sql import bounds

ANCHORS_PER_SEED = 24
POSITIVE_ANCHORS = 40
NEGATIVE_ANCHORS = 60
SHORTLIST = 120  # candidates whose metadata is loaded at a time
OPTIONS = 40  # eligible candidates a pick samples from
TEMPERATURE = 0.08
UP_PULL = 0.6
DOWN_PUSH = 1.4
DOWN_FLOOR = 0.25  # similarity to a thumbs-down below which there is no penalty
ARTIST_DOWN_PENALTY = 0.2  # per thumbs-down on the artist beyond the first
ALBUM_REPEAT_PENALTY = 0.04  # per recent spin of the album: exploration beyond the hard rules
# per recent spin of the artist: a seed's own artist does not take over (its album's tracks sound
# alike in the space, so this outweighs a few of them)
ARTIST_REPEAT_PENALTY = 0.05


@dataclass
class Steering:
    """What a station knows about the listener's taste."""

    seeds: list[tuple[str, int]]  # ("AR" | "TR" | "GE", id)
    positives: list[int] = field(default_factory=list)  # track ids, newest first
    negatives: list[int] = field(default_factory=list)
    negative_artists: Counter[int] = field(default_factory=Counter)
    banned: set[int] = field(default_factory=set)  # thumbs-down and tired tracks: never picked
    explicit_filter: bool = False


@dataclass(frozen=True)
class Pick:
    track_id: int
    artist_id: int
    album_id: int
    seed_music_id: str | None
    score: float


@dataclass
class _Scores:
    ids: np.ndarray  # ascending
    score: np.ndarray
    anchor: np.ndarray  # which anchor gave each id its score
    sources: np.ndarray  # each anchor's source (objects)

    def source(self) -> np.ndarray:
        """Each id's source (objects)."""
        return self.sources[self.anchor]


@dataclass(frozen=True)
class _Anchor:
    track_id: int
    weight: float
    source: str


def _seed_anchors(known: Known, steering: Steering, rng: random.Random) -> list[_Anchor]:
    anchors: list[_Anchor] = []
    for kind, ref in steering.seeds:
        if kind == "TR":
            anchors.append(_Anchor(ref, 1.0, music_id("track", ref)))
        elif kind == "AR":
            own = known.artist_tracks(ref)
            for track_id in rng.sample(own, min(len(own), ANCHORS_PER_SEED)):
                anchors.append(_Anchor(track_id, 1.0, music_id("artist", ref)))
        elif kind == "GE":
            for track_id in _genre_sample(known, ref, ANCHORS_PER_SEED, rng):
                anchors.append(_Anchor(track_id, 0.95, music_id("genre", ref)))
    return anchors


_GENRE_TRACKS = TrackGenre.__table__.c
_TRACKS = Track.__table__.c


def _genre_page(after: bool) -> Select[tuple[int]]:
    """The present tracks among a genre's next `count` tracks from `start` (`after`) or from its
    first track up to `start`, in id order.

    The genre's page is read from its index first, then looked up in `tracks`: a join let
    PostgreSQL merge the genre's index with the tracks' primary key, from the first track when
    only one side was bounded (it carries equalities across a join, not ranges: 0.1-0.2 s a
    genre station's fragment at 1M tracks) and across thousands of rows when both were."""
    start = bindparam("start")
    page = (
        select(_GENRE_TRACKS.track_id)
        .where(
            _GENRE_TRACKS.genre_id == bindparam("genre_id"),
            _GENRE_TRACKS.track_id >= start if after else _GENRE_TRACKS.track_id < start,
        )
        .order_by(_GENRE_TRACKS.track_id)
        .limit(bindparam("count"))
    )
    return (
        select(_TRACKS.id)
        .where(_TRACKS.id.in_(page), _TRACKS.missing_since.is_(None))
        .order_by(_TRACKS.id)
    )


_GENRE_FROM = Prepared(_genre_page(after=True))
_GENRE_BEFORE = Prepared(_genre_page(after=False))


# the catalogue's id range, and present tracks from a point of it in id order (built once)
_ID_BOUNDS = Prepared(bounds(_TRACKS.id))
_PRESENT_PAGE = (
    select(_TRACKS.id)
    .where(_TRACKS.missing_since.is_(None))
    .order_by(_TRACKS.id)
    .limit(bindparam("count"))
)
_PRESENT_FROM = Prepared(_PRESENT_PAGE.where(_TRACKS.id >= bindparam("start")))
_PRESENT_BEFORE = Prepared(_PRESENT_PAGE.where(_TRACKS.id < bindparam("start")))


def _genre_sample(known: Known, genre_id: int, count: int, rng: random.Random) -> list[int]:
    """Tracks of a genre from a random point of its index (wrapping around): bounded at any size."""
    bounds = known.genre_bounds(genre_id)
    if bounds is None:
        return []
    start = rng.randint(bounds[0], bounds[1])
    params = {"genre_id": genre_id, "count": count * 4, "start": start}
    found = _GENRE_FROM.scalars(known.db, **params)
    if len(found) < count * 4:
        found += [t for t in _GENRE_BEFORE.scalars(known.db, **params) if t not in found]
    return rng.sample(found, min(count, len(found)))


_NO_IDS = np.zeros(0, np.int64)
_NO_SIMS = np.zeros(0, np.float32)
_ONE = np.ones(1, np.float32)


def _spread(anchors: list[_Anchor], lists: dict[int, tuple[np.ndarray, np.ndarray]]) -> _Scores:
    """Best weighted similarity of every reachable track to any anchor (an anchor is 1.0 to
    itself)."""
    if not anchors:
        return _Scores(_NO_IDS, _NO_SIMS, _NO_IDS, np.zeros(0, object))
    count = len(anchors)
    own = np.fromiter((a.track_id for a in anchors), np.int64, count)
    weight = np.fromiter((a.weight for a in anchors), np.float32, count)
    # each anchor's run: itself, then its list (the order decides ties: the first anchor wins)
    id_parts: list[np.ndarray] = []
    sim_parts: list[np.ndarray] = []
    sizes = np.empty(count, np.int64)
    for n, anchor in enumerate(anchors):
        ids, sims = lists.get(anchor.track_id, (_NO_IDS, _NO_SIMS))
        id_parts += (own[n : n + 1], ids)
        sim_parts += (_ONE, sims)
        sizes[n] = len(ids) + 1
    all_ids = np.concatenate(id_parts)
    all_src = np.repeat(np.arange(count), sizes)
    all_sims = np.concatenate(sim_parts).astype(np.float32, copy=False) * weight[all_src]
    order = np.lexsort((-all_sims, all_ids))  # by id, best similarity first within an id
    all_ids, all_sims, all_src = all_ids[order], all_sims[order], all_src[order]
    first = np.empty(len(all_ids), bool)
    first[0] = True
    np.not_equal(all_ids[1:], all_ids[:-1], out=first[1:])
    sources = np.empty(count, object)
    sources[:] = [anchor.source for anchor in anchors]
    return _Scores(all_ids[first], all_sims[first], all_src[first], sources)


def _positions(scores: _Scores, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each id is in `scores`, and whether it is there at all."""
    if not len(scores.ids):
        return np.zeros(len(ids), np.int64), np.zeros(len(ids), bool)
    pos = np.clip(np.searchsorted(scores.ids, ids), 0, len(scores.ids) - 1)
    return pos, scores.ids[pos] == ids


def _lookup(scores: _Scores, ids: np.ndarray) -> np.ndarray:
    if not len(scores.ids):
        return np.zeros(len(ids), np.float32)
    pos = np.clip(np.searchsorted(scores.ids, ids), 0, len(scores.ids) - 1)
    return np.where(scores.ids[pos] == ids, scores.score[pos], 0.0).astype(np.float32)


class Picker:
    """Picks tracks for one station fragment; `rng` makes it reproducible."""

    def __init__(
        self,
        db: Session,
        steering: Steering,
        history: History,
        rng: random.Random,
        known: Known | None = None,
    ) -> None:
        self.db, self.steering, self.history, self.rng = db, steering, history, rng
        self.known = known if known is not None else Known(db)
        seeds = _seed_anchors(self.known, steering, rng)
        ups = [_Anchor(t, 1.0, music_id("track", t)) for t in steering.positives[:POSITIVE_ANCHORS]]
        downs = [
            _Anchor(t, 1.0, music_id("track", t)) for t in steering.negatives[:NEGATIVE_ANCHORS]
        ]
        lists = self.known.neighbors(sorted({a.track_id for a in seeds + ups + downs}))
        self.lists = lists
        self.seed_scores = _spread(seeds, lists)
        self.up_scores = _spread(ups, lists)
        self.down_scores = _spread(downs, lists)
        self.meta: dict[int, tuple[int, int, bool]] = {}
        self.pool = self._score(np.union1d(self.seed_scores.ids, self.up_scores.ids))
        self.widened = 0
        self._ranked: list[int] | None = None  # the pool's ids, best first

    def _score(self, ids: np.ndarray) -> dict[int, tuple[float, str | None]]:
        """Final score of each candidate: near the seeds, pulled to thumbs-up, pushed from
        thumbs-down."""
        if not len(ids):
            return {}
        seed = _lookup(self.seed_scores, ids)
        up = _lookup(self.up_scores, ids)
        down = _lookup(self.down_scores, ids)
        total = (
            np.maximum(seed, 0.9 * up)
            + UP_PULL * up
            - DOWN_PUSH * np.maximum(down - DOWN_FLOOR, 0.0)
        )
        seed_at, in_seed = _positions(self.seed_scores, ids)
        up_at, in_up = _positions(self.up_scores, ids)
        # whose source a candidate is credited to: the seeds', unless a thumbs-up pulls harder
        from_seed = in_seed & ((seed >= 0.9 * up) | ~in_up)
        source = np.full(len(ids), None, object)
        if len(self.seed_scores.ids):
            source[from_seed] = self.seed_scores.source()[seed_at[from_seed]]
        from_up = ~from_seed & in_up
        if len(self.up_scores.ids):
            source[from_up] = self.up_scores.source()[up_at[from_up]]
        out = dict(
            zip(ids.tolist(), zip(total.tolist(), source.tolist(), strict=True), strict=True)
        )
        for track_id in self.steering.banned:
            out.pop(track_id, None)
        return out

    def _load_meta(self, ids: list[int]) -> None:
        missing = [t for t in ids if t not in self.meta]
        if not missing:
            return
        for track_id, found in self.known.meta(missing).items():
            # gone from the catalogue: never eligible
            self.meta[track_id] = (-1, -1, True) if found is None else found[:3]

    def _eligible(self, track_id: int) -> bool:
        artist_id, album_id, explicit = self.meta[track_id]
        if (
            artist_id < 0
            or (explicit and self.steering.explicit_filter)
            or track_id in self.steering.banned
        ):
            return False
        return self.history.allows(track_id, artist_id, album_id)

    def _adjusted(
        self,
        track_id: int,
        score: float,
        album_recent: Counter[int],
        artist_recent: Counter[int],
    ) -> float:
        artist_id, album_id, _ = self.meta[track_id]
        downs = self.steering.negative_artists.get(artist_id, 0)
        return (
            score
            - ARTIST_DOWN_PENALTY * max(0, downs - 1)
            - ALBUM_REPEAT_PENALTY * album_recent[album_id]
            - ARTIST_REPEAT_PENALTY * artist_recent[artist_id]
        )

    def _widen(self) -> bool:
        """Reach further out: neighbours of the best candidates, then anywhere in the catalogue."""
        self.widened += 1
        if self.widened == 1:
            best = heapq.nsmallest(24, self.pool.items(), key=lambda kv: -kv[1][0])
            sources = [
                _Anchor(t, max(s, 0.05), src or music_id("track", t)) for t, (s, src) in best
            ]
            if not sources:
                sources = [
                    _Anchor(t, 0.5, music_id("track", t)) for t in self.steering.positives[:24]
                ]
            extra = self.known.neighbors(
                [a.track_id for a in sources if a.track_id not in self.lists]
            )
            self.lists.update(extra)
            far = _spread(sources, self.lists)
            downs = _lookup(self.down_scores, far.ids).tolist()
            added = 0
            for track_id, score, down, source in zip(
                far.ids.tolist(), far.score.tolist(), downs, far.source().tolist(), strict=True
            ):
                if track_id not in self.pool and track_id not in self.steering.banned:
                    self.pool[track_id] = (
                        0.8 * score - DOWN_PUSH * max(down - DOWN_FLOOR, 0.0) - 0.2,
                        source,
                    )
                    added += 1
            return added > 0 or self._widen()
        if self.widened == 2:
            found = self._random_tracks(400)
            downs = _lookup(self.down_scores, np.array(found, np.int64)).tolist()
            added = 0
            for track_id, down in zip(found, downs, strict=True):
                if track_id not in self.pool and track_id not in self.steering.banned:
                    self.pool[track_id] = (-0.5 - DOWN_PUSH * max(down - DOWN_FLOOR, 0.0), None)
                    added += 1
            return added > 0
        return False

    def _random_tracks(self, count: int) -> list[int]:
        bounds = _ID_BOUNDS.first(self.db)
        if bounds is None or bounds[0] is None:
            return []
        start = self.rng.randint(bounds[0], bounds[1])
        found = _PRESENT_FROM.scalars(self.db, start=start, count=count)
        if len(found) < count:
            found += _PRESENT_BEFORE.scalars(self.db, start=start, count=count - len(found))
        return found

    def pin(self, track_id: int, seed_music_id: str) -> Pick | None:
        """This very track next, when every rule allows it (a song station opens with its song);
        None when one does not."""
        self._load_meta([track_id])
        if not self._eligible(track_id):
            return None
        artist_id, album_id, _ = self.meta[track_id]
        self.history.add(Played(track_id, artist_id, album_id, self.history.now))
        self.pool.pop(track_id, None)
        return Pick(track_id, artist_id, album_id, seed_music_id, 1.0)

    def pick(self, count: int) -> list[Pick]:
        """Up to `count` tracks that keep every rule, best first in expectation but sampled for
        variety."""
        picks: list[Pick] = []
        while len(picks) < count:
            choice = self._choose()
            if choice is None:
                if not self._widen():
                    break
                self._ranked = None
                continue
            track_id, score, source = choice
            artist_id, album_id, _ = self.meta[track_id]
            picks.append(Pick(track_id, artist_id, album_id, source, score))
            self.history.add(Played(track_id, artist_id, album_id, self.history.now))
            self.pool.pop(track_id, None)
        return picks

    def _choose(self) -> tuple[int, float, str | None] | None:
        """Sample among the best OPTIONS eligible candidates, by softmax of their scores."""
        if self._ranked is None:
            # best score first, then by id (ids are unique); a candidate's score and source do
            # not change while it is in the pool, so both are read from it when needed
            size = len(self.pool)
            ids = np.fromiter(self.pool, np.int64, size)
            scores = np.fromiter((v[0] for v in self.pool.values()), np.float64, size)
            self._ranked = ids[np.lexsort((ids, -scores))].tolist()
        album_recent = Counter(s.album_id for s in self.history.spins[:50])
        artist_recent = Counter(s.artist_id for s in self.history.spins[:50])
        options: list[tuple[int, float, str | None]] = []
        pool = self.pool
        for start in range(0, len(self._ranked), SHORTLIST):
            chunk = self._ranked[start : start + SHORTLIST]
            self._load_meta(chunk)
            for t in chunk:
                if t in pool and self._eligible(t):
                    score, src = pool[t]
                    options.append((t, self._adjusted(t, score, album_recent, artist_recent), src))
                    if len(options) == OPTIONS:
                        break
            if len(options) == OPTIONS:
                break
        if not options:
            return None
        options.sort(key=lambda o: -o[1])
        top = options[0][1]
        weights = [float(np.exp((s - top) / TEMPERATURE)) for _, s, _ in options]
        return self.rng.choices(options, weights=weights, k=1)[0]
