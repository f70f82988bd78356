"""Keeping each track's neighbour list (`track_neighbors`) in step with the catalogue.

A build does nothing when nothing the lists depend on changed (`space.signature`). Otherwise:

- full: fit the sound model, make every vector and every list, exactly up to EXACT_LIMIT tracks,
  else from a faiss inverted file (core/catalog/knn.py) queried a chunk at a time, each chunk
  written in its own short transaction (readers and writers of the live service never wait);
- incremental, when this host saved the index behind the table the database holds (the same
  generation: no other host or process built since) and few tracks changed: move the added and
  changed tracks in the index and query their lists, put them into the lists they now belong to,
  query again the lists that held a changed or removed track, and write only those rows.

Only the holder of the library lease builds (core/cluster.py); every process reads the table.
"""

from __future__ import annotations

import fcntl
import hashlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from airwave.core.catalog import knn, space
from airwave.store import stamps
from airwave.store.db import Database
from airwave.store.models import SimilarityIndex, TrackNeighbors
from airwave.store.prepared import Prepared

EXACT_LIMIT = 20_000  # up to this many tracks every list is exact (and no graph is kept)
INCREMENTAL_SHARE = 0.1  # more changed tracks than this share of the catalogue: a full build
REFIT_SHARE = 0.1  # analysed tracks grown or shrunk by this share since the model's fit: full
# rows per transaction of a full build: the chunk's lists and their blobs are the build's peak
WRITE_CHUNK = 2_000
EXACT_QUERY_CHUNK = 4_000  # queries per exact search: faster than 2,000 (faiss), little more memory
# queries per search of the inverted file: faiss shares a batch among its threads, and a batch of
# 2,000 left a thread waiting for the other at each batch's end (1M tracks: 20% slower)
GRAPH_QUERY_CHUNK = 20_000
READ_CHUNK = 900  # ids per IN (...) list
_HELD = Prepared(select(TrackNeighbors.track_id))  # every track that has a list
STORE = "similarity"  # folder under data_dir for the graph


@dataclass(frozen=True)
class BuildReport:
    tracks: int
    profiled: int
    seconds: float
    rebuilt: bool
    mode: str = "unchanged"  # unchanged | full | incremental
    rows: int = 0  # neighbour lists written


def generation(sig: str, tracks: int, built_at: datetime, seconds: float) -> str:
    """Names one build's table: what a saved graph must match to be built upon."""
    at = built_at.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")
    return hashlib.sha256(f"{sig}|{tracks}|{at}|{seconds:.6f}".encode()).hexdigest()


def recipe(feature_dim: int) -> str:
    """How vectors and lists are made: a graph built by another recipe is not built upon."""
    from importlib.metadata import version

    from airwave.library.analysis import FEATURE_GROUPS, PROFILE_VERSION

    parts = [
        Path(space.__file__).read_bytes(),
        Path(knn.__file__).read_bytes(),
        repr((FEATURE_GROUPS, PROFILE_VERSION, feature_dim, space.NEIGHBORS)).encode(),
        version(knn.LIBRARY).encode(),
    ]
    return hashlib.sha256(b"\x00".join(parts)).hexdigest()


@contextmanager
def _exclusive(store: Path | None) -> Iterator[None]:
    """One build at a time per data dir (a server and an `airwave scan` may share one)."""
    if store is None:
        yield
        return
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(store / "lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(
    database: Database,
    now: Callable[[], datetime],
    *,
    force: bool = False,
    feature_dim: int | None = None,
    store: Path | None = None,
    progress: Callable[[str], None] | None = None,
    exact_limit: int = EXACT_LIMIT,
) -> BuildReport:
    """Bring the neighbour table up to date; `store` keeps the graph for the next build.

    Catalogues of up to `exact_limit` tracks get exact lists and keep no graph."""
    if feature_dim is None:
        from airwave.library.analysis import FEATURE_DIM

        feature_dim = FEATURE_DIM
    with _exclusive(store):
        started = time.perf_counter()
        with database.read() as db:
            sig, count = space.signature(db)
            row = db.execute(
                select(
                    SimilarityIndex.signature,
                    SimilarityIndex.tracks,
                    SimilarityIndex.built_at,
                    SimilarityIndex.seconds,
                ).where(SimilarityIndex.id == 1)
            ).one_or_none()
            if row is not None and row[0] == sig and not force:
                return BuildReport(count, 0, 0.0, False)
            current = generation(*row) if row is not None else ""
            cat = space.load_catalogue(db, feature_dim)
        if progress:
            progress(f"similarity: {len(cat)} tracks")
        job = _Job(database, cat, sig, now, started, store, recipe(feature_dim), exact_limit)
        rows = None
        if store is not None and not force and len(cat) > exact_limit:
            saved = knn.State.load(store, space.dimension(feature_dim))
            if saved is not None and saved[0].generation == current:
                rows = job.incremental(*saved)
        mode = "incremental"
        if rows is None:
            rows, mode = job.full(), "full"
        return BuildReport(len(cat), job.profiled, time.perf_counter() - started, True, mode, rows)


