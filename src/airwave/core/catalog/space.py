"""The similarity space: sound profiles and tags in one vector per track.

A track's vector is the concatenation of unit-length blocks, each scaled by the square root of its
weight, so the dot product of two vectors is the weighted sum of the blocks' cosines:

- sound: z-scored sound features (library.analysis), each aspect of the sound (rhythm, loudness,
  timbre, texture ...) given the same say however many numbers describe it, reduced by PCA, then
  drawn towards the mean of the track's album (one artist's album keeps to a style, and the mean
  of its tracks tells that style more surely than one track's excerpts);
- genre: a fixed random direction per genre (and a weaker one per genre category);
- identity: the artist's direction plus half the album's (same artist and album sit close);
- era: the release year as an angle (a decade apart is still close, sixty years is orthogonal);
- composer: the composer's direction, when tagged.

The z-scores and the PCA are a `SoundModel` fitted on the library; keeping it fixed between builds
lets a track's vector depend on that track alone, so a build can redo only the tracks that
changed (core/catalog/similarity_index.py). Each track's neighbour list lives in
`track_neighbors`; a station only ever reads the lists of a bounded set of tracks, so a fragment
costs the same at any size.
"""

from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass

import numpy as np
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from airwave.core.catalog.freshness import signature  # noqa: F401  # space.signature, as before
from airwave.library import names
from airwave.store.models import Genre, Track, TrackGenre, TrackNeighbors, TrackProfile
from airwave.store.prepared import Prepared

NEIGHBORS = 80  # neighbours kept per track
WEIGHTS = {"sound": 0.50, "genre": 0.25, "identity": 0.15, "era": 0.05, "composer": 0.05}
SOUND_DIMS = 16
ALBUM_SOUND_OWN = 0.3  # a track's own sound in its sound block; the rest is its album's mean
TAG_DIMS = 16
COMPOSER_DIMS = 8
PCA_SAMPLE = 20_000  # profiles the PCA is fitted on
CHUNK = 65_536  # rows handled at a time: bounded temporaries at any size
Z_CHUNK = 16_384  # profiles z-scored at a time (float64, as wide as a profile)
PRESENT = Track.missing_since.is_(None)


def dimension(feature_dim: int | None = None) -> int:
    """Width of a track's vector (the sound block's is fixed by SOUND_DIMS whatever the
    features)."""
    return SOUND_DIMS + 2 * TAG_DIMS + 2 + COMPOSER_DIMS


@dataclass
class Catalogue:
    """The columns the space is built from, one row per present track (ids ascending)."""

    ids: np.ndarray  # int64
    artist: np.ndarray
    album: np.ndarray
    year: np.ndarray  # 0 = unknown
    composer: np.ndarray  # index into composers, -1 = none
    composers: list[str]
    genre_rows: np.ndarray  # (track row, genre id) pairs: rows into ids ...
    genre_ids: np.ndarray  # ... and the genre
    genres: dict[int, tuple[str, str]]  # genre id -> (name key, category)
    features: np.ndarray | None  # float32 (n, d) raw sound features; NaN rows = not analysed

    def __len__(self) -> int:
        return len(self.ids)


@functools.lru_cache(maxsize=1 << 12)
def _cached_direction(kind: str, key: object, dims: int) -> np.ndarray:
    return _direction(kind, key, dims)


def _direction(kind: str, key: object, dims: int) -> np.ndarray:
    """A fixed pseudo-random unit vector for a name: the same everywhere, no table needed."""
    digest = hashlib.blake2b(f"{kind}:{key}".encode(), digest_size=8).digest()
    vec = np.random.default_rng(int.from_bytes(digest, "little")).standard_normal(dims)
    return (vec / np.linalg.norm(vec)).astype(np.float32)


def _directions(kind: str, keys: np.ndarray, dims: int) -> np.ndarray:
    """Directions of many names at once: (len(keys), dims)."""
    out = np.empty((len(keys), dims), np.float32)
    for i, key in enumerate(keys.tolist()):
        out[i] = _direction(kind, key, dims)
    return out


