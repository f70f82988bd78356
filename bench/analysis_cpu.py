"""Sound analysis CPU per track, against an older analysis (an anchor) in the same run.

Every file of a library (the real corpus of bench/real_corpus.py by default, or --library) is
profiled in this one process by today's `airwave.library.analysis.analyze` and by the analysis of
an older commit (--anchor, default the sound profile v2), interleaved file by file, the order
swapped every round; CPU time (process_time, one thread) per track is summed per round and the
medians of --rounds rounds are printed with their ratio and the machine's load before and after.
The target of issue 17 (first scan with analysis <= 40 s per 1,000 tracks on 2 cores) is about
80 ms CPU per track.

    nice -n 10 .venv/bin/python bench/analysis_cpu.py [--rounds 3] [--anchor REV] [--library DIR]

Prints one line per figure; never asserts.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
ANCHOR = "32faf46"  # sound profile v2 (three 10 s excerpts at 22050 Hz)
AUDIO = (".ogg", ".opus", ".mp3", ".flac", ".m4a", ".wav")


def older_analysis(rev: str, where: Path) -> ModuleType:
    """The analysis module as it was at `rev`, imported under another name."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:src/airwave/library/analysis.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = where / "anchor_analysis.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("anchor_analysis", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def cpu_per_track(analyze: Callable[[Path], object], files: list[Path]) -> tuple[float, int]:
    """Mean CPU milliseconds per profiled file, and how many failed."""
    spent, failed = 0.0, 0
    for path in files:
        started = time.process_time()
        try:
            analyze(path)
        except Exception:
            failed += 1
        spent += time.process_time() - started
    return 1000 * spent / max(len(files), 1), failed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--anchor", default=ANCHOR, help="git revision of the older analysis")
    parser.add_argument("--library", type=Path, help="default: the real corpus")
    args = parser.parse_args()
    if args.library:
        library = args.library
    else:
        import real_corpus

        library, _ = real_corpus.build(real_corpus.CACHE)
    files = sorted(p for p in library.rglob("*") if p.suffix.lower() in AUDIO)
    from airwave.library import analysis

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        anchor = older_analysis(args.anchor, Path(tmp))
        runs: dict[str, list[float]] = {"today": [], "anchor": []}
        failures: dict[str, int] = {}
        for n in range(args.rounds):
            order = [("today", analysis.analyze), ("anchor", anchor.analyze)]
            for name, analyze in order if n % 2 == 0 else order[::-1]:
                ms, failures[name] = cpu_per_track(analyze, files)
                runs[name].append(ms)
                print(f"round={n + 1} {name} cpu_ms_per_track={ms:.1f}", flush=True)
    load_after = os.getloadavg()
    today, older = statistics.median(runs["today"]), statistics.median(runs["anchor"])
    print(
        f"analysis_cpu tracks={len(files)} today_ms={today:.1f} "
        f"(profile v{analysis.PROFILE_VERSION}) anchor_ms={older:.1f} "
        f"(profile v{anchor.PROFILE_VERSION}, {args.anchor}) ratio={today / older:.2f} "
        f"failed={failures['today']}/{failures['anchor']} rounds={args.rounds}"
    )
    per_1000 = today * 1000 / 1000 / (os.cpu_count() or 1)
    print(f"first_scan_analysis_estimate s_per_1000_tracks={per_1000:.0f} cores={os.cpu_count()}")
    print(
        f"load_before={load_before[0]:.2f} load_after={load_after[0]:.2f} (1-minute load average)"
    )


if __name__ == "__main__":
    main()