class _Writer:
    """The lists of a full build written by a thread of its own, WRITE_CHUNK rows in each short
    transaction, while the build searches the next batch: the database's work (most of a
    chunk's time on PostgreSQL, where the server does it) no longer waits for the search, nor
    the search for it. At most `AHEAD` batches wait; the first write that fails stops the build
    with its error."""

    AHEAD = 2

    def __init__(self, database: Database, at: datetime) -> None:
        self.database, self.at = database, at
        self.chunks: queue.Queue[tuple[np.ndarray, np.ndarray, np.ndarray] | None] = queue.Queue(
            self.AHEAD
        )
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="similarity-writer", daemon=True)

    def __enter__(self) -> _Writer:
        self.thread.start()
        return self

    def put(self, track_ids: np.ndarray, labels: np.ndarray, sims: np.ndarray) -> None:
        if self.error is not None:
            raise self.error
        self.chunks.put((track_ids, labels, sims))

    def _run(self) -> None:
        while (batch := self.chunks.get()) is not None:
            track_ids, labels, sims = batch
            for first in range(0, len(track_ids), WRITE_CHUNK):
                if self.error is not None:
                    break  # a write failed: the rest are dropped until the build stops
                end = first + WRITE_CHUNK
                try:
                    with self.database.write() as db:
                        _upsert(
                            db.connection(),
                            track_ids[first:end],
                            labels[first:end],
                            sims[first:end],
                            self.at,
                        )
                        stamps.bump_catalog(db)  # what processes keep of the lists is old now
                except BaseException as exc:  # noqa: BLE001  # raised in the build's thread
                    self.error = exc

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self.chunks.put(None)  # after the chunks queued: they are written, then the thread ends
        self.thread.join()
        if exc is None and self.error is not None:
            raise self.error


