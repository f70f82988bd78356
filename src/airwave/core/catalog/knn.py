"""Nearest neighbours by dot product: exact for small catalogues, a faiss inverted file above.

The index is labelled with track ids and kept on disk (with what the build needs to tell which
tracks changed), so a later build adds, replaces and removes tracks instead of starting over.
faiss-cpu was chosen by bench/index.py among hnswlib, faiss (HNSW and IVF), usearch and voyager:
making all 80-neighbour lists is a batch of queries as many as the vectors, where scanning a few
cells beats walking a graph.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

LIBRARY = "faiss-cpu"  # the distribution that makes the index
# cells: 2 * sqrt(tracks), 10 of them looked into. At 1,000,000 tracks (bench/README.md) this
# found 99.8% of the exact 80 nearest with float32 vectors (99.7% as float16) where 4 * sqrt cells
# and 16 probes found 99.7%, and all lists took 36 s instead of 40 (comparing a query with every
# cell's centre costs as much as scanning the cells), the k-means 1.7 s instead of 7.8
CELLS_PER_SQRT = 2
TRAIN_PER_CELL = 40  # k-means sample per cell
PROBES = 10
MIN_CANDIDATES = 1_000  # more probes where cells are small: a query compares at least this many
STATE_FILE = "state.json"


def threads() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


class Exact:
    """Exact nearest neighbours by dot product (faiss's flat index: BLAS blocks and a heap per
    query in C++, about 4x faster than numpy's matrix product and argpartition at 20,000
    tracks)."""

    def __init__(self, x: np.ndarray) -> None:
        faiss = _faiss()
        self.n = len(x)
        self.x = np.ascontiguousarray(x, np.float32)
        self.index = faiss.IndexFlatIP(self.x.shape[1])
        self.index.add(self.x)

    def query(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows (positions in x) and similarities of each query row's k nearest other rows, best
        first."""
        queries = np.asarray(queries, np.int64)
        k = max(0, min(k, self.n - 1))
        if k == 0 or not len(queries):
            return np.full((len(queries), k), -1, np.int64), np.zeros((len(queries), k), np.float32)
        sims, idx = self.index.search(self.x[queries], k + 1)
        # a row is not its own neighbour: drop it (among equal vectors it need not come first),
        # else the last of the k + 1
        own = idx == queries[:, None]
        drop = np.where(own.any(axis=1), own.argmax(axis=1), k)
        keep = np.ones(idx.shape, bool)
        keep[np.arange(len(queries)), drop] = False
        return idx[keep].reshape(-1, k).astype(np.int64), sims[keep].reshape(-1, k)