def _unit_rows(block: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(block, axis=1, keepdims=True)
    return np.divide(block, norms, out=np.zeros_like(block), where=norms > 1e-9)


def _group_scale(groups: tuple[str, ...] | None, width: int) -> np.ndarray:
    """1/sqrt(size of its group) for each feature, so every group weighs the same in distances."""
    if groups is None or len(groups) != width:
        return np.ones(width)
    sizes = {g: groups.count(g) for g in set(groups)}
    return np.array([1.0 / math.sqrt(sizes[g]) for g in groups])


def _known(features: np.ndarray) -> np.ndarray:
    """Which rows hold a profile (no NaN), a chunk at a time: no whole-table temporary."""
    out = np.empty(len(features), bool)
    for start in range(0, len(features), CHUNK):
        out[start : start + CHUNK] = ~np.isnan(features[start : start + CHUNK]).any(axis=1)
    return out


def profiled(features: np.ndarray | None) -> int:
    """How many rows hold a profile."""
    return 0 if features is None else int(_known(features).sum())


@dataclass(frozen=True)
class SoundModel:
    """How raw sound features become the sound block: z-score (library mean and spread), clip
    outliers, weigh the feature groups equally, project on the main PCA directions."""

    mean: np.ndarray  # float64 (d,)
    std: np.ndarray  # float64 (d,), 1.0 where a feature does not vary
    weight: np.ndarray  # float64 (d,) group weights
    basis: np.ndarray  # float64 (take, d)
    fitted: int  # profiled tracks it was fitted on

    @classmethod
    def fit(cls, features: np.ndarray, groups: tuple[str, ...] | None = None) -> SoundModel | None:
        """The model of a library's features (rows of NaN: not analysed); None below 3 profiles."""
        known = np.flatnonzero(_known(features))
        if len(known) < 3:
            return None
        total = np.zeros(features.shape[1])
        for start in range(0, len(known), CHUNK):
            total += features[known[start : start + CHUNK]].astype(np.float64).sum(axis=0)
        mean = total / len(known)
        spread = np.zeros(features.shape[1])
        for start in range(0, len(known), CHUNK):
            part = features[known[start : start + CHUNK]].astype(np.float64)
            part -= mean
            part *= part
            spread += part.sum(axis=0)
        std = np.sqrt(spread / len(known))
        std = np.where(std > 1e-9, std, 1.0)
        weight = _group_scale(groups, features.shape[1])
        sample = (
            known
            if len(known) <= PCA_SAMPLE
            else np.sort(known[np.random.default_rng(0).choice(len(known), PCA_SAMPLE, False)])
        )
        z = cls._z(features[sample], mean, std, weight)
        _, _, vt = np.linalg.svd(z - z.mean(axis=0), full_matrices=False)
        return cls(mean, std, weight, vt[:SOUND_DIMS].copy(), len(known))

    @staticmethod
    def _z(x: np.ndarray, mean: np.ndarray, std: np.ndarray, weight: np.ndarray) -> np.ndarray:
        z = x.astype(np.float64)  # one temporary, worked on in place
        z -= mean
        z /= std
        np.clip(z, -4.0, 4.0, out=z)
        z *= weight
        return z

    def transform(self, features: np.ndarray) -> np.ndarray:
        """The sound block of these rows: unit length, zeros where not analysed."""
        out = np.zeros((len(features), SOUND_DIMS), np.float32)
        if features.shape[1] != len(self.mean):
            return out
        for start in range(0, len(features), Z_CHUNK):
            part = features[start : start + Z_CHUNK]
            known = _known(part)
            if known.any():
                z = self._z(part[known], self.mean, self.std, self.weight)
                block = out[start : start + Z_CHUNK]
                block[known, : len(self.basis)] = (z @ self.basis.T).astype(np.float32)
                out[start : start + Z_CHUNK] = _unit_rows(block)
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "mean": self.mean,
            "std": self.std,
            "weight": self.weight,
            "basis": self.basis,
            "fitted": np.array([self.fitted]),
        }

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> SoundModel:
        return cls(a["mean"], a["std"], a["weight"], a["basis"], int(a["fitted"][0]))


