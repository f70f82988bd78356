"""listener/getPlayHistory over HTTP: what a listener heard on stations and on demand, newest
first, theirs only; served tracks that never began are not in it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from support import Api, Server, assert_error, unique, wait_indexed


@pytest.fixture(scope="module")
def library(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server(
        "--open-registration",
        "--library",
        str(small_demo_library),
        env={"AIRWAVE_FRAGMENT_LIMIT": "100000", "AIRWAVE_ENGINE_SEED": "5"},
    )
    wait_indexed(server)
    return server


def listener(server: Server, tier: str = "free") -> Api:
    api = server.client()
    name = unique("hist")
    api.register(name)
    if tier != "free":
        assert server.admin("user", "tier", name, tier).returncode == 0
    return api


def test_history_of_station_and_on_demand_plays(library: Server) -> None:
    api = listener(library, "premium")
    assert api.ok("v1/listener/getPlayHistory") == {"total": 0, "items": []}

    album = api.ok("v1/search/fullSearch", {"query": "a", "types": ["AL"]})["items"][0]
    tracks = api.ok("v1/music/album", {"token": album["musicId"]})["tracks"]
    station = api.ok("v1/station/createStation", {"musicId": tracks[0]["musicId"]})
    served = api.ok("v1/playlist/getFragment", {"stationId": station["stationId"]})["tracks"]
    # the first radio track begins and is skipped; the others were served, never begun
    api.ok("v1/station/trackStarted", {"trackToken": served[0]["trackToken"]})
    assert httpx.post(served[0]["audioSkipUrl"], json={"secondsPlayed": 1}).status_code < 300
    # then a track on demand, begun and played to its end
    grant = api.ok(
        "v1/ondemand/getAudioPlaybackInfo",
        {"pandoraId": tracks[1]["pandoraId"], "audioFormat": "mp3"},
    )
    api.ok("v1/station/trackStarted", {"trackToken": grant["trackToken"]})
    assert httpx.post(grant["audioReceiptURL"], json={}).status_code < 300

    heard = api.ok("v1/listener/getPlayHistory")
    assert heard["total"] == 2
    latest, earlier = heard["items"]
    assert latest["track"]["pandoraId"] == tracks[1]["pandoraId"]
    assert latest["outcome"] == "completed" and "stationId" not in latest
    assert latest["onDemand"] is True and earlier["onDemand"] is False
    assert latest["isAvailable"] is True and latest["track"]["albumArt"]
    assert earlier["track"]["musicId"] == served[0]["musicId"]
    assert earlier["stationId"] == station["stationId"]
    assert earlier["stationName"] == station["name"]
    assert earlier["outcome"] == "skipped" and earlier["secondsPlayed"] == 1
    assert latest["playedAt"] >= earlier["playedAt"]

    page = api.ok("v1/listener/getPlayHistory", {"pageSize": 1, "startIndex": 1})
    assert page["total"] == 2 and [i["track"]["musicId"] for i in page["items"]] == [
        served[0]["musicId"]
    ]
    # another listener's history is their own
    assert listener(library).ok("v1/listener/getPlayHistory")["total"] == 0


def test_history_needs_a_listener_and_sane_paging(library: Server) -> None:
    anonymous = library.client()
    assert_error(anonymous.call("v1/listener/getPlayHistory"), 401, "AUTH_INVALID_TOKEN")
    api = listener(library)
    for bad in ({"pageSize": 0}, {"pageSize": 501}, {"startIndex": -1}, {"pageSize": "ten"}):
        assert_error(api.call("v1/listener/getPlayHistory", bad), 400, "INVALID_REQUEST")
