"""Sound analysis throughput and its share of a full scan.

A library of synthesised tracks (the demo generator, all six styles, tracks of --seconds) is
scanned twice through the real CLI on a fresh data dir: first `airwave scan --no-analyze` (tags,
art, catalogue), then `airwave scan` again, which finds nothing new to read and spends its time
on the sound analysis and the similarity index. Printed: tracks per second (wall, all cores),
tracks per CPU-second (per core), and the analysis' share of the whole scan.

    .venv/bin/python bench/analysis.py [--artists 4] [--seconds 60]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_ANALYSED = re.compile(r"analysed (\d+) tracks in ([\d.]+) s \(([\d.]+) tracks per CPU-second\)")


def run(*args: str, data_dir: Path) -> tuple[float, str]:
    env = {**os.environ, "AIRWAVE_DATA_DIR": str(data_dir)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "airwave", *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--artists", type=int, default=4, help="artists per style (2 albums of 6 tracks each)"
    )
    parser.add_argument(
        "--seconds", type=float, default=60.0, help="track length (analysis reads 30 s of it)"
    )
    args = parser.parse_args()
    from airwave.library import demo

    with tempfile.TemporaryDirectory() as tmp:
        library = Path(tmp) / "library"
        started = time.perf_counter()
        summary = demo.generate(
            library, artists_per_genre=args.artists, track_seconds=args.seconds, compilation=False
        )
        print(
            f"library tracks={summary.tracks} seconds_each={args.seconds:.0f} "
            f"generated_s={time.perf_counter() - started:.1f}"
        )
        data = Path(tmp) / "data"
        scan_s, _ = run("scan", "--library", str(library), "--no-analyze", data_dir=data)
        analyse_s, out = run("scan", "--library", str(library), "--analyze", data_dir=data)
        match = _ANALYSED.search(out)
        if not match:
            raise SystemExit(f"no analysis summary in: {out}")
        tracks, seconds, per_cpu = int(match[1]), float(match[2]), float(match[3])
        cores = os.cpu_count() or 1
        print(f"scan_without_analysis tracks={summary.tracks} wall_s={scan_s:.2f}")
        print(
            f"analysis tracks={tracks} wall_s={seconds:.2f} tracks_per_s={tracks / seconds:.1f} "
            f"tracks_per_cpu_s={per_cpu:.1f} cores={cores}"
        )
        print(
            f"analysis_share_of_scan={analyse_s / (scan_s + analyse_s):.0%} "
            f"(scan {scan_s:.2f} s + analysis and index {analyse_s:.2f} s)"
        )


if __name__ == "__main__":
    main()
