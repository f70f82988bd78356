"""The similarity space: sound profiles and tags in one vector per track, and each track's nearest
neighbours.

A track's vector is the concatenation of unit-length blocks, each scaled by the square root of its
weight, so the dot product of two vectors is the weighted sum of the blocks' cosines:

- sound: z-scored sound features (library.analysis), each aspect of the sound (rhythm, loudness,
  timbre, texture ...) given the same say however many numbers describe it, reduced by PCA;
- genre: a fixed random direction per genre (and a weaker one per genre category);
- identity: the artist's direction plus half the album's (same artist and album sit close);
- era: the release year as an angle (a decade apart is still close, sixty years is orthogonal);
- composer: the composer's direction, when tagged.

The neighbour table is rebuilt whenever the catalogue or its profiles change; a station only ever
reads the neighbour lists of a bounded set of tracks, so a fragment costs the same at any size.
"""

from __future__ import annotations

import functools
import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from airwave.library import names
from airwave.store.db import Database
from airwave.store.models import (
    Genre,
    SimilarityIndex,
    Track,
    TrackGenre,
    TrackNeighbors,
    TrackProfile,
)

NEIGHBORS = 80  # neighbours kept per track
EXACT_LIMIT = (
    40_000  # above this many tracks the search is approximate (inverted file over k-means cells)
)
WEIGHTS = {"sound": 0.50, "genre": 0.25, "identity": 0.15, "era": 0.05, "composer": 0.05}
SOUND_DIMS = 16
TAG_DIMS = 16
PRESENT = Track.missing_since.is_(None)


@dataclass(frozen=True)
class BuildReport:
    tracks: int
    profiled: int
    seconds: float
    rebuilt: bool


@dataclass
class Catalogue:
    """The columns the space is built from, one row per present track."""

    ids: np.ndarray  # int64
    artist: np.ndarray
    album: np.ndarray
    year: np.ndarray  # 0 = unknown
    composer: list[str | None]
    genres: list[list[tuple[str, str]]]  # (genre name key, category) per track
    features: np.ndarray | None  # float32 (n, d) raw sound features; NaN rows = not analysed


@functools.lru_cache(maxsize=1 << 17)
def _direction(kind: str, key: object, dims: int) -> np.ndarray:
    """A fixed pseudo-random unit vector for a name: the same everywhere, no table needed."""
    digest = hashlib.blake2b(f"{kind}:{key}".encode(), digest_size=8).digest()
    vec = np.random.default_rng(int.from_bytes(digest, "little")).standard_normal(dims)
    return (vec / np.linalg.norm(vec)).astype(np.float32)


