"""A first scan with sound analysis of real recordings, per 1,000 tracks, beside an older tree.

The real corpus of bench/real_corpus.py (161 game-soundtrack recordings, Ogg Vorbis and Opus) is
copied into a library of --tracks files (each pass over the corpus after the first gets its
titles and albums suffixed, so every copy is a track of its own), cached beside the corpus. Then,
for --rounds rounds, this checkout's `airwave scan` and, with --baseline-src, another tree's
(PYTHONPATH=DIR/src, the same interpreter) scan it into a fresh data dir with analysis on,
taking turns (the order swapped every round). Printed per tree: the wall seconds from process
start to exit, scaled to 1,000 tracks; CPU seconds of the scan and its workers per track; the
analysis' own line; medians, the ratio between the trees, the load before and after. Issue 17's
target is <= 40 s per 1,000 tracks on 2 cores.

    .venv/bin/python bench/first_scan_real.py [--tracks 1000] [--rounds 3] [--baseline-src DIR]

Prints one line per figure; never asserts.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import real_corpus
from benchkit import compile_bytecode, interpreter

ROOT = Path(__file__).resolve().parent.parent
TARGET_S_PER_1000 = 40.0
_ANALYSED = re.compile(r"analysed (\d+) tracks in ([\d.]+) s")


def library_of(tracks: int) -> Path:
    """The corpus copied up to `tracks` files (built once, then reused)."""
    corpus, labels = real_corpus.build()
    library = real_corpus.CACHE / f"first-scan-{tracks}"
    marker = library / ".complete"  # holds the recipe of the corpus it was copied from
    recipe = (real_corpus.CACHE / "library.sources").read_text()
    if marker.exists() and marker.read_text() == recipe:
        return library
    shutil.rmtree(library, ignore_errors=True)
    import mutagen

    files = sorted(corpus / p for p in labels)
    made = 0
    copy = 0
    while made < tracks:
        for path in files:
            if made >= tracks:
                break
            out = library / f"copy{copy}" / path.relative_to(corpus)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
            if copy:
                audio = mutagen.File(out, easy=True)
                audio["title"] = f"{audio['title'][0]} ({copy})"
                audio["album"] = f"{audio['album'][0]} ({copy})"
                audio.save()
            made += 1
        copy += 1
    marker.write_text(recipe)
    return library


def scan_once(library: Path, source: Path | None, data_dir: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the command and its workers) and the analysis line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRWAVE_")}
    if source is not None:
        env["PYTHONPATH"] = str(source / "src")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "airwave", "scan", "--library", str(library), "--analyze"],
        env={**env, "AIRWAVE_DATA_DIR": str(data_dir)},
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    match = _ANALYSED.search(done.stdout)
    return wall, cpu, match[0] if match else "no analysis line"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tracks", type=int, default=1000, help="library size (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="another Airwave tree (`git archive REV src | tar -x -C DIR`), measured in turn",
    )
    args = parser.parse_args()
    if not 1 <= args.tracks <= 20_000 or not 1 <= args.rounds <= 20:
        parser.error("--tracks 1..20000, --rounds 1..20")
    library = library_of(args.tracks)
    sources: dict[str, Path | None] = {"airwave": None}
    if args.baseline_src:
        sources["baseline"] = args.baseline_src.absolute()
    for source in sources.values():
        compile_bytecode((source or ROOT) / "src")
    print(
        f"config library={library} tracks={args.tracks} cpus={os.cpu_count()} "
        f"rounds={args.rounds} load_before={os.getloadavg()[0]:.2f} {interpreter()}",
        flush=True,
    )
    walls: dict[str, list[float]] = {k: [] for k in sources}
    cpus: dict[str, list[float]] = {k: [] for k in sources}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            order = list(sources) if r % 2 == 0 else list(reversed(sources))
            for who in order:
                data_dir = Path(tmp) / f"{who}-{r}"
                wall, cpu, line = scan_once(library, sources[who], data_dir)
                shutil.rmtree(data_dir, ignore_errors=True)
                walls[who].append(wall)
                cpus[who].append(cpu)
                print(
                    f"round {r + 1} {who} wall_s={wall:.2f} "
                    f"s_per_1000={wall * 1000 / args.tracks:.1f} "
                    f"cpu_ms_per_track={cpu * 1000 / args.tracks:.0f} ({line})",
                    flush=True,
                )
    medians = {who: statistics.median(w) * 1000 / args.tracks for who, w in walls.items()}
    for who, per_1000 in medians.items():
        cpu = statistics.median(cpus[who]) * 1000 / args.tracks
        print(
            f"{who} first_scan_with_analysis s_per_1000_tracks={per_1000:.1f} "
            f"(target <={TARGET_S_PER_1000:.0f}) cpu_ms_per_track={cpu:.0f} "
            f"rounds=[{' '.join(f'{w:.2f}' for w in walls[who])}]"
        )
    if "baseline" in medians:
        print(f"ratio airwave/baseline={medians['airwave'] / medians['baseline']:.2f}")
    print(f"load_after={os.getloadavg()[0]:.2f} (1-minute load average)")


if __name__ == "__main__":
    main()
