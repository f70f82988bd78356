"""The ads of the free tier in Subsonic apps, on both databases: a station opened as a playlist
holds its fragment's ads where getFragment places them, as songs `AD:<adToken>` that stream the
ad's audio and count its impression (once per ad, scrobble included) in the operator's report;
paying tiers get none; ad ids are nothing else's and junk ids answer errors, never a 500."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import media
import pytest
import sqlalchemy as sa
from support import Server, wait_indexed
from support.subsonic import Listener

from airwave.store.models import AdSpin

INTERVAL_MINUTES = 0.05  # 3 s of music between ads: one after every two 2-second demo tracks
NS = "{http://subsonic.org/restapi}"


@pytest.fixture(scope="module")
def sub(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server(
        "--library",
        str(small_demo_library),
        env={
            "AIRWAVE_AD_INTERVAL_MINUTES": str(INTERVAL_MINUTES),
            "AIRWAVE_FRAGMENT_LIMIT": "100000",
            "AIRWAVE_ENGINE_SEED": "7",
        },
    )
    wait_indexed(server)
    return server


@pytest.fixture(scope="module")
def spot(sub: Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The one active campaign: an mp3 with a picture."""
    root = tmp_path_factory.mktemp("ad-files")
    audio = media.encode(root / "jingle.mp3", seconds=1.5, freq=660.0)
    art = root / "art.png"
    art.write_bytes(media.image_bytes((30, 160, 90), 400, "PNG"))
    done = sub.admin(
        "ads",
        "add",
        str(audio),
        "--title",
        "Spring sale",
        "--click-url",
        "https://example.org/buy",
        "--art",
        str(art),
    )
    assert done.returncode == 0, done.stderr + done.stdout
    found = re.search(r"added ad campaign (\d+)", done.stdout)
    assert found, done.stdout
    return {"id": int(found.group(1)), "bytes": audio.read_bytes()}


def impressions(server: Server, campaign: int) -> int:
    """The campaign's impressions in the operator's report (`airwave ads report`)."""
    done = server.admin("ads", "report", "--format", "json")
    assert done.returncode == 0, done.stderr
    return sum(r["impressions"] for r in json.loads(done.stdout) if r["campaign_id"] == campaign)


def plays_of(server: Server, listener: Listener) -> list[dict[str, Any]]:
    """The listener's rows of the play log (`airwave export plays`)."""
    done = server.admin("export", "plays", "--since", "2020-01-01", "--format", "json")
    assert done.returncode == 0, done.stderr
    return [p for p in json.loads(done.stdout) if p["listener_id"] == listener.id]


def age(server: Server, ad_id: str, hours: float) -> None:
    """Move an ad's issue time back, as if it had been handed out `hours` ago."""
    backend = server.backend
    sqlite = f"sqlite:///{backend.data_dir / 'airwave.db'}"
    engine = sa.create_engine(backend.pg.url if backend.pg is not None else sqlite)
    try:
        with engine.begin() as db:
            moved = db.execute(
                sa.update(AdSpin)
                .where(AdSpin.token == ad_id.removeprefix("AD:"))
                .values(issued_at=datetime.now(UTC) - timedelta(hours=hours))
            )
            assert moved.rowcount == 1
    finally:
        engine.dispose()


def a_station(listener: Listener) -> str:
    """A song station made in the web player (REST); its playlist id."""
    album = listener.rest.ok("v1/search/fullSearch", {"query": "a", "types": ["AL"]})["items"][0]
    track = listener.rest.ok("v1/music/album", {"token": album["musicId"]})["tracks"][0]
    return listener.rest.ok("v1/station/createStation", {"musicId": track["musicId"]})["pandoraId"]


def is_ad(entry: dict[str, Any]) -> bool:
    return entry["id"].startswith("AD:")


def shape(entries: list[dict[str, Any]]) -> str:
    return "".join("A" if is_ad(e) else "T" for e in entries)


def opened(listener: Listener, station: str) -> list[dict[str, Any]]:
    playlist = listener.ok("getPlaylist", id=station)["playlist"]
    entries = playlist["entry"]
    assert playlist["songCount"] == len(entries)
    assert playlist["duration"] == sum(e["duration"] for e in entries)
    assert len([e for e in entries if not is_ad(e)]) == 4  # ads are not spins
    return entries