def sound_block(
    features: np.ndarray, dims: int = SOUND_DIMS, groups: tuple[str, ...] | None = None
) -> np.ndarray:
    """The sound block of a whole library, its model fitted on it."""
    model = SoundModel.fit(features, groups)
    if model is None:
        return np.zeros((features.shape[0], dims), np.float32)
    return model.transform(features)[:, :dims]


def album_sound(
    block: np.ndarray, album: np.ndarray, artist: np.ndarray, own: float = ALBUM_SOUND_OWN
) -> np.ndarray:
    """Each analysed track's sound drawn towards its album's mean, unit length again; albums of
    several artists (compilations) and tracks without a profile keep their own."""
    known = np.any(block != 0, axis=1)
    if not known.any():
        return block
    albums, slot = np.unique(album, return_inverse=True)
    pairs = np.unique(np.stack([slot, artist]), axis=1)
    one_artist = np.bincount(pairs[0], minlength=len(albums)) == 1
    counts = np.bincount(slot[known], minlength=len(albums)).astype(np.float64)
    sums = np.stack(
        [
            np.bincount(slot[known], weights=block[known, d], minlength=len(albums))
            for d in range(block.shape[1])
        ],
        axis=1,
    )
    means = sums / np.maximum(counts, 1.0)[:, None]
    pull = known & one_artist[slot]
    out = block.astype(np.float64)
    out[pull] = own * out[pull] + (1.0 - own) * means[slot[pull]]
    return _unit_rows(out.astype(np.float32))


def vectors(
    cat: Catalogue,
    model: SoundModel | None = None,
    rows: np.ndarray | None = None,
    *,
    release: bool = False,
) -> np.ndarray:
    """One vector per track (of `rows`, default all): the weighted blocks of the module docstring.

    `model` None: fitted on the catalogue's own features. `release`: the catalogue's features,
    the largest array of a build, are dropped as soon as the sound block is made. Each block is
    written in place into the one result array."""
    if model is None and cat.features is not None:
        from airwave.library.analysis import FEATURE_GROUPS

        model = SoundModel.fit(cat.features, FEATURE_GROUPS)
    everything = rows is None
    rows = np.arange(len(cat)) if rows is None else np.asarray(rows, np.int64)
    n = len(rows)
    out = np.empty((n, dimension()), np.float32)
    filled = 0

    def put(name: str, block: np.ndarray) -> None:
        nonlocal filled
        width = block.shape[1]
        np.multiply(
            block, math.sqrt(WEIGHTS[name]), out=out[:, filled : filled + width], casting="unsafe"
        )
        filled += width

    if model is not None and cat.features is not None:
        if everything:
            sound = model.transform(cat.features)
            if release:
                cat.features = None
            sound = album_sound(sound, cat.album, cat.artist)
        else:  # the album pull needs every track of the rows' albums
            members = np.flatnonzero(np.isin(cat.album, np.unique(cat.album[rows])))
            pulled = model.transform(cat.features[members])
            if release:
                cat.features = None
            pulled = album_sound(pulled, cat.album[members], cat.artist[members])
            sound = pulled[np.searchsorted(members, rows)]
            del pulled
    else:
        if release:
            cat.features = None
        sound = np.zeros((n, SOUND_DIMS), np.float32)
    put("sound", sound)
    del sound
    # genres: sum of the genre's and half its category's direction over the track's genres
    genre = np.zeros((n, TAG_DIMS), np.float32)
    where = np.full(len(cat), -1, np.int64)
    where[rows] = np.arange(n)
    pick = where[cat.genre_rows] >= 0 if len(cat.genre_rows) else np.zeros(0, bool)
    if pick.any():
        gids, inverse = np.unique(cat.genre_ids[pick], return_inverse=True)
        table = np.stack(
            [
                _cached_direction("genre", cat.genres[g][0], TAG_DIMS)
                + 0.5 * _cached_direction("category", cat.genres[g][1], TAG_DIMS)
                for g in gids.tolist()
            ]
        )
        np.add.at(genre, where[cat.genre_rows[pick]], table[inverse])
    del where, pick
    put("genre", _unit_rows(genre))
    del genre
    # identity: the artist's direction plus half the album's
    artists, a_inv = np.unique(cat.artist[rows], return_inverse=True)
    identity = _directions("artist", artists, TAG_DIMS)[a_inv]
    del a_inv
    albums, al_inv = np.unique(cat.album[rows], return_inverse=True)
    album_directions = _directions("album", albums, TAG_DIMS)
    for start in range(0, n, CHUNK):  # += 0.5 * album direction, without a whole-table temporary
        part = slice(start, start + CHUNK)
        identity[part] += 0.5 * album_directions[al_inv[part]]
    del al_inv
    put("identity", _unit_rows(identity))
    del identity
    year = cat.year[rows]
    theta = (year.astype(np.float32) - 1900.0) * (math.pi / 2 / 60.0)
    era = np.stack([np.cos(theta), np.sin(theta)], axis=1).astype(np.float32)
    era[year <= 0] = 0.0
    put("era", era)
    composer = np.zeros((n, COMPOSER_DIMS), np.float32)
    codes = cat.composer[rows]
    if (codes >= 0).any():
        used, c_inv = np.unique(codes[codes >= 0], return_inverse=True)
        table = np.stack(
            [
                _cached_direction("composer", names.search_key(cat.composers[c]), COMPOSER_DIMS)
                for c in used.tolist()
            ]
        )
        composer[codes >= 0] = table[c_inv]
    put("composer", composer)
    assert filled == out.shape[1]
    return out


