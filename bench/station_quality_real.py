"""How stations sound on real recordings: the corpus of bench/real_corpus.py (Debian's free game
soundtracks, tags stripped to artist/album/title, a style label per file).

The corpus is scanned and analysed by the real CLI (`airwave scan`, into a fresh SQLite data dir),
then served by a real `airwave serve` with relaxed radio rules and listened to over HTTP, with the
machinery of bench/station_quality.py (the synthetic version):

- style: stations seeded with fixed tracks of every style; among their first spins by other
  artists (and so other albums), the share in the seed's style, against the chance of drawing a
  track of that style from the other artists' tracks, and their ratio; the share of spins by the
  seed's own artist;
- the similarity space: for every track, is its nearest neighbour outside its own album of its
  style (leave-one-album-out nearest neighbour), in the stored neighbour lists and in the sound
  block alone;
- thumbs: a twin (control) station with the same seed; after 5 thumbs-down on another artist's
  tracks, that artist's share next, against the control; after 5 thumbs-up on tracks of another
  style, that style's share next, against the control;
- analysis CPU per track, as `airwave scan` reports it.

    nice -n 10 .venv/bin/python bench/station_quality_real.py [--spins 30] [--seeds 4]

Prints one line per figure; never asserts.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import real_corpus  # noqa: E402
from analysis import _ANALYSED  # noqa: E402
from analysis import run as cli  # noqa: E402
from station_quality import age_history, listener, serve, spins  # noqa: E402

THUMBS = 5
SHORT = 20  # also the first 20 spins: fewer other artists' tracks needed, so a higher ceiling


@dataclass(frozen=True)
class Label:
    style: str
    artist: str
    album: str


@dataclass
class Tally:
    """Counts over the stations of a figure."""

    spins: int = 0
    own_artist: int = 0
    others: int = 0
    others_in_style: int = 0
    reachable: int = 0  # other-artist spins that could be in style: no track repeats in a station
    chance: list[float] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.spins += other.spins
        self.own_artist += other.own_artist
        self.others += other.others
        self.others_in_style += other.others_in_style
        self.reachable += other.reachable
        self.chance += other.chance

    def line(self) -> str:
        share = self.others_in_style / max(self.others, 1)
        chance = float(np.mean(self.chance)) if self.chance else float("nan")
        return (
            f"in_style_other_artists={share:.0%} chance={chance:.0%} "
            f"ratio={share / chance if chance else float('nan'):.1f}x "
            f"seed_artist_share={self.own_artist / max(self.spins, 1):.0%} "
            f"ceiling={self.reachable / max(self.others, 1):.0%} "
            f"(other-artist spins={self.others} of {self.spins})"
        )


def catalogue(database: Path, library: Path, labels: dict[str, dict[str, str]]) -> dict[int, Label]:
    """Track id -> label, through the scanned paths."""
    out = {}
    with sqlite3.connect(database) as conn:
        for track_id, path in conn.execute("SELECT id, path FROM tracks"):
            relative = str(Path(path).resolve().relative_to(library.resolve()))
            if relative in labels:
                entry = labels[relative]
                out[track_id] = Label(entry["style"], entry["artist"], entry["album"])
    return out


def track_of(spin: dict[str, Any]) -> int:
    from airwave.core import ids

    ref = ids.parse(spin["musicId"])
    assert ref is not None
    return ref.id


def tally(seed: Label, played: list[int], truth: dict[int, Label]) -> Tally:
    others = [truth[t] for t in played if truth[t].artist != seed.artist]
    pool = [x for x in truth.values() if x.artist != seed.artist]
    return Tally(
        spins=len(played),
        own_artist=sum(truth[t].artist == seed.artist for t in played),
        others=len(others),
        others_in_style=sum(x.style == seed.style for x in others),
        chance=[sum(x.style == seed.style for x in pool) / max(len(pool), 1)],
        reachable=min(len(others), sum(x.style == seed.style for x in pool)),
    )


def nearest_accuracy(
    database: Path, truth: dict[int, Label]
) -> tuple[float, float, float, float | None]:
    """Leave-one-album-out nearest-neighbour style accuracy: in the stored neighbour lists, in
    the sound block alone (as the similarity space builds it), and in the sound block drawn towards
    each album's mean (where the space does so); and the in-style share of each track's 20 nearest
    tracks by other artists in the stored lists (what a station draws from)."""
    from airwave.core.catalog import space
    from airwave.library.analysis import FEATURE_DIM

    with sqlite3.connect(database) as conn:
        lists = {
            t: space.decode(a, b)[0]
            for t, a, b in conn.execute(
                "SELECT track_id, neighbor_ids, similarities FROM track_neighbors"
            )
        }
        blobs = dict(conn.execute("SELECT track_id, features FROM track_profiles"))
    key = {t: (x.artist, x.album) for t, x in truth.items()}
    hits = total = 0
    near: list[float] = []
    for t, neighbours in lists.items():
        if t not in truth:
            continue
        others = [
            int(n)
            for n in neighbours
            if int(n) in truth and truth[int(n)].artist != truth[t].artist
        ]
        near.append(
            sum(truth[n].style == truth[t].style for n in others[:20]) / max(len(others[:20]), 1)
        )
        first = next((int(n) for n in neighbours if key.get(int(n), key[t]) != key[t]), None)
        total += 1
        hits += first is not None and truth[first].style == truth[t].style
    ids = [t for t in truth if blobs.get(t) is not None]
    features = np.stack([np.frombuffer(blobs[t], np.float32) for t in ids])
    sound_hits, album_hits = 0, None
    if features.shape[1] == FEATURE_DIM:
        from airwave.library import analysis

        # FEATURE_GROUPS since profile version 2: the bench also measures older versions
        groups = getattr(analysis, "FEATURE_GROUPS", None)
        block = space.sound_block(features, **({"groups": groups} if groups else {}))
        sims = block @ block.T
        albums = np.array([hash(key[t]) for t in ids])
        sims[albums[:, None] == albums[None, :]] = -np.inf
        best = np.argmax(sims, axis=1)
        sound_hits = sum(truth[ids[i]].style == truth[ids[j]].style for i, j in enumerate(best))
        if hasattr(space, "album_sound"):  # since the sound profile v3
            names = {k: n for n, k in enumerate(sorted(set(key.values())))}
            artists = {a: n for n, a in enumerate(sorted({x.artist for x in truth.values()}))}
            drawn = space.album_sound(
                block,
                np.array([names[key[t]] for t in ids]),
                np.array([artists[truth[t].artist] for t in ids]),
            )
            sims = drawn @ drawn.T
            sims[albums[:, None] == albums[None, :]] = -np.inf
            best = np.argmax(sims, axis=1)
            album_hits = sum(
                truth[ids[i]].style == truth[ids[j]].style for i, j in enumerate(best)
            ) / max(len(ids), 1)
    return hits / max(total, 1), sound_hits / max(len(ids), 1), float(np.mean(near)), album_hits


def thumbs(
    url: str, seed: int, truth: dict[int, Label], database: Path, count: int, prefix: str
) -> dict[str, float]:
    """Twin stations on one seed: control, thumbs-down on another artist, thumbs-up on another
    style."""
    from airwave.core import ids

    stations = {}
    for role in ("control", "down", "up"):
        client = listener(url, f"{prefix}-{role}-{os.getpid()}-{time.time_ns()}")
        sid = client.ok("v1/station/createStation", {"musicId": ids.music_id("track", seed)})[
            "stationId"
        ]
        stations[role] = (client, sid, spins(client, sid, count))
    style, artist = truth[seed].style, truth[seed].artist
    client, sid, played = stations["down"]
    other_artists = Counter(
        truth[track_of(s)].artist for s in played if truth[track_of(s)].artist != artist
    )
    down_artist = other_artists.most_common(1)[0][0] if other_artists else ""
    downed = [s for s in played if truth[track_of(s)].artist == down_artist][:THUMBS]
    for s in downed:
        client.ok("v1/station/addFeedback", {"trackToken": s["trackToken"], "isPositive": False})
    before = sum(truth[track_of(s)].artist == down_artist for s in played) / max(len(played), 1)
    client, sid, played = stations["up"]
    other_styles = Counter(
        truth[track_of(s)].style for s in played if truth[track_of(s)].style != style
    )
    up_style = other_styles.most_common(1)[0][0] if other_styles else ""
    for s in [s for s in played if truth[track_of(s)].style == up_style][:THUMBS]:
        client.ok("v1/station/addFeedback", {"trackToken": s["trackToken"], "isPositive": True})
    age_history(database, None)
    after = {
        role: [track_of(s) for s in spins(c, sid, count)] for role, (c, sid, _) in stations.items()
    }

    def share(played: list[int], test: Any) -> float:
        return sum(bool(test(truth[t])) for t in played) / max(len(played), 1)

    downed_ids = {track_of(s) for s in downed}
    return {
        "downed": len(downed),
        "returned": sum(t in downed_ids for t in after["down"]),
        "down_before": before,
        "down_after": share(after["down"], lambda x: x.artist == down_artist),
        "down_control": share(after["control"], lambda x: x.artist == down_artist),
        "up_after": share(after["up"], lambda x: x.style == up_style),
        "up_control": share(after["control"], lambda x: x.style == up_style),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache", type=Path, default=real_corpus.CACHE)
    parser.add_argument("--spins", type=int, default=30, help="spins listened to per station")
    parser.add_argument("--seeds", type=int, default=4, help="seed tracks per style")
    args = parser.parse_args()
    library, labels = real_corpus.build(args.cache)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        _, out = cli("scan", "--library", str(library), "--analyze", data_dir=data)
        match = _ANALYSED.search(out)
        if not match:
            raise SystemExit(f"no analysis summary in: {out}")
        analysed, wall, per_cpu = int(match[1]), float(match[2]), float(match[3])
        database = data / "airwave.db"
        truth = catalogue(database, library, labels)
        styles = Counter(x.style for x in truth.values())
        print(
            f"corpus tracks={len(truth)} styles={len(styles)} "
            f"artists={len({x.artist for x in truth.values()})} "
            f"albums={len({(x.artist, x.album) for x in truth.values()})}"
        )
        print(
            f"analysis tracks={analysed} cpu_ms_per_track={1000 / per_cpu:.0f} "
            f"tracks_per_cpu_s={per_cpu:.1f} wall_s={wall:.1f}"
        )
        space_acc, sound_acc, near, album_acc = nearest_accuracy(database, truth)
        drawn = "" if album_acc is None else f" sound_drawn_to_album={album_acc:.0%}"
        print(
            f"nearest_other_album_same_style space={space_acc:.0%} sound_only={sound_acc:.0%}"
            f"{drawn} (leave-one-album-out, {len(truth)} tracks)"
        )
        print(f"neighbours nearest_20_other_artists_in_style={near:.0%}")
        rng = random.Random(20)
        seeds = {
            style: rng.sample(sorted(t for t, x in truth.items() if x.style == style), args.seeds)
            for style in sorted(styles)
        }
        server = serve(data, library, "relaxed")
        try:
            from airwave.core import ids

            total, per_style, short = Tally(), {}, Tally()
            for style, tracks in seeds.items():
                per_style[style] = Tally()
                for n, seed in enumerate(tracks):
                    client = listener(server.url, f"real-{style}-{n}-{os.getpid()}")
                    sid = client.ok(
                        "v1/station/createStation", {"musicId": ids.music_id("track", seed)}
                    )["stationId"]
                    played = [track_of(s) for s in spins(client, sid, args.spins)]
                    per_style[style].add(tally(truth[seed], played, truth))
                    short.add(tally(truth[seed], played[:SHORT], truth))
                total.add(per_style[style])
            runs = [
                thumbs(server.url, tracks[0], truth, database, args.spins, f"t{n}")
                for n, tracks in enumerate(seeds.values())
            ]
        finally:
            server.stop()
    label = f"stations={args.seeds * len(seeds)} first_{args.spins}_spins"
    print(f"style_real {label} {total.line()}")
    print(f"style_real stations={args.seeds * len(seeds)} first_{SHORT}_spins {short.line()}")
    for style, t in per_style.items():
        print(f"style_real style={style} {t.line()}")

    def mean(key: str) -> float:
        return float(np.mean([r[key] for r in runs]))

    print(
        f"thumbs_down_real stations={len(runs)} downed={sum(r['downed'] for r in runs):.0f} "
        f"downed_tracks_returned={sum(r['returned'] for r in runs):.0f} "
        f"artist_share_before={mean('down_before'):.0%} after={mean('down_after'):.0%} "
        f"control={mean('down_control'):.0%}"
    )
    print(
        f"thumbs_up_real stations={len(runs)} style_share_after={mean('up_after'):.0%} "
        f"control={mean('up_control'):.0%}"
    )


if __name__ == "__main__":
    main()
