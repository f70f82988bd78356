"""Acceptance: stations stay in their seed's sound cluster and adapt to thumbs (figures:
bench/station_quality.py)."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support import Server, wait_indexed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from station_quality import make_library, measure  # noqa: E402

# The engine is the same on every backend; tests/api/test_stations.py covers PostgreSQL.
pytestmark = pytest.mark.sqlite_only


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    root = tmp_path_factory.mktemp("clusters") / "library"
    return root, make_library(
        root, ("Jazz", "Rock", "Electronic"), artists=24, seconds=5.0, demo=False, albums=1
    )


def test_stations_are_coherent_and_learn_from_thumbs(
    start_server: Callable[..., Server], clustered
) -> None:
    root, truth = clustered
    server = start_server(
        "--open-registration",
        "--library",
        str(root),
        env={"AIRWAVE_FRAGMENT_LIMIT": "100000", "AIRWAVE_ENGINE_SEED": "3"},
    )
    wait_indexed(server, timeout=300)
    backend = server.backend
    # three listeners, each with its own three stations: one station's 40 spins differ from its
    # control's by a track or two, so the shares are compared over all of them
    runs = [
        measure(
            server.url,
            truth,
            backend.data_dir / "airwave.db",
            backend.pg.execute if backend.pg is not None else None,
            prefix=f"r{n}",
        )
        for n in range(3)
    ]
    print(runs)

    def mean(field: str) -> float:
        return statistics.mean(getattr(figures, field) for figures in runs)

    assert min(figures.coherence for figures in runs) >= 0.9
    assert sum(figures.down_returned for figures in runs) == 0
    assert mean("down_share_after") < mean("down_share_control")
    assert mean("up_share_after") > mean("up_share_control")