# --- what a track's vector depends on, as one number -----------------------------------------

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a well-spread uint64 of each value."""
    z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def _name_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def input_hashes(cat: Catalogue) -> np.ndarray:
    """A uint64 per track that changes when anything its vector is made from changes (the sound
    model aside: a new model means a full build)."""
    h = _mix(cat.artist)
    h = _mix(h ^ _mix(cat.album + (1 << 40)))
    h = _mix(h ^ _mix(cat.year + (2 << 40)))
    composer = np.zeros(len(cat), np.uint64)
    if cat.composers:
        keys = np.array(
            [_name_hash(names.search_key(c)) for c in cat.composers] + [0], dtype=np.uint64
        )
        composer = keys[cat.composer]  # -1 picks the trailing 0
    h = _mix(h ^ composer)
    if len(cat.genre_rows):
        known = {g: _name_hash(f"{k}\x00{c}") for g, (k, c) in cat.genres.items()}
        per_genre = np.array([known.get(g, 0) for g in cat.genre_ids.tolist()], np.uint64)
        genre = np.zeros(len(cat), np.uint64)
        np.add.at(genre, cat.genre_rows, _mix(per_genre))
        h = _mix(h ^ genre)
    if cat.features is not None:
        sound = np.zeros(len(cat), np.uint64)
        for start in range(0, len(cat), CHUNK):
            words = np.ascontiguousarray(cat.features[start : start + CHUNK]).view(np.uint32)
            part = sound[start : start + CHUNK]
            for column in range(words.shape[1]):
                part = _mix(part ^ words[:, column].astype(np.uint64))
            sound[start : start + CHUNK] = part
        h = _mix(h ^ sound)
        # the album pull (album_sound): a track's vector moves with its album-mates' sound
        _, slot = np.unique(cat.album, return_inverse=True)
        album = np.zeros(int(slot.max()) + 1 if len(slot) else 0, np.uint64)
        np.add.at(album, slot, _mix(sound ^ _mix(cat.artist)))
        h = _mix(h ^ album[slot])
    return h


# --- reading the catalogue ---------------------------------------------------------------------


# The whole catalogue is read at every build: through the driver's cursor, rows as plain tuples
_TRACK_COLUMNS = Prepared(
    select(Track.id, Track.artist_id, Track.album_id, Track.year, Track.composer)
    .where(PRESENT)
    .order_by(Track.id)
)
_GENRE_PAIRS = Prepared(select(TrackGenre.track_id, TrackGenre.genre_id))
_FEATURES = Prepared(
    select(TrackProfile.track_id, TrackProfile.features).where(TrackProfile.features.is_not(None))
)


def load_catalogue(db: Session, feature_dim: int | None) -> Catalogue:
    """The present tracks' columns, as arrays (no Python object per track beyond the fetch)."""
    ids_parts, artist_parts, album_parts, year_parts, composer_parts = [], [], [], [], []
    composer_code: dict[str, int] = {}
    for part in _TRACK_COLUMNS.partitions(db, CHUNK):
        columns = list(zip(*part))
        ids_parts.append(np.array(columns[0], np.int64))
        artist_parts.append(np.array(columns[1], np.int64))
        album_parts.append(np.array(columns[2], np.int64))
        year_parts.append(np.array([y or 0 for y in columns[3]], np.int64))
        composer_parts.append(
            np.array(
                [
                    -1 if c is None else composer_code.setdefault(c, len(composer_code))
                    for c in columns[4]
                ],
                np.int64,
            )
        )

    def joined(parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    ids = joined(ids_parts)
    pairs = [np.array(part, np.int64).reshape(-1, 2) for part in _GENRE_PAIRS.partitions(db, CHUNK)]
    genre_pairs = np.concatenate(pairs) if pairs else np.zeros((0, 2), np.int64)
    genre_track, genre_id = genre_pairs[:, 0].copy(), genre_pairs[:, 1].copy()
    del pairs, genre_pairs
    rows = _rows_of(ids, genre_track)
    keep = rows >= 0
    genres = {g: (k, c) for g, k, c in db.execute(select(Genre.id, Genre.name_key, Genre.category))}
    features = None
    if feature_dim:
        features = np.full((len(ids), feature_dim), np.nan, np.float32)
        width = feature_dim * 4
        for part in _FEATURES.partitions(db, CHUNK):
            fitting = [(t, b) for t, b in part if len(b) == width]
            if not fitting:
                continue
            at = _rows_of(ids, np.array([t for t, _ in fitting], np.int64))
            block = np.frombuffer(b"".join(b for _, b in fitting), np.float32).reshape(
                -1, feature_dim
            )
            ok = (at >= 0) & np.isfinite(block).all(axis=1)
            features[at[ok]] = block[ok]
    return Catalogue(
        ids=ids,
        artist=joined(artist_parts),
        album=joined(album_parts),
        year=joined(year_parts),
        composer=joined(composer_parts),
        composers=list(composer_code),
        genre_rows=rows[keep],
        genre_ids=genre_id[keep],
        genres=genres,
        features=features,
    )


def _rows_of(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row of each wanted id in the sorted `ids`, -1 where absent."""
    if not len(ids):
        return np.full(len(wanted), -1, np.int64)
    at = np.clip(np.searchsorted(ids, wanted), 0, len(ids) - 1)
    return np.where(ids[at] == wanted, at, -1)


def decode(ids_blob: bytes, sims_blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    return np.frombuffer(ids_blob, "<i4").astype(np.int64), np.frombuffer(sims_blob, "<f2").astype(
        np.float32
    )


def neighbors_of(db: Session, track_ids: list[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Neighbour lists (ids, similarities) of a bounded set of tracks."""
    if not track_ids:
        return {}
    rows = _NEIGHBOR_LISTS.all(db, ids=track_ids)
    return {track_id: decode(a, b) for track_id, a, b in rows}


_NEIGHBOR_LISTS = Prepared(  # a station's anchors' lists, on every fragment
    select(TrackNeighbors.track_id, TrackNeighbors.neighbor_ids, TrackNeighbors.similarities).where(
        TrackNeighbors.track_id.in_(bindparam("ids", expanding=True))
    )
)
