"""The sound analysis after a scan, through the CLI: summary, nothing redone, and resume after a
kill."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

_ANALYSED = re.compile(r"analysed (\d+) tracks")


def _count(backend, table: str) -> int:  # noqa: ANN001
    from sqlalchemy import text

    from airwave.store.db import Database

    db = Database(backend.pg.url if backend.pg else f"sqlite:///{backend.data_dir / 'airwave.db'}")
    try:
        with db.read() as session:
            return session.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar() or 0
    except Exception:
        return 0
    finally:
        db.dispose()


def test_analysis_resumes_after_a_kill_and_is_not_repeated(
    make_backend, small_demo_library: Path
) -> None:
    backend = make_backend()
    env = {**os.environ, **backend.env}
    scan = [
        sys.executable,
        "-m",
        "airwave",
        "scan",
        "--library",
        str(small_demo_library),
        "--workers",
        "1",
    ]
    first = subprocess.Popen(
        scan, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    committed, deadline = 0, time.monotonic() + 120
    while committed == 0 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
        committed = _count(backend, "track_profiles")
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert 0 < committed < 150, committed

    second = subprocess.run(scan, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    analysed = int(_ANALYSED.search(second.stdout).group(1))
    assert analysed == 150 - committed, second.stdout
    assert "similarity index ready" in second.stdout
    assert _count(backend, "track_profiles") == 150
    assert _count(backend, "track_neighbors") == 150

    third = subprocess.run(scan, env=env, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr
    assert "analysed" not in third.stdout and "similarity index ready" in third.stdout
