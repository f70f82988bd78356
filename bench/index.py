"""The similarity index: every track's 80 nearest neighbours, built, kept and updated.

Two parts, each measurement in a fresh child process (its own peak RSS), methods interleaved
round by round, medians printed with the ratio to the anchor measured in the same run:

vectors (no database): the space's real vectors of a synthetic catalogue (bench/fragment.py's
shape: ~N/12 artists, 60 genres, sound features clustered per artist) at each size. Each method
makes all N lists: `old` (the previous hand-made search: exact kNN in 2,048-row blocks up to 40k
tracks, k-means inverted file above; the anchor), `new` (core/catalog/knn.py: exact up to the
EXACT_LIMIT, the HNSW graph above). Printed: build_s (lists for every track), peak_rss_mb,
recall@80 against exact search on 300 sampled tracks, and for `new` add1000_s: 1,000 tracks more
into the built graph, their lists and the lists they enter. --candidates also runs the ANN
libraries the graph was chosen among (faiss-cpu HNSW and IVF, usearch, voyager) with the same
work.

database (--db): the real build, `similarity_index.build`, on a SQLite catalogue of each size
(bench/fragment.py's generator): full build (seconds, peak RSS), then the same build after a
restart (a new process: nothing rebuilt), then 1,000 tracks added (incremental: seconds, rows
written), beside the old `space.build` of the parent commit on a copy of the same database.

    .venv/bin/python bench/index.py [--sizes 20000,100000] [--million] [--rounds 3]
        [--candidates] [--db] [--no-vectors]

Prints one line per figure; never asserts. loadavg before and after shows a busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
K = 80
ADDED = 1000
SAMPLE = 300
CACHE = Path(tempfile.gettempdir()) / "airwave-bench-index"
OLD_SPACE_COMMIT = "32faf46"  # the last commit with the hand-made search (space.build)


# --------------------------------------------------------------------------- synthetic vectors


def synthetic_catalogue(n: int, seed: int):  # -> space.Catalogue
    """bench/fragment.py's catalogue shape as the space's columns, without a database."""
    sys.path.insert(0, str(ROOT / "bench"))
    from fragment import CATEGORIES, CENTROIDS, GENRES, Shape

    from airwave.core.catalog import space
    from airwave.library.analysis import FEATURE_DIM

    rng = np.random.default_rng(seed)
    shape = Shape.make(n, rng)
    centroids = rng.standard_normal((CENTROIDS, FEATURE_DIM)).astype(np.float32) * 2.0
    offset = rng.standard_normal((shape.artists, FEATURE_DIM)).astype(np.float32) * 0.4
    artist = shape.album_artist[shape.track_album]
    features = (
        centroids[shape.artist_centroid[artist]]
        + offset[artist]
        + rng.standard_normal((n, FEATURE_DIM)).astype(np.float32) * 0.6
    )
    main = shape.artist_genre[artist]
    second = np.flatnonzero(shape.second_genre >= 0)
    return space.Catalogue(
        ids=np.arange(1, n + 1, dtype=np.int64),
        artist=artist.astype(np.int64) + 1,
        album=shape.track_album.astype(np.int64) + 1,
        year=shape.album_year[shape.track_album].astype(np.int64),
        composer=np.full(n, -1, np.int64),
        composers=[],
        genre_rows=np.concatenate([np.arange(n), second]),
        genre_ids=np.concatenate([main, shape.second_genre[second]]).astype(np.int64) + 1,
        genres={g + 1: (f"genre {g}", f"Category {g % CATEGORIES}") for g in range(GENRES)},
        features=features,
    )


def synthetic_vectors(n: int) -> np.ndarray:
    """n + ADDED vectors (the last ADDED are the tracks added later), cached on disk."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"vectors-{n}-v1.npy"
    if not path.exists():
        from airwave.core.catalog import space

        x = space.vectors(synthetic_catalogue(n + ADDED, seed=n))
        np.save(path, x)
    return np.load(path, mmap_mode="r")


