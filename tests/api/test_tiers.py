"""Tiers (spec §6.6) end to end: flags, configurable policies, high quality, on-demand; anonymous
listening."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import Api, Server, assert_error, unique, wait_indexed

# The wire contract: its storage paths run on PostgreSQL in the storage tests.
pytestmark = pytest.mark.sqlite_only


@pytest.fixture(scope="module")
def tiered(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server(
        "--open-registration",
        "--library",
        str(small_demo_library),
        env={
            "AIRWAVE_FRAGMENT_LIMIT": "100000",
            "AIRWAVE_ENGINE_SEED": "3",
            "AIRWAVE_ANONYMOUS_LOGIN": "true",
            "AIRWAVE_ANONYMOUS_IDLE_TIMEOUT": "60",
            "AIRWAVE_HOUSEKEEPING_INTERVAL": "1",
            "AIRWAVE_TIERS__PLUS__MAX_STATIONS": "7",
            "AIRWAVE_TIERS__FREE__DAILY_SKIP_LIMIT": "9",
            "AIRWAVE_TIERS__FREE__MONTHLY_LISTENING_CAP_HOURS": "1",
        },
    )
    wait_indexed(server)
    return server


def member(server: Server, tier: str) -> tuple[Api, str]:
    api = server.client()
    name = unique()
    api.register(name)
    if tier != "free":
        done = server.admin("user", "tier", name, tier)
        assert done.returncode == 0, done.stderr
    return api, name


def a_track(api: Api) -> dict[str, Any]:
    album = api.ok("v1/search/fullSearch", {"query": "a", "types": ["AL"]})["items"][0]
    return api.ok("v1/music/album", {"token": album["musicId"]})["tracks"][0]


def test_login_flags_follow_the_tier_and_the_operators_policies(tiered: Server) -> None:
    expected = {
        "free": [],
        "plus": [
            "noAds",
            "adFreeSkip",
            "adFreeReplay",
            "replaysEnabled",
            "highQualityStreamingAvailable",
        ],
        "premium": [
            "noAds",
            "adFreeSkip",
            "adFreeReplay",
            "replaysEnabled",
            "highQualityStreamingAvailable",
            "onDemand",
        ],
    }
    for tier, flags in expected.items():
        api, name = member(tiered, tier)
        config = api.login(name, "correct horse battery")["config"]
        assert config["flags"] == flags, tier
        assert config["maxStations"] == {"free": 100, "plus": 7, "premium": 250}[tier]
        assert config["dailySkipLimit"] == (9 if tier == "free" else 0)
        assert config["stationSkipLimit"] == (6 if tier == "free" else 0)
        assert config["monthlyListeningCapHours"] == (1 if tier == "free" else 0)
    # an unknown tier is refused by the admin CLI and changes nothing
    api, name = member(tiered, "plus")
    refused = tiered.cli("user", "tier", name, "gold")
    assert refused.returncode != 0 and "tier" in (refused.stderr + refused.stdout).lower()
    assert api.login(name, "correct horse battery")["tier"] == "plus"


def test_billing_info_names_the_tier_as_clients_compare_it(tiered: Server) -> None:
    for tier, product in (
        ("free", "pandora_free"),
        ("plus", "pandora_plus"),
        ("premium", "pandora_premium"),
    ):
        api, _ = member(tiered, tier)
        assert api.ok("v1/billing/infoV2", {}) == {
            "activeProduct": {"productTier": product, "tier": tier}
        }


def test_tier_change_takes_effect_on_the_next_call(tiered: Server) -> None:
    api, name = member(tiered, "free")
    station = api.ok("v1/station/createStation", {"musicId": a_track(api)["musicId"]})
    token = api.ok("v1/playlist/getFragment", {"stationId": station["stationId"]})["tracks"][0][
        "trackToken"
    ]
    body = {"stationId": station["stationId"], "trackToken": token}
    assert_error(api.call("v1/ondemand/getReplayTrack", body), 403, "LISTENER_NOT_AUTHORIZED")
    assert tiered.cli("user", "tier", name, "plus").returncode == 0
    assert api.ok("v1/ondemand/getReplayTrack", body)["replayTrack"]["musicId"]


def test_high_quality_needs_the_tier_and_the_setting(tiered: Server) -> None:
    free, _ = member(tiered, "free")
    plus, _ = member(tiered, "plus")
    for api, encoding in ((free, "mp3"), (plus, "mp3-hifi")):
        station = api.ok("v1/station/createStation", {"musicId": a_track(api)["musicId"]})
        tracks = api.ok(
            "v1/playlist/getFragment",
            {"stationId": station["stationId"], "audioFormat": "mp3-hifi"},
        )["tracks"]
        assert {t["audioEncoding"] for t in tracks} == {encoding}


def test_on_demand_playback_is_premium_only(tiered: Server) -> None:
    track = a_track(member(tiered, "free")[0])
    for tier in ("free", "plus"):
        api, _ = member(tiered, tier)
        assert_error(
            api.call("v1/ondemand/getAudioPlaybackInfo", {"pandoraId": track["pandoraId"]}),
            403,
            "LISTENER_NOT_AUTHORIZED",
        )
    api, name = member(tiered, "premium")
    listener_id = api.login(name, "correct horse battery")["listenerId"]
    info = api.ok(
        "v1/ondemand/getAudioPlaybackInfo",
        {"pandoraId": track["pandoraId"], "audioFormat": "original"},
    )
    assert {"audioURL", "audioEncoding", "fileGain", "trackLength"} <= set(info)
    assert info["audioEncoding"] == "original" and info["trackLength"] == round(
        float(track["trackLength"])
    )
    audio = httpx.get(info["audioURL"])
    assert (
        audio.status_code == 200
        and audio.headers["content-type"].startswith("audio/")
        and audio.content
    )
    # the play is logged for the operator once its receipt arrives
    assert httpx.post(info["audioReceiptURL"], json={"secondsPlayed": 2}).status_code == 200
    exported = tiered.cli("export", "plays", "--since", "2000-01-01", "--format", "json")
    assert exported.returncode == 0, exported.stderr
    logged = [p for p in json.loads(exported.stdout) if p["listener_id"] == int(listener_id)]
    assert [(p["title"], p["station_id"], p["outcome"], p["audio_encoding"]) for p in logged] == [
        (track["songTitle"], None, "completed", "original")
    ]
    # the on-demand play is bookmarkable through its token, like a radio track
    assert (
        api.ok("v1/bookmark/add", {"trackToken": info["trackToken"]})["musicId"] == track["musicId"]
    )

    assert_error(
        api.call("v1/ondemand/getAudioPlaybackInfo", {"pandoraId": track["albumMusicId"]}),
        400,
        "INVALID_PANDORA_TYPE",
    )
    assert_error(
        api.call("v1/ondemand/getAudioPlaybackInfo", {"pandoraId": "TR:99999999"}), 404, "NOT_FOUND"
    )
    assert_error(api.call("v1/ondemand/getAudioPlaybackInfo", {}), 400, "INVALID_REQUEST")


def test_default_tier_is_configurable(start_server: Callable[..., Server]) -> None:
    server = start_server(
        "--open-registration",
        env={"AIRWAVE_DEFAULT_TIER": "premium", "AIRWAVE_TIERS__PREMIUM__REPLAYS": "false"},
    )
    data = server.client().register(unique())
    assert data["tier"] == "premium"
    assert "onDemand" in data["config"]["flags"] and "replaysEnabled" not in data["config"]["flags"]


def test_anonymous_login_gives_a_throwaway_free_listener(tiered: Server) -> None:
    api = tiered.client()
    data = api.ok("v1/auth/anonymousLogin", {})
    api.token = data["authToken"]
    assert (
        data["tier"] == "free"
        and data["username"].startswith("anonymous-")
        and data["profilePrivate"] is True
    )
    assert "noAds" not in data["config"]["flags"]
    station = api.ok("v1/station/createStation", {"musicId": a_track(api)["musicId"]})
    assert api.ok("v1/playlist/getFragment", {"stationId": station["stationId"]})["tracks"]
    second = tiered.client().ok("v1/auth/anonymousLogin", {})
    assert second["listenerId"] != data["listenerId"]

    # idle past anonymous_idle_timeout: housekeeping deletes the listener and all of theirs
    listener_id = int(data["listenerId"])
    tiered.backend.execute(
        f"UPDATE listeners SET created_at = '2000-01-01 00:00:00' WHERE id = {listener_id}"
    )
    tiered.backend.execute(
        "UPDATE auth_sessions SET last_seen_at = '2000-01-01 00:00:00' WHERE listener_id = "
        f"{listener_id}"
    )
    deadline = time.monotonic() + 30

    def listed() -> list[str]:
        done = tiered.cli("user", "list", "--format", "json")
        assert done.returncode == 0, done.stderr
        return [row["username"] for row in json.loads(done.stdout)]

    while time.monotonic() < deadline and data["username"] in listed():
        time.sleep(0.5)  # not polling with its token: a request would count as activity
    assert data["username"] not in listed()
    assert_error(api.call("v1/station/getStations", {}), 401, "AUTH_INVALID_TOKEN")
    # the other anonymous listener, still active, is untouched
    other = tiered.client()
    other.token = second["authToken"]
    assert other.ok("v1/station/getStations", {})["totalStations"] == 0


def test_anonymous_login_is_off_unless_enabled(server: Server) -> None:
    assert_error(server.client().call("v1/auth/anonymousLogin", {}), 403, "CALL_NOT_ALLOWED")


def test_monthly_listening_cap(tiered: Server) -> None:
    """Runs last in the module: it stretches the tracks' recorded lengths, then puts them back."""
    free, _ = member(tiered, "free")
    plus, _ = member(tiered, "plus")
    seed = a_track(free)["musicId"]
    stations = {}
    for api in (free, plus):
        stations[id(api)] = station = api.ok("v1/station/createStation", {"musicId": seed})[
            "stationId"
        ]
        for track in api.ok("v1/playlist/getFragment", {"stationId": station})["tracks"]:
            api.ok("v1/station/trackStarted", {"trackToken": track["trackToken"]})
    tiered.backend.execute("UPDATE tracks SET duration = duration + 1000")
    try:
        refused = free.call("v1/playlist/getFragment", {"stationId": stations[id(free)]})
        body = assert_error(refused, 403, "LISTENER_NOT_AUTHORIZED")
        assert "hours of listening" in body["message"] and int(refused.headers["Retry-After"]) > 0
        assert plus.ok("v1/playlist/getFragment", {"stationId": stations[id(plus)]})["tracks"]
    finally:
        tiered.backend.execute("UPDATE tracks SET duration = duration - 1000")
    assert free.ok("v1/playlist/getFragment", {"stationId": stations[id(free)]})["tracks"]
