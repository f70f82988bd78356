"""Property test over HTTP: random listening sessions never break the radio rules of spec §6.4.

Each example is a fresh listener with two stations doing a random mix of fragment requests (normal,
skip, thumbs-down, tired), thumbs, tired tracks and seed edits. After every fragment the station's
whole history is checked by an independent implementation of the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import Api, Server, artists, unique, wait_indexed

WINDOW_MS = 3 * 3600 * 1000


@dataclass
class Spin:
    music_id: str
    artist: str
    album: str
    at: int


@dataclass
class Session:
    api: Api
    stations: list[str]
    history: dict[str, list[Spin]] = field(default_factory=dict)
    last: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    downed: dict[str, set[str]] = field(default_factory=dict)
    tired: set[str] = field(default_factory=set)
    ended: set[str] = field(default_factory=set)


def broken_rules(spins: list[Spin]) -> list[str]:
    """Every rule of §6.4 a station history (oldest first) breaks."""
    problems = []
    for i, s in enumerate(spins):
        if s.music_id in {p.music_id for p in spins[max(0, i - 50) : i]}:
            problems.append(f"{i}: {s.music_id} repeats within 50 spins")
        window = [p for p in spins[: i + 1] if p.at > s.at - WINDOW_MS]
        if sum(p.album == s.album for p in window) > 3:
            problems.append(f"{i}: more than 3 from album {s.album} in 3 hours")
        if sum(p.artist == s.artist for p in window) > 4:
            problems.append(f"{i}: more than 4 by artist {s.artist} in 3 hours")
        if i >= 2 and all(p.album == s.album for p in spins[i - 2 : i + 1]):
            problems.append(f"{i}: 3 from album {s.album} in a row")
        if i >= 3 and all(p.artist == s.artist for p in spins[i - 3 : i + 1]):
            problems.append(f"{i}: 4 by artist {s.artist} in a row")
    return problems


@pytest.fixture(scope="module")
def strict_radio(
    start_server: Callable[..., Server], small_demo_library: Path
) -> tuple[Server, list[str]]:
    server = start_server(
        "--open-registration",
        "--library",
        str(small_demo_library),
        env={
            "AIRWAVE_DEFAULT_TIER": "plus",
            "AIRWAVE_FRAGMENT_LIMIT": "100000",
            "AIRWAVE_ENGINE_SEED": "5",
        },
    )
    wait_indexed(server)
    api = server.client()
    api.register(unique())
    return server, sorted(a["musicId"] for a in artists(api).values())


actions = st.lists(
    st.one_of(
        st.tuples(
            st.just("fragment"),
            st.integers(0, 1),
            st.sampled_from(["Normal", "Skip", "ThumbsDown", "Tired"]),
        ),
        st.tuples(st.just("thumb"), st.integers(0, 1), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("tired"), st.integers(0, 1), st.integers(0, 3)),
        st.tuples(st.just("add_seed"), st.integers(0, 1), st.integers(0, 40)),
        st.tuples(st.just("delete_seed"), st.integers(0, 1)),
    ),
    min_size=4,
    max_size=24,
)


def run_action(session: Session, action: tuple, artist_ids: list[str]) -> None:
    api = session.api
    station = session.stations[action[1]]
    last = session.last.get(station, [])
    if action[0] == "fragment":
        if station in session.ended:
            return
        response = api.call(
            "v1/playlist/getFragment", {"stationId": station, "fragmentRequestReason": action[2]}
        )
        if response.status_code == 404 and response.json()["errorString"] == "PLAYLIST_END":
            session.ended.add(station)  # every remaining track would break a rule: the right answer
            return
        assert response.status_code == 200, response.text
        tracks = response.json()["tracks"]
        assert tracks
        for t in tracks:
            assert t["musicId"] not in session.downed.get(station, set()), (
                "a thumbs-down track came back"
            )
            assert t["musicId"] not in session.tired, "a tired track came back"
            album = t["albumSeoToken"].rsplit("/", 1)[1]
            session.history.setdefault(station, []).append(
                Spin(t["musicId"], t["artistMusicId"], album, int(t["listeningTimestamp"]))
            )
        problems = broken_rules(session.history[station])
        assert not problems, problems
        session.last[station] = tracks
    elif action[0] == "thumb" and last:
        track = last[action[2] % len(last)]
        api.ok(
            "v1/station/addFeedback", {"trackToken": track["trackToken"], "isPositive": action[3]}
        )
        if action[3]:
            session.downed.get(station, set()).discard(track["musicId"])
        else:
            session.downed.setdefault(station, set()).add(track["musicId"])
    elif action[0] == "tired" and last:
        track = last[action[2] % len(last)]
        api.ok("v1/listener/addTiredSong", {"trackToken": track["trackToken"]})
        session.tired.add(track["musicId"])
    elif action[0] == "add_seed":
        api.ok(
            "v1/station/addSeed",
            {"stationId": station, "musicId": artist_ids[action[2] % len(artist_ids)]},
        )
        session.ended.discard(station)
    elif action[0] == "delete_seed":
        seeds = api.ok("v1/station/getStationDetails", {"stationId": station})["seeds"]
        if len(seeds) > 1:
            api.ok("v1/station/deleteSeed", {"stationId": station, "musicId": seeds[-1]["musicId"]})


@settings(
    max_examples=14,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=actions, seeds=st.tuples(st.integers(0, 40), st.integers(0, 40)))
def test_random_sessions_keep_the_radio_rules(
    strict_radio: tuple[Server, list[str]], steps: list[tuple], seeds: tuple[int, int]
) -> None:
    server, artist_ids = strict_radio
    api = server.client()
    api.register(unique())
    stations = [
        api.ok("v1/station/createStation", {"musicId": artist_ids[s % len(artist_ids)]})[
            "stationId"
        ]
        for s in seeds
    ]
    session = Session(api, stations)
    for step in [
        ("fragment", 0, "Normal"),
        *steps,
        ("fragment", 0, "Normal"),
        ("fragment", 1, "Normal"),
    ]:
        run_action(session, step, artist_ids)