def exact_sample(x: np.ndarray, queries: np.ndarray) -> np.ndarray:
    sims = np.asarray(x[queries]) @ np.asarray(x).T
    sims[np.arange(len(queries)), queries] = -np.inf
    return np.argpartition(-sims, K, axis=1)[:, :K]


def recall(x: np.ndarray, lists: np.ndarray, queries: np.ndarray) -> float:
    """Share of the exact 80 nearest found, over sampled tracks (lists hold row numbers)."""
    truth = exact_sample(x, queries)
    found = [len(set(truth[i].tolist()) & set(lists[i].tolist())) for i in range(len(queries))]
    return sum(found) / (K * len(queries))


# --------------------------------------------------------------------------- the old search
# (the previous space.py's nearest(), the anchor: exact in 2,048-row blocks up to 40k tracks, an
# inverted file over k-means cells above)


def _old_top_k(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    k = min(k, sims.shape[1])
    idx = (
        np.argpartition(sims, sims.shape[1] - k, axis=1)[:, -k:]
        if k < sims.shape[1]
        else np.broadcast_to(np.arange(k), sims.shape).copy()
    )
    vals = np.take_along_axis(sims, idx, axis=1)
    order = np.argsort(-vals, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(vals, order, axis=1)


def _old_exact(x: np.ndarray, k: int, block: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    n = len(x)
    out_idx = np.zeros((n, min(k, n - 1)), np.int64)
    out_sim = np.zeros(out_idx.shape, np.float32)
    for start in range(0, n, block):
        sims = x[start : start + block] @ x.T
        rows = np.arange(sims.shape[0])
        sims[rows, start + rows] = -np.inf
        idx, vals = _old_top_k(sims, out_idx.shape[1])
        out_idx[start : start + block], out_sim[start : start + block] = idx, vals
    return out_idx, out_sim


def _old_approximate(x: np.ndarray, k: int, probes: int = 6) -> tuple[np.ndarray, np.ndarray]:
    import math

    rng = np.random.default_rng(0)
    n = len(x)
    cells = max(16, int(math.sqrt(n) * 1.5))
    sample = x[rng.choice(n, min(n, cells * 40), replace=False)]
    centroids = sample[rng.choice(len(sample), cells, replace=False)].copy()
    for _ in range(8):
        assign = np.argmax(sample @ centroids.T, axis=1)
        for c in range(cells):
            members = sample[assign == c]
            if len(members):
                centroids[c] = members.mean(axis=0)
        norms = np.linalg.norm(centroids, axis=1, keepdims=True)
        centroids = np.divide(centroids, norms, out=np.zeros_like(centroids), where=norms > 1e-9)
    assign = np.empty(n, np.int64)
    for start in range(0, n, 65536):
        assign[start : start + 65536] = np.argmax(x[start : start + 65536] @ centroids.T, axis=1)
    members = [np.flatnonzero(assign == c) for c in range(cells)]
    near_cells = _old_top_k(centroids @ centroids.T, probes)[0]
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
            idx, vals = _old_top_k(sims, k)
            width = idx.shape[1]
            out_idx[q, :width], out_sim[q, :width] = pool[idx], vals
    return out_idx, out_sim


def old_nearest(x: np.ndarray) -> np.ndarray:
    return (_old_exact(x, K) if len(x) <= 40_000 else _old_approximate(x, K))[0]


# --------------------------------------------------------------------------- one measurement


def _graph_lists(graph, x: np.ndarray, n: int) -> np.ndarray:
    labels = np.empty((n, K), np.int64)
    for start in range(0, n, 20_000):
        rows = np.arange(start, min(n, start + 20_000))
        labels[rows], _ = graph.query(x[rows], K, rows, n)
    return labels


def run_new(x: np.ndarray, n: int) -> dict:
    from airwave.core.catalog import knn, similarity_index

    base = np.ascontiguousarray(x[:n])
    started = time.perf_counter()
    if n <= similarity_index.EXACT_LIMIT:
        lists = np.empty((n, K), np.int64)
        exact = knn.Exact(base)
        for start in range(0, n, similarity_index.EXACT_QUERY_CHUNK):
            rows = np.arange(start, min(n, start + similarity_index.EXACT_QUERY_CHUNK))
            lists[rows], _ = exact.query(rows, K)
        graph = None
    else:
        graph = knn.Graph.create(base, np.arange(n))
        lists = _graph_lists(graph, base, n)
    build_s = time.perf_counter() - started
    out = {"build_s": build_s, "lists": lists}
    if graph is not None:
        # 1,000 tracks more: into the graph, their lists, the lists they enter (kth compared)
        kth = np.full(n + ADDED, -np.inf, np.float32)
        new = np.ascontiguousarray(x[n : n + ADDED])
        labels = np.arange(n, n + ADDED)
        started = time.perf_counter()
        graph.upsert(labels, new)
        wide, wide_sims = graph.query(new, 2 * K, labels, n + ADDED)
        target = wide.ravel()
        enters = (target >= 0) & (wide_sims.ravel() > kth[np.maximum(target, 0)])
        np.unique(target[enters])
        out["add1000_s"] = time.perf_counter() - started
        queries = np.random.default_rng(2).choice(ADDED, 100, replace=False)
        out["add_recall"] = recall(np.asarray(x[: n + ADDED]), wide[queries, :K], n + queries)
    return out


def run_candidate(method: str, x: np.ndarray, n: int) -> dict:
    """The same work (all lists, then 1,000 added) with another library, default-ish settings
    matched to the graph's (M=16, ef_construction=100, ef_search=128; IVF: 4*sqrt(n) lists, 16
    probed)."""
    base = np.ascontiguousarray(x[:n])
    new = np.ascontiguousarray(x[n : n + ADDED])
    threads = os.cpu_count() or 1
    started = time.perf_counter()
    if method == "usearch":
        from usearch.index import Index

        index = Index(
            ndim=x.shape[1],
            metric="ip",
            dtype="f32",
            connectivity=16,
            expansion_add=100,
            expansion_search=128,
        )
        index.add(np.arange(n), base, threads=threads)
        labels = index.search(base, K + 1, threads=threads).keys
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        index.add(np.arange(n, n + ADDED), new, threads=threads)
        index.search(new, 2 * K + 1, threads=threads)
    elif method == "voyager":
        import voyager

        index = voyager.Index(
            voyager.Space.InnerProduct,
            num_dimensions=x.shape[1],
            M=16,
            ef_construction=100,
            max_elements=n + ADDED,
        )
        index.add_items(base, list(range(n)), num_threads=threads)
        labels, _ = index.query(base, k=K + 1, num_threads=threads, query_ef=128)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        index.add_items(new, list(range(n, n + ADDED)), num_threads=threads)
        index.query(new, k=2 * K + 1, num_threads=threads, query_ef=2 * K + 1)
    else:
        import faiss

        faiss.omp_set_num_threads(threads)
        if method == "faiss-hnsw":
            index = faiss.IndexHNSWFlat(x.shape[1], 16, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = 100
            index.add(base)
            index.hnsw.efSearch = 128
        else:
            lists = int(4 * np.sqrt(n))
            index = faiss.IndexIVFFlat(
                faiss.IndexFlatIP(x.shape[1]), x.shape[1], lists, faiss.METRIC_INNER_PRODUCT
            )
            pick = np.random.default_rng(0).choice(n, min(n, lists * 40), replace=False)
            index.train(base[np.sort(pick)])
            index.add(base)
            index.nprobe = 16
        labels = np.empty((n, K + 1), np.int64)
        for start in range(0, n, 65_536):
            _, labels[start : start + 65_536] = index.search(base[start : start + 65_536], K + 1)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        if method == "faiss-hnsw":
            index.hnsw.efSearch = 2 * K + 1
        index.add(new)
        index.search(new, 2 * K + 1)
    add_s = time.perf_counter() - started
    labels = np.asarray(labels, np.int64)
    lists = np.empty((n, K), np.int64)
    for i in range(n):
        row = labels[i][labels[i] != i]
        lists[i] = row[:K] if len(row) >= K else np.pad(row, (0, K - len(row)), constant_values=-1)
    return {"build_s": build_s, "lists": lists, "add1000_s": add_s}


def worker(method: str, n: int) -> None:
    x = synthetic_vectors(n)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if method == "old":
        base = np.ascontiguousarray(x[:n])
        started = time.perf_counter()
        lists = old_nearest(base)
        out = {"build_s": time.perf_counter() - started, "lists": lists}
    elif method == "new":
        out = run_new(x, n)
    else:
        out = run_candidate(method, x, n)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queries = np.random.default_rng(1).choice(n, SAMPLE, replace=False)
    out["recall"] = recall(np.asarray(x[:n]), out.pop("lists")[queries], queries)
    out["peak_rss_mb"] = peak
    out["rss_before_mb"] = before
    print("RESULT " + json.dumps(out), flush=True)


def child(args: list[str], timeout: float = 3600) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, timeout=timeout
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{args}: {proc.stderr[-2000:]}")


# --------------------------------------------------------------------------- the database part


def old_space_module(folder: Path):
    """space.py of OLD_SPACE_COMMIT (space.build with the hand-made search), importable."""
    import importlib.util

    path = folder / "space_old.py"
    if not path.exists():
        text = subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "show",
                f"{OLD_SPACE_COMMIT}:src/airwave/core/catalog/space.py",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        path.write_text(text)
    spec = importlib.util.spec_from_file_location("space_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["space_old"] = module
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def catalogue_db(n: int) -> Path:
    """A SQLite catalogue of n tracks, neighbours not built (cached); ADDED more tracks are
    inserted by add_tracks."""
    sys.path.insert(0, str(ROOT / "bench"))
    from fragment import insert_catalogue

    from airwave.config import Settings
    from airwave.core.services import Services

    folder = CACHE / f"db-{n}-v1"
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    services = Services.open(Settings(data_dir=folder))
    try:
        insert_catalogue(services.database, n + ADDED, seed=n)
        with services.database.engine.begin() as conn:  # the last ADDED wait for add_tracks
            conn.exec_driver_sql(
                "UPDATE tracks SET missing_since = '2025-01-01 00:00:00.000000' WHERE id > ?",
                (n,),
            )
        with services.database.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        services.close()
    (folder / "done").write_text("")
    return folder


def db_worker(step: str, folder: Path) -> None:
    """One step on a data dir: full | again | add (then incremental) | old."""
    from airwave.config import Settings
    from airwave.core.catalog import similarity_index
    from airwave.core.clock import Clock
    from airwave.core.services import Services

    services = Services.open(Settings(data_dir=folder))
    store = folder / similarity_index.STORE
    try:
        if step == "add":
            with services.database.engine.begin() as conn:
                conn.exec_driver_sql(
                    "UPDATE tracks SET missing_since = NULL, "
                    "added_at = '2025-02-01 00:00:00.000000' WHERE missing_since IS NOT NULL"
                )
        started = time.perf_counter()
        if step == "old":
            old = old_space_module(folder.parent)
            report = old.build(services.database, Clock().now, force=True)
            mode, rows = "full", report.tracks
        else:
            report = similarity_index.build(
                services.database, Clock().now, force=step == "full", store=store
            )
            mode, rows = report.mode, report.rows
        seconds = time.perf_counter() - started
    finally:
        services.close()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"seconds": seconds, "peak_rss_mb": peak, "mode": mode, "rows": rows}
    print("RESULT " + json.dumps(out), flush=True)


def db_part(sizes: list[int], rounds: int, with_old: bool = True) -> None:
    for n in sizes:
        source = catalogue_db(n)
        figures: dict[str, list[dict]] = {}
        for _ in range(rounds):
            for method in ("old", "new") if with_old else ("new",):
                work = Path(tempfile.mkdtemp(prefix="airwave-bench-index-")) / "data"
                try:
                    shutil.copytree(source, work, ignore=shutil.ignore_patterns("done"))
                    if method == "old":
                        figures.setdefault("old full", []).append(
                            child(["--db-worker", "old", str(work)])
                        )
                    else:
                        for step in ("full", "again", "add"):
                            figures.setdefault(f"new {step}", []).append(
                                child(["--db-worker", step, str(work)])
                            )
                finally:
                    shutil.rmtree(work.parent, ignore_errors=True)
        olds = figures.get("old full", [])
        anchor = statistics.median(r["seconds"] for r in olds) if olds else float("nan")
        for name, results in figures.items():
            seconds = statistics.median(r["seconds"] for r in results)
            rss = statistics.median(r["peak_rss_mb"] for r in results)
            print(
                f"db tracks={n} step={name.replace(' ', '_')} seconds={seconds:.2f} "
                f"peak_rss_mb={rss:.0f} mode={results[0]['mode']} rows={results[0]['rows']} "
                f"vs_old_full={seconds / anchor:.2f} rounds={len(results)}",
                flush=True,
            )


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--million", action="store_true", help="also 1,000,000 tracks")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--candidates", action="store_true")
    parser.add_argument("--db", action="store_true", help="the real build on SQLite too")
    parser.add_argument("--no-vectors", action="store_true")
    parser.add_argument("--no-old", action="store_true", help="skip the anchor (slow at 1M)")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--db-worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]))
        return
    if args.db_worker:
        db_worker(args.db_worker[0], Path(args.db_worker[1]))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s] + ([1_000_000] if args.million else [])
    print(f"loadavg_before={os.getloadavg()[0]:.2f} cpus={os.cpu_count()}", flush=True)
    if not args.no_vectors:
        methods = ([] if args.no_old else ["old"]) + ["new"]
        if args.candidates:
            methods += ["faiss-hnsw", "faiss-ivf", "usearch", "voyager"]
        for n in sizes:
            synthetic_vectors(n)
            results: dict[str, list[dict]] = {m: [] for m in methods}
            for _ in range(args.rounds):
                for m in methods:
                    try:
                        results[m].append(child(["--worker", m, str(n)]))
                    except RuntimeError as exc:
                        print(f"vectors tracks={n} method={m} failed: {exc}", flush=True)
                        continue
                    one = {k: round(v, 3) for k, v in results[m][-1].items()}
                    print(f"# round tracks={n} method={m} {one}", flush=True)
            results = {m: rs for m, rs in results.items() if rs}
            anchor = (
                statistics.median(r["build_s"] for r in results["old"]) if "old" in results else 0
            )
            for m, rs in results.items():
                build = statistics.median(r["build_s"] for r in rs)
                line = (
                    f"vectors tracks={n} method={m} build_s={build:.2f} "
                    f"peak_rss_mb={statistics.median(r['peak_rss_mb'] for r in rs):.0f} "
                    f"(vectors alone {statistics.median(r['rss_before_mb'] for r in rs):.0f}) "
                    f"recall@80={statistics.median(r['recall'] for r in rs):.3f}"
                )
                if "add1000_s" in rs[0]:
                    line += f" add1000_s={statistics.median(r['add1000_s'] for r in rs):.2f}"
                if "add_recall" in rs[0]:
                    line += f" added_recall@80={statistics.median(r['add_recall'] for r in rs):.3f}"
                if anchor:
                    line += f" build_vs_old={build / anchor:.2f}"
                print(line + f" rounds={len(rs)}", flush=True)
    if args.db:
        db_part(sizes, args.rounds, with_old=not args.no_old)
    print(f"loadavg_after={os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
