"""The library's helper processes: sound analysis runs at a lower CPU priority than serving."""

from __future__ import annotations

import os

from airwave.library import workers


def test_analysis_workers_run_at_a_lower_priority() -> None:
    own = os.nice(0)
    with workers.pool(1, workers.ANALYSIS_NICENESS) as background:
        assert background.submit(os.nice, 0).result(timeout=60) == min(own + 10, 19)
    with workers.pool(1) as foreground:
        assert foreground.submit(os.nice, 0).result(timeout=60) == own
