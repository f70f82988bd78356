"""`airwave serve --workers 2` on SQLite and PostgreSQL: both workers answer on one port, and
the rules that span requests (login back-off, skip limits, the one active player) hold whichever
worker each request reaches; /metrics adds up what every worker counted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from scale_support import api_pids, pids_answering, scattered
from support import Server, assert_error, unique, wait_indexed

PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def workers(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server(
        "--open-registration",
        "--workers",
        "2",
        "--library",
        str(small_demo_library),
        env={
            "AIRWAVE_LOGIN_FREE_FAILURES": "3",
            "AIRWAVE_LOGIN_BACKOFF_BASE": "600",
            "AIRWAVE_FRAGMENT_LIMIT": "100000",
            "AIRWAVE_ANALYZE_AUDIO": "false",
            "AIRWAVE_ENGINE_SEED": "5",
        },
    )
    wait_indexed(server)
    return server


def _artist(api) -> str:  # noqa: ANN001
    for category in api.ok("v1/music/genrecategories", {})["categories"]:
        for station in api.ok("v1/music/genres", {"token": category["token"]})["stations"]:
            for track in station["sampleTracks"]:
                return track["artistMusicId"]
    raise AssertionError("no artist in the library")


def test_both_workers_answer_on_one_port(workers: Server) -> None:
    assert len(pids_answering(workers.url)) == 2


def test_login_backoff_holds_across_workers(workers: Server) -> None:
    name = unique("throttled")
    scattered(workers.url).register(name)
    attacker = scattered(workers.url)
    for _ in range(3):
        response = attacker.call("v1/auth/login", {"username": name, "password": "guess"})
        assert_error(response, 401, "AUTH_INVALID_USERNAME_PASSWORD")
    for _ in range(4):  # whichever worker each attempt reaches, the account is in back-off
        response = attacker.call("v1/auth/login", {"username": name, "password": PASSWORD})
        assert_error(response, 429, "RATE_LIMITED")


def test_skip_limit_and_player_claim_hold_across_workers(workers: Server) -> None:
    phone = scattered(workers.url)
    name = unique("player")
    phone.register(name)
    station = phone.ok("v1/station/createStation", {"musicId": _artist(phone)})["stationId"]
    first = phone.ok("v1/playlist/getFragment", {"stationId": station})
    assert first["skipsRemaining"] == 6
    for n in range(6):
        answer = phone.ok(
            "v1/playlist/getFragment", {"stationId": station, "fragmentRequestReason": "Skip"}
        )
        assert answer["skipsRemaining"] == 5 - n
    for _ in range(3):
        skip = {"stationId": station, "fragmentRequestReason": "Skip"}
        assert_error(phone.call("v1/playlist/getFragment", skip), 429, "STATION_LIMIT_REACHED")
    laptop = scattered(workers.url)
    laptop.login(name, PASSWORD)
    for _ in range(3):
        refused = laptop.call("v1/playlist/getFragment", {"stationId": station})
        assert_error(refused, 409, "STREAM_VIOLATION")
    assert phone.ok("v1/playlist/getFragment", {"stationId": station})["tracks"]
    assert len(api_pids(workers)) == 2  # the account's requests really were spread


def test_metrics_count_requests_of_every_worker(workers: Server) -> None:
    def healthz_count() -> float:
        text = scattered(workers.url).http.get("/metrics").text
        total = 0.0
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = sample.labels
                if sample.name == "airwave_requests_total" and labels["endpoint"] == "healthz":
                    total += sample.value
        return total

    listener = scattered(workers.url)
    listener.register(unique("counted"))
    station = listener.ok("v1/station/createStation", {"musicId": _artist(listener)})["stationId"]
    assert listener.ok("v1/playlist/getFragment", {"stationId": station})["tracks"]
    before = healthz_count()
    assert len(pids_answering(workers.url, attempts=30)) == 2
    assert healthz_count() >= before + 30
    families = {
        f.name: f
        for f in text_string_to_metric_families(scattered(workers.url).http.get("/metrics").text)
    }
    assert {"airwave_request_duration_seconds", "airwave_fragments_served"} <= set(families)
    assert families["airwave_members"].samples[0].value >= 2