def test_free_station_playlists_hold_the_fragments_ads(sub: Server, spot: dict[str, Any]) -> None:
    free = Listener(sub, tier="free")
    station = a_station(free)
    first = opened(free, station)
    assert shape(first) == "TTATTA", first  # as getFragment places them for a new listener
    entries = first + [e for _ in range(4) for e in opened(free, station)]
    assert "AA" not in shape(entries)
    music = 0
    for entry in entries:  # each ad follows the track at which the music reached the interval
        if is_ad(entry):
            assert music >= INTERVAL_MINUTES * 60, shape(entries)
            music = 0
        else:
            assert music < INTERVAL_MINUTES * 60, shape(entries)  # an ad was due and missing
            music += entry["duration"]
    ad = first[2]
    assert re.fullmatch(r"AD:[A-Za-z0-9_-]{20,32}", ad["id"]), ad
    assert ad == {
        "id": ad["id"],
        "isDir": False,
        "title": "Spring sale",
        "artist": "Advertisement",
        "coverArt": ad["id"],
        "contentType": "audio/mpeg",
        "suffix": "mp3",
        "duration": 2,
        "type": "music",
        "isVideo": False,
    }
    ad_ids = [e["id"] for e in entries if is_ad(e)]
    assert len(set(ad_ids)) == len(ad_ids)  # one adToken per ad handed out

    # streaming an ad serves its audio and counts its impression, once per ad
    before = impressions(sub, spot["id"])
    audio = free.get("stream", id=ad["id"])
    assert audio.status_code == 200, audio.text[:300]
    assert audio.content == spot["bytes"] and audio.headers["content-type"] == "audio/mpeg"
    assert impressions(sub, spot["id"]) == before + 1
    part = free.get("stream", id=ad["id"], headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and part.content == spot["bytes"][100:200]
    assert free.get("download", id=ad["id"]).content == spot["bytes"]
    free.ok("scrobble", id=ad["id"])  # the app reports it played: counted already
    assert impressions(sub, spot["id"]) == before + 1
    picture = free.get("getCoverArt", id=ad["id"], size=100)
    assert picture.status_code == 200 and picture.headers["content-type"] == "image/jpeg"

    # a scrobble alone counts an ad once, and is no play; a start (submission=false) counts nothing
    second, third = ad_ids[1], ad_ids[2]
    free.ok("scrobble", id=third, submission="false")
    assert impressions(sub, spot["id"]) == before + 1
    assert plays_of(sub, free) == []
    free.ok("scrobble", id=second)
    assert impressions(sub, spot["id"]) == before + 2
    assert plays_of(sub, free) == []
    free.ok("scrobble", id=[second, first[0]["id"]])  # an ad and a song in one call
    assert impressions(sub, spot["id"]) == before + 2
    (played,) = plays_of(sub, free)  # the song's station spin; the ads are no plays
    assert played["track_id"] == int(first[0]["id"][1:]) and played["outcome"] == "completed"

    # an ad is nothing else: no song, no star, rating or bookmark; the saved queue skips it
    assert free.error("getSong", id=ad["id"]) == 70
    assert free.error("star", id=ad["id"]) == 70
    assert free.error("setRating", id=ad["id"], rating=5) == 70
    assert free.error("createBookmark", id=ad["id"], position=1000) == 70
    assert free.error("getLyricsBySongId", id=ad["id"]) == 70
    queue = [e["id"] for e in first]
    free.ok("savePlayQueue", id=queue, current=ad["id"], position=500)
    saved = free.ok("getPlayQueue")["playQueue"]
    assert [e["id"] for e in saved["entry"]] == [e["id"] for e in first if not is_ad(e)]
    assert saved["current"] == first[3]["id"] and saved["position"] == 0

    # another listener's ad is refused, and counts nothing
    stranger = Listener(sub, tier="free")
    assert stranger.error("stream", id=third) == 50
    assert stranger.error("scrobble", id=third) == 50
    assert stranger.error("getCoverArt", id=third) == 50
    assert impressions(sub, spot["id"]) == before + 2

    # past its adToken's 24 hours an ad id is gone
    stale = ad_ids[3]
    age(sub, stale, 25)
    assert free.error("stream", id=stale) == 70
    assert free.error("scrobble", id=stale) == 70
    assert impressions(sub, spot["id"]) == before + 2


def test_paying_tiers_get_no_ads(sub: Server, spot: dict[str, Any]) -> None:
    for tier in ("plus", "premium"):
        paying = Listener(sub, tier=tier)
        station = a_station(paying)
        for _ in range(4):
            assert shape(opened(paying, station)) == "TTTT"


@pytest.mark.sqlite_only  # the edge's answers; the ads' storage runs on both above
def test_junk_ad_ids_answer_errors_never_a_500(sub: Server, spot: dict[str, Any]) -> None:
    free = Listener(sub, tier="free")
    junk = [
        "AD:",
        "AD:xyz",
        "AD:../../etc/passwd",
        "AD:..%2F..%2Fetc%2Fpasswd",
        "AD:" + "A" * 24,  # well-formed, issued to no one
        f"AD:{spot['id']}",  # the campaign's pandoraId is no song
        "AD:" + "x" * 5000,
        "AD:" + "A" * 24 + "\n",
        "ad:" + "A" * 24,
    ]
    for method in ("stream", "download", "scrobble", "getCoverArt", "getSong", "star"):
        for value in junk:
            assert free.error(method, id=value) == 70, (method, value)
            answer = free.get(method, id=value)
            assert answer.status_code == 200 and answer.headers["content-type"].startswith(
                "text/xml"
            ), (method, value, answer.text[:200])
            error = ET.fromstring(answer.content).find(f"{NS}error")
            assert error is not None and error.get("code") == "70", (method, value, answer.text)
        body = {**free.credentials, "f": "json", "id": "AD:" + "A" * 200_000}
        url = f"{sub.url}/rest/{method}"
        posted = httpx.post(url, data=body, timeout=60).json()["subsonic-response"]
        assert posted["status"] == "failed" and posted["error"]["code"] == 70, posted
    # an ad of a campaign the operator disabled no longer plays (last: the module's only campaign)
    station = a_station(free)
    ad = next(e for e in opened(free, station) if is_ad(e))
    done = sub.admin("ads", "disable", str(spot["id"]))
    assert done.returncode == 0, done.stderr
    assert free.error("stream", id=ad["id"]) == 70
    assert free.error("download", id=ad["id"]) == 70
    assert shape(opened(free, station)) == "TTTT"  # no campaign left to place