def _unit_rows(block: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    return np.divide(block, norms, out=np.zeros_like(block), where=norms > 1e-9)


def _group_scale(groups: tuple[str, ...] | None, width: int) -> np.ndarray:
    """1/sqrt(size of its group) for each feature, so every group weighs the same in distances."""
    if groups is None or len(groups) != width:
        return np.ones(width)
    sizes = {g: groups.count(g) for g in set(groups)}
    return np.array([1.0 / math.sqrt(sizes[g]) for g in groups])


def sound_block(
    features: np.ndarray, dims: int = SOUND_DIMS, groups: tuple[str, ...] | None = None
) -> np.ndarray:
    """Z-score each feature over the library, clip outliers, weigh the groups of features equally,
    keep the main PCA directions, unit length."""
    out = np.zeros((features.shape[0], dims), dtype=np.float32)
    known = ~np.isnan(features).any(axis=1)
    if known.sum() < 3:
        return out
    x = features[known].astype(np.float64)
    mean, std = x.mean(axis=0), x.std(axis=0)
    z = np.clip((x - mean) / np.where(std > 1e-9, std, 1.0), -4.0, 4.0)
    z *= _group_scale(groups, z.shape[1])
    sample = (
        z if len(z) <= 20_000 else z[np.random.default_rng(0).choice(len(z), 20_000, replace=False)]
    )
    _, _, vt = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
    take = min(dims, vt.shape[0])
    reduced = z @ vt[:take].T
    out[known, :take] = reduced.astype(np.float32)
    return _unit_rows(out)


def vectors(cat: Catalogue) -> np.ndarray:
    """One row per track: the weighted blocks described in the module docstring."""
    n = len(cat.ids)
    blocks: list[tuple[str, np.ndarray]] = []
    if cat.features is not None and len(cat.features):
        from airwave.library.analysis import FEATURE_GROUPS

        blocks.append(("sound", sound_block(cat.features, groups=FEATURE_GROUPS)))
    else:
        blocks.append(("sound", np.zeros((n, SOUND_DIMS), np.float32)))
    genre = np.zeros((n, TAG_DIMS), np.float32)
    for i, tags in enumerate(cat.genres):
        for key, category in tags:
            genre[i] += _direction("genre", key, TAG_DIMS) + 0.5 * _direction(
                "category", category, TAG_DIMS
            )
    blocks.append(("genre", _unit_rows(genre)))
    identity = np.zeros((n, TAG_DIMS), np.float32)
    artist_dirs: dict[int, np.ndarray] = {}
    album_dirs: dict[int, np.ndarray] = {}
    for i in range(n):
        a, al = int(cat.artist[i]), int(cat.album[i])
        if a not in artist_dirs:
            artist_dirs[a] = _direction("artist", a, TAG_DIMS)
        if al not in album_dirs:
            album_dirs[al] = _direction("album", al, TAG_DIMS)
        identity[i] = artist_dirs[a] + 0.5 * album_dirs[al]
    blocks.append(("identity", _unit_rows(identity)))
    theta = (cat.year.astype(np.float32) - 1900.0) * (math.pi / 2 / 60.0)
    era = np.stack([np.cos(theta), np.sin(theta)], axis=1).astype(np.float32)
    era[cat.year <= 0] = 0.0
    blocks.append(("era", era))
    composer = np.zeros((n, 8), np.float32)
    for i, name in enumerate(cat.composer):
        if name:
            composer[i] = _direction("composer", names.search_key(name), 8)
    blocks.append(("composer", composer))
    return np.concatenate(
        [math.sqrt(WEIGHTS[name]) * block for name, block in blocks], axis=1
    ).astype(np.float32)


def _top_k(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Column indices and values of each row's k largest entries, best first."""
    k = min(k, sims.shape[1])
    idx = (
        np.argpartition(sims, sims.shape[1] - k, axis=1)[:, -k:]
        if k < sims.shape[1]
        else np.broadcast_to(np.arange(k), sims.shape).copy()
    )
    vals = np.take_along_axis(sims, idx, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(vals, order, axis=1)


def _exact(x: np.ndarray, k: int, block: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    n = len(x)
    out_idx = np.zeros((n, min(k, n - 1)), np.int64)
    out_sim = np.zeros(out_idx.shape, np.float32)
    for start in range(0, n, block):
        sims = x[start : start + block] @ x.T
        rows = np.arange(sims.shape[0])
        sims[rows, start + rows] = -np.inf  # a track is not its own neighbour
        idx, vals = _top_k(sims, out_idx.shape[1])
        out_idx[start : start + block], out_sim[start : start + block] = idx, vals
    return out_idx, out_sim


def _kmeans(x: np.ndarray, cells: int, rng: np.random.Generator, iterations: int = 8) -> np.ndarray:
    sample = x[rng.choice(len(x), min(len(x), cells * 40), replace=False)]
    centroids = sample[rng.choice(len(sample), cells, replace=False)].copy()
    for _ in range(iterations):
        assign = np.argmax(sample @ centroids.T, axis=1)
        for c in range(cells):
            members = sample[assign == c]
            if len(members):
                centroids[c] = members.mean(axis=0)
        centroids = _unit_rows(centroids) if np.any(centroids) else centroids
    return centroids


def _approximate(
    x: np.ndarray, k: int, rng: np.random.Generator, probes: int = 6
) -> tuple[np.ndarray, np.ndarray]:
    """Inverted-file search: each track is compared with the tracks of the few cells nearest its
    own."""
    n = len(x)
    cells = max(16, int(math.sqrt(n) * 1.5))
    centroids = _kmeans(x, cells, rng)
    assign = np.empty(n, np.int64)
    for start in range(0, n, 65536):
        assign[start : start + 65536] = np.argmax(x[start : start + 65536] @ centroids.T, axis=1)
    members = [np.flatnonzero(assign == c) for c in range(cells)]
    near_cells = _top_k(centroids @ centroids.T, probes)[0]
    out_idx = np.zeros((n, k), np.int64)
    out_sim = np.full((n, k), -np.inf, np.float32)
    for c in range(cells):
        queries = members[c]
        if not len(queries):
            continue
        pool = np.concatenate([members[o] for o in near_cells[c]])
        for start in range(0, len(queries), 4096):
            q = queries[start : start + 4096]
            sims = x[q] @ x[pool].T
            sims[pool[None, :] == q[:, None]] = -np.inf
            idx, vals = _top_k(sims, k)
            width = idx.shape[1]
            out_idx[q, :width], out_sim[q, :width] = pool[idx], vals
    return out_idx, out_sim


def nearest(x: np.ndarray, k: int = NEIGHBORS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each row's k nearest other rows by dot product (exact for small catalogues)."""
    if len(x) < 2:
        return np.zeros((len(x), 0), np.int64), np.zeros((len(x), 0), np.float32)
    if len(x) <= EXACT_LIMIT:
        return _exact(x, k)
    return _approximate(x, k, np.random.default_rng(seed))


def load_catalogue(db: Session, feature_dim: int | None) -> Catalogue:
    rows = db.execute(
        select(Track.id, Track.artist_id, Track.album_id, Track.year, Track.composer)
        .where(PRESENT)
        .order_by(Track.id)
    ).all()
    ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    position = {int(t): i for i, t in enumerate(ids)}
    genres: list[list[tuple[str, str]]] = [[] for _ in rows]
    for track_id, key, category in db.execute(
        select(TrackGenre.track_id, Genre.name_key, Genre.category).join(
            Genre, Genre.id == TrackGenre.genre_id
        )
    ):
        i = position.get(track_id)
        if i is not None:
            genres[i].append((key, category))
    features = None
    if feature_dim:
        features = np.full((len(rows), feature_dim), np.nan, np.float32)
        for track_id, blob in db.execute(
            select(TrackProfile.track_id, TrackProfile.features).where(
                TrackProfile.features.is_not(None)
            )
        ):
            i = position.get(track_id)
            vec = np.frombuffer(blob, np.float32)
            if i is not None and len(vec) == feature_dim and np.isfinite(vec).all():
                features[i] = vec
    return Catalogue(
        ids=ids,
        artist=np.fromiter((r[1] for r in rows), np.int64, len(rows)),
        album=np.fromiter((r[2] for r in rows), np.int64, len(rows)),
        year=np.fromiter((r[3] or 0 for r in rows), np.int64, len(rows)),
        composer=[r[4] for r in rows],
        genres=genres,
        features=features,
    )


def signature(db: Session) -> tuple[str, int]:
    """What the neighbour table depends on: present tracks, their tags and their profiles."""
    tracks = db.execute(
        select(
            func.count(Track.id), func.coalesce(func.sum(Track.id), 0), func.max(Track.added_at)
        ).where(PRESENT)
    ).one()
    profiles = db.execute(
        select(func.count(TrackProfile.track_id), func.max(TrackProfile.analyzed_at))
    ).one()
    tags = db.execute(
        select(
            func.count(), func.coalesce(func.sum(TrackGenre.genre_id * 7 + TrackGenre.track_id), 0)
        ).select_from(TrackGenre)
    ).one()
    text = repr((tuple(tracks), tuple(profiles), tuple(tags)))
    return hashlib.sha256(text.encode()).hexdigest(), int(tracks[0])


def build(
    database: Database,
    now: Callable[[], object],
    *,
    force: bool = False,
    feature_dim: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> BuildReport:
    """Rebuild the neighbour table when the catalogue changed since the last build."""
    started = time.perf_counter()
    if feature_dim is None:
        from airwave.library.analysis import FEATURE_DIM

        feature_dim = FEATURE_DIM
    with database.read() as db:
        sig, count = signature(db)
        current = db.scalar(select(SimilarityIndex.signature).where(SimilarityIndex.id == 1))
        if current == sig and not force:
            return BuildReport(count, 0, 0.0, False)
        cat = load_catalogue(db, feature_dim)
    if progress:
        progress(f"similarity: {len(cat.ids)} tracks")
    profiled = int((~np.isnan(cat.features).any(axis=1)).sum()) if cat.features is not None else 0
    x = vectors(cat)
    idx, sims = nearest(x)
    write_neighbors(database, cat.ids, idx, sims, now(), sig, time.perf_counter() - started)
    return BuildReport(len(cat.ids), profiled, time.perf_counter() - started, True)


def write_neighbors(
    database: Database,
    track_ids: np.ndarray,
    idx: np.ndarray,
    sims: np.ndarray,
    at: object,
    sig: str,
    seconds: float,
    batch: int = 5000,
) -> None:
    """Replace the neighbour table in one transaction, so readers see the old or the new one."""
    ids32 = track_ids.astype("<i4")
    sims16 = np.clip(np.nan_to_num(sims, neginf=-1.0), -1, 1).astype("<f2")
    finite = np.isfinite(sims)
    when = TrackNeighbors.__table__.c.built_at.type.process_bind_param(at, None)  # type: ignore[attr-defined]
    statement = (
        "INSERT INTO track_neighbors (track_id, neighbor_ids, similarities, built_at) "
        "VALUES (%s, %s, %s, %s)"
    )
    with database.write() as db:
        db.execute(delete(TrackNeighbors))
        conn = db.connection()
        if conn.dialect.name == "sqlite":  # stored the way SQLAlchemy's SQLite DateTime writes it
            statement = statement.replace("%s", "?")
            when = when.strftime("%Y-%m-%d %H:%M:%S.%f")
        rows = []
        for i in range(len(track_ids)):
            keep = finite[i]
            rows.append(
                (int(track_ids[i]), ids32[idx[i][keep]].tobytes(), sims16[i][keep].tobytes(), when)
            )
            if len(rows) == batch:
                conn.exec_driver_sql(statement, rows)
                rows = []
        if rows:
            conn.exec_driver_sql(statement, rows)
        db.execute(delete(SimilarityIndex))
        db.execute(
            insert(SimilarityIndex).values(
                id=1, signature=sig, tracks=len(track_ids), built_at=at, seconds=seconds
            )
        )


def decode(ids_blob: bytes, sims_blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    return np.frombuffer(ids_blob, "<i4").astype(np.int64), np.frombuffer(sims_blob, "<f2").astype(
        np.float32
    )


def neighbors_of(db: Session, track_ids: list[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Neighbour lists (ids, similarities) of a bounded set of tracks."""
    if not track_ids:
        return {}
    rows = db.execute(
        select(
            TrackNeighbors.track_id, TrackNeighbors.neighbor_ids, TrackNeighbors.similarities
        ).where(TrackNeighbors.track_id.in_(track_ids))
    )
    return {track_id: decode(a, b) for track_id, a, b in rows}
