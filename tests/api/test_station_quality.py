"""Acceptance: stations stay in their seed's sound cluster and adapt to thumbs (figures:
bench/station_quality.py)."""

from __future__ import annotations

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
    figures = measure(
        server.url,
        truth,
        backend.data_dir / "airwave.db",
        backend.pg.execute if backend.pg is not None else None,
    )
    print(figures)
    assert figures.coherence >= 0.9
    assert figures.down_returned == 0
    assert figures.down_share_after < figures.down_share_control
    assert figures.up_share_after > figures.up_share_control