def _padded(dim: int) -> int:
    return -(-dim // 16) * 16


def _pad(x: np.ndarray, width: int) -> np.ndarray:
    """float32 rows of `width` columns, zeros after x's own (inner products unchanged)."""
    if x.shape[1] == width:
        return np.ascontiguousarray(x, np.float32)
    out = np.zeros((len(x), width), np.float32)
    out[:, : x.shape[1]] = x
    return out


def _faiss():  # imported on a build only: a server that never builds never loads it
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle threads sleep, not spin
    import faiss

    faiss.omp_set_num_threads(threads())
    return faiss


class Graph:
    """An inverted file (faiss IndexIVFScalarQuantizer, half-precision floats) over vectors
    labelled with track ids: the vectors in cells around k-means centroids, a query compared with
    the cells nearest it (inner product). The vectors are kept as float16, padded with zeros to a
    multiple of 16 dimensions (faiss's vectorised scan): at 1,000,000 tracks all lists take a
    fifth less time than with float32 vectors and the index half the memory, and it finds 99.7%
    of the exact 80 nearest instead of 99.8% (bench/README.md). The lists store similarities as
    float16 anyway."""

    def __init__(self, index: object, dim: int) -> None:
        self.index = index
        self.dim = dim
        self.width = _padded(dim)

    @classmethod
    def create(cls, x: np.ndarray, labels: np.ndarray) -> Graph:
        faiss = _faiss()
        n, dim = x.shape
        width = _padded(dim)
        cells = max(1, min(n // 8, int(CELLS_PER_SQRT * math.sqrt(n))))
        index = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(width),
            width,
            cells,
            faiss.ScalarQuantizer.QT_fp16,
            faiss.METRIC_INNER_PRODUCT,
            False,  # the vectors themselves, not their offsets from the cell's centre
        )
        index.cp.seed = 1
        sample = min(n, cells * TRAIN_PER_CELL)
        pick = np.sort(np.random.default_rng(1).choice(n, sample, replace=False))
        index.train(_pad(x[pick], width))
        index.set_direct_map_type(faiss.DirectMap.Hashtable)
        index.nprobe = min(cells, max(PROBES, math.ceil(MIN_CANDIDATES * cells / n)))
        for start in range(0, n, 65_536):
            part = _pad(x[start : start + 65_536], width)
            index.add_with_ids(part, labels[start : start + 65_536].astype(np.int64))
        return cls(index, dim)

    @classmethod
    def load(cls, path: Path, dim: int) -> Graph:
        faiss = _faiss()
        index = faiss.read_index(str(path))
        if index.d != _padded(dim):
            raise ValueError("the saved index has another dimension")
        return cls(index, dim)

    def save(self, path: Path) -> None:
        _faiss().write_index(self.index, str(path))

    @property
    def dead(self) -> int:
        """Vectors kept for removed tracks (none: an inverted file removes them)."""
        return 0

    def upsert(self, labels: np.ndarray, x: np.ndarray) -> None:
        """Add these tracks, or move them to their new vectors."""
        if not len(labels):
            return
        self.remove(labels)
        self.index.add_with_ids(_pad(x, self.width), labels.astype(np.int64))  # type: ignore[attr-defined]

    def remove(self, labels: np.ndarray) -> None:
        if len(labels):
            faiss = _faiss()
            self.index.remove_ids(faiss.IDSelectorArray(labels.astype(np.int64)))  # type: ignore[attr-defined]

    def vectors(self, labels: np.ndarray) -> np.ndarray:
        out = np.zeros((len(labels), self.dim), np.float32)
        for i, label in enumerate(labels.tolist()):
            out[i] = self.index.reconstruct(int(label))[: self.dim]  # type: ignore[attr-defined]
        return out

    def query(
        self, x: np.ndarray, k: int, own: np.ndarray, live: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Labels and similarities of each row's k nearest among `live` vectors, best first,
        without the row's own label `own`; -1 and -inf pad."""
        m = len(x)
        out_ids = np.full((m, k), -1, np.int64)
        out_sims = np.full((m, k), -np.inf, np.float32)
        want = min(k + 1, live)
        if m == 0 or want <= 0:
            return out_ids, out_sims
        sims, labels = self.index.search(_pad(x, self.width), want)  # type: ignore[attr-defined]
        drop = (labels == np.asarray(own, np.int64)[:, None]) | (labels < 0)
        if want > k:  # asked one more for the row itself: where it is not there, the last goes
            extra = ~(labels == np.asarray(own, np.int64)[:, None]).any(axis=1)
            drop[extra, -1] = True
        order = np.argsort(drop, axis=1, kind="stable")
        width = min(k, want)
        labels = np.take_along_axis(labels, order, axis=1)[:, :width]
        sims = np.take_along_axis(sims, order, axis=1)[:, :width]
        drop = np.take_along_axis(drop, order, axis=1)[:, :width]
        labels[drop], sims[drop] = -1, -np.inf
        out_ids[:, :width], out_sims[:, :width] = labels, sims
        return out_ids, out_sims


@dataclass
class State:
    """What the last build on this host left beside the graph: the table it wrote (generation),
    how vectors were made (recipe, the sound model), and per track its input hash and the
    similarity of its last kept neighbour."""

    generation: str
    recipe: str
    ids: np.ndarray  # int64 ascending
    hashes: np.ndarray  # uint64
    kth: np.ndarray  # float32: similarity a newcomer must beat to enter the track's list
    model: dict[str, np.ndarray]  # SoundModel arrays, empty when there was none

    def save(self, folder: Path, graph: Graph) -> None:
        """Graph and arrays under names of this generation, then the pointer file (atomically)."""
        folder.mkdir(parents=True, exist_ok=True)
        tag = self.generation[:16]
        graph.save(folder / f"graph-{tag}.bin")
        np.savez(
            folder / f"arrays-{tag}.npz",
            ids=self.ids,
            hashes=self.hashes,
            kth=self.kth,
            **{f"model_{k}": v for k, v in self.model.items()},
        )
        pointer = folder / (STATE_FILE + ".tmp")
        pointer.write_text(
            json.dumps({"generation": self.generation, "recipe": self.recipe, "tag": tag})
        )
        os.replace(pointer, folder / STATE_FILE)
        for stale in folder.glob("*-*.*"):
            if tag not in stale.name:
                stale.unlink(missing_ok=True)

    @classmethod
    def load(cls, folder: Path, dim: int) -> tuple[State, Graph] | None:
        """The saved state and graph, or None when there is none or it cannot be read."""
        try:
            meta = json.loads((folder / STATE_FILE).read_text())
            tag = meta["tag"]
            with np.load(folder / f"arrays-{tag}.npz") as arrays:
                model = {k[6:]: arrays[k] for k in arrays.files if k.startswith("model_")}
                state = cls(
                    meta["generation"],
                    meta["recipe"],
                    arrays["ids"],
                    arrays["hashes"],
                    arrays["kth"],
                    model,
                )
            graph = Graph.load(folder / f"graph-{tag}.bin", dim)
        except (OSError, ValueError, KeyError, RuntimeError):
            return None
        return state, graph

    @staticmethod
    def clear(folder: Path) -> None:
        (folder / STATE_FILE).unlink(missing_ok=True)
        for stale in folder.glob("*-*.*"):
            stale.unlink(missing_ok=True)