class _Job:
    """One build: the catalogue as loaded, and how the table and the saved state are written."""

    def __init__(
        self,
        database: Database,
        cat: space.Catalogue,
        sig: str,
        now: Callable[[], datetime],
        started: float,
        store: Path | None,
        recipe: str,
        exact_limit: int,
    ) -> None:
        self.database, self.cat, self.sig, self.now = database, cat, sig, now
        self.started, self.store, self.recipe = started, store, recipe
        self.exact_limit = exact_limit
        self.hashes = space.input_hashes(cat)
        self.profiled = space.profiled(cat.features)

    # --- full ---------------------------------------------------------------------------------

    def full(self) -> int:
        from airwave.library.analysis import FEATURE_GROUPS

        cat, k = self.cat, space.NEIGHBORS
        model = (
            space.SoundModel.fit(cat.features, FEATURE_GROUPS) if cat.features is not None else None
        )
        # the features, the largest array of the build, go once the sound block is made
        x = space.vectors(cat, model, release=True)
        n = len(cat)
        kth = np.full(n, -np.inf, np.float32)
        graph = knn.Graph.create(x, cat.ids) if n > self.exact_limit else None
        exact = knn.Exact(x) if graph is None else None
        at = self.now()
        # search runs faster on larger batches of queries; each batch is written in chunks, by a
        # thread of its own while the next batch is searched
        step = EXACT_QUERY_CHUNK if exact is not None else GRAPH_QUERY_CHUNK
        with _Writer(self.database, at) as writer:
            for start in range(0, n, step):
                batch = np.arange(start, min(n, start + step))
                if exact is not None:
                    pos, found_sims = exact.query(batch, k)
                    found = np.where(pos >= 0, cat.ids[np.maximum(pos, 0)], -1)
                else:
                    found, found_sims = graph.query(x[batch], k, cat.ids[batch], n)
                if found_sims.shape[1]:
                    kth[batch] = np.where(found[:, -1] >= 0, found_sims[:, -1], -np.inf)
                writer.put(cat.ids[batch], found, found_sims)
        del exact
        del x
        with self.database.write() as db:
            parts = [np.array(part, np.int64).ravel() for part in _HELD.partitions(db, 65_536)]
            held = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            conn = db.connection()
            _delete(conn, np.setdiff1d(held, cat.ids))
            gen = self._finish(conn, at)
        if self.store is not None:
            if graph is None:
                knn.State.clear(self.store)
            else:
                model_arrays = model.arrays() if model is not None else {}
                state = knn.State(gen, self.recipe, cat.ids, self.hashes, kth, model_arrays)
                state.save(self.store, graph)
        return n

    def _finish(self, conn: Connection, at: datetime) -> str:
        """The build's record: what it was made from; its generation names the table. A new
        catalogue stamp: what processes keep of the neighbour lists is old now."""
        stamps.bump_catalog(conn)
        seconds = round(time.perf_counter() - self.started, 6)
        conn.execute(delete(SimilarityIndex))
        conn.execute(
            SimilarityIndex.__table__.insert().values(
                id=1, signature=self.sig, tracks=len(self.cat), built_at=at, seconds=seconds
            )
        )
        return generation(self.sig, len(self.cat), at, seconds)

    # --- incremental --------------------------------------------------------------------------

    def incremental(self, state: knn.State, graph: knn.Graph) -> int | None:
        """Redo only what changed since the saved state; None when a full build is due."""
        cat, k = self.cat, space.NEIGHBORS
        if state.recipe != self.recipe:
            return None
        before = space._rows_of(state.ids, cat.ids)  # each track's row in the state, -1 new
        changed_rows = np.flatnonzero(
            (before >= 0) & (state.hashes[np.maximum(before, 0)] != self.hashes)
        )
        added_rows = np.flatnonzero(before < 0)
        removed = state.ids[space._rows_of(cat.ids, state.ids) < 0]
        moves = len(added_rows) + len(changed_rows) + len(removed)
        if moves + graph.dead > INCREMENTAL_SHARE * max(len(state.ids), 1):
            return None
        model = space.SoundModel.from_arrays(state.model) if state.model else None
        fitted = model.fitted if model is not None else 0
        if abs(self.profiled - fitted) > REFIT_SHARE * fitted or (model is None and self.profiled):
            return None
        n = len(cat)
        kth = np.full(n, -np.inf, np.float32)
        kth[before >= 0] = state.kth[before[before >= 0]]
        # lists that may hold a track whose vector goes: those near its old vector
        gone = np.concatenate([cat.ids[changed_rows], removed])
        holders = np.zeros(0, np.int64)
        if len(gone):
            near, _ = graph.query(graph.vectors(gone), 2 * k, gone, len(state.ids))
            holders = np.unique(near[near >= 0])
        graph.remove(removed)
        redo_rows = np.concatenate([added_rows, changed_rows])
        redo_ids = cat.ids[redo_rows]
        x = space.vectors(cat, model, redo_rows, release=True)
        graph.upsert(redo_ids, x)
        wide, wide_sims = graph.query(x, 2 * k, redo_ids, n)
        own, own_sims = wide[:, :k], wide_sims[:, :k]
        # newcomers enter the lists whose last kept similarity they beat
        entrant = np.repeat(redo_ids, wide.shape[1])
        target, sims = wide.ravel(), wide_sims.ravel()
        target_rows = space._rows_of(cat.ids, target)
        enters = (target_rows >= 0) & (sims > kth[np.maximum(target_rows, 0)])
        enters &= ~np.isin(target, redo_ids)
        gone_set = set(gone.tolist())
        patch = np.unique(target[enters])
        holders = np.setdiff1d(holders, np.concatenate([redo_ids, removed]))
        stored = self._read(np.union1d(patch, holders))
        requery = np.array(
            [
                t
                for t in holders.tolist()
                if t in stored and not gone_set.isdisjoint(stored[t][0].tolist())
            ],
            np.int64,
        )
        lists: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if len(requery):
            again, again_sims = graph.query(graph.vectors(requery), k, requery, n)
            for i, t in enumerate(requery.tolist()):
                lists[t] = (again[i], again_sims[i])
        order = np.argsort(target[enters], kind="stable")
        by_target = target[enters][order]
        incoming_ids, incoming_sims = entrant[enters][order], sims[enters][order]
        bounds = (
            np.searchsorted(by_target, patch, side="left"),
            np.searchsorted(by_target, patch, side="right"),
        )
        for t, lo, hi in zip(patch.tolist(), *bounds):
            if t in lists:
                continue
            old_ids, old_sims = stored.get(t, (np.zeros(0, np.int64), np.zeros(0, np.float32)))
            keep = ~np.isin(old_ids, gone)
            lists[t] = _merge(
                np.concatenate([old_ids[keep], incoming_ids[lo:hi]]),
                np.concatenate([old_sims[keep], incoming_sims[lo:hi]]),
                k,
            )
        changed_ids = np.array(sorted(lists), np.int64)
        if len(changed_ids):
            rows_of_changed = space._rows_of(cat.ids, changed_ids)
            kth[rows_of_changed] = [
                lists[t][1][k - 1] if len(lists[t][1]) >= k and lists[t][0][k - 1] >= 0 else -np.inf
                for t in changed_ids.tolist()
            ]
        if own.shape[1]:
            kth[redo_rows] = np.where(own[:, -1] >= 0, own_sims[:, -1], -np.inf)
        at = self.now()
        with self.database.write() as db:
            conn = db.connection()
            _upsert(conn, redo_ids, own, own_sims, at)
            _upsert_lists(conn, lists, k, at)
            _delete(conn, removed)
            gen = self._finish(conn, at)
        if self.store is not None:
            model_arrays = state.model
            knn.State(gen, self.recipe, cat.ids, self.hashes, kth, model_arrays).save(
                self.store, graph
            )
        return len(redo_ids) + len(lists)

    def _read(self, track_ids: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        ids = track_ids.tolist()
        with self.database.read() as db:
            for start in range(0, len(ids), READ_CHUNK):
                out.update(space.neighbors_of(db, ids[start : start + READ_CHUNK]))
        return out


def _merge(ids: np.ndarray, sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of a list with newcomers, each id once (its best similarity)."""
    order = np.lexsort((ids, -sims))
    ids, sims = ids[order], sims[order]
    _, first = np.unique(ids, return_index=True)
    first = np.sort(first)[:k]
    out_ids = np.full(k, -1, np.int64)
    out_sims = np.full(k, -np.inf, np.float32)
    out_ids[: len(first)], out_sims[: len(first)] = ids[first], sims[first]
    return out_ids, out_sims


# --- the table ------------------------------------------------------------------------------------

_UPSERT = (
    "INSERT INTO track_neighbors (track_id, neighbor_ids, similarities, built_at) "
    "VALUES (%s, %s, %s, %s) ON CONFLICT (track_id) DO UPDATE SET "
    "neighbor_ids = excluded.neighbor_ids, similarities = excluded.similarities, "
    "built_at = excluded.built_at"
)
# PostgreSQL: every row of a batch in one statement, as arrays (an executemany ran one upsert a
# row); built_at is the same for all
# the arrays go in binary (psycopg's %b): as text every list's bytes were sent and parsed as hex,
# and writing a 1M-track index took 19 s instead of 6
_UPSERT_ARRAYS = (
    "INSERT INTO track_neighbors (track_id, neighbor_ids, similarities, built_at) "
    "SELECT t, n, s, %s FROM unnest(%b::integer[], %b::bytea[], %b::bytea[]) AS r(t, n, s) "
    "ON CONFLICT (track_id) DO UPDATE SET "
    "neighbor_ids = excluded.neighbor_ids, similarities = excluded.similarities, "
    "built_at = excluded.built_at"
)


def _stamp(conn: Connection, at: datetime) -> tuple[str, object]:
    """The statement in the driver's parameter style, and `at` as the ORM column would store it."""
    when = at.astimezone(UTC).replace(tzinfo=None)
    if conn.dialect.name == "sqlite":  # the way SQLAlchemy's SQLite DateTime writes it
        return _UPSERT.replace("%s", "?"), when.strftime("%Y-%m-%d %H:%M:%S.%f")
    return _UPSERT, when


def _upsert(
    conn: Connection, track_ids: np.ndarray, labels: np.ndarray, sims: np.ndarray, at: datetime
) -> None:
    """Write these tracks' lists (rows of labels, -1 padded, best first)."""
    statement, when = _stamp(conn, at)
    ids32 = labels.astype("<i4")
    sims16 = np.clip(np.nan_to_num(sims, neginf=-1.0), -1, 1).astype("<f2")
    valid = labels >= 0
    full = valid.all(axis=1)
    rows = []
    for i, track_id in enumerate(track_ids.tolist()):
        if full[i]:
            rows.append((track_id, ids32[i].tobytes(), sims16[i].tobytes(), when))
        else:
            keep = valid[i]
            rows.append((track_id, ids32[i][keep].tobytes(), sims16[i][keep].tobytes(), when))
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        columns = list(zip(*rows, strict=True))
        conn.exec_driver_sql(
            _UPSERT_ARRAYS, (when, list(columns[0]), list(columns[1]), list(columns[2]))
        )
    else:
        conn.exec_driver_sql(statement, rows)


def _upsert_lists(
    conn: Connection, lists: dict[int, tuple[np.ndarray, np.ndarray]], k: int, at: datetime
) -> None:
    if not lists:
        return
    ids = np.array(sorted(lists), np.int64)
    labels = np.stack([lists[t][0] for t in ids.tolist()])
    sims = np.stack([lists[t][1] for t in ids.tolist()])
    _upsert(conn, ids, labels, sims, at)


def _delete(conn: Connection, track_ids: np.ndarray) -> None:
    ids = track_ids.tolist()
    for start in range(0, len(ids), READ_CHUNK):
        conn.execute(
            delete(TrackNeighbors).where(
                TrackNeighbors.track_id.in_(ids[start : start + READ_CHUNK])
            )
        )
