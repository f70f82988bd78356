"""Ads over HTTP and the CLI: campaigns, getAdList, ad items in free fragments at the configured
interval,
impressions once per token, broken reports, the date window and the token errors."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import audiokit
import httpx
import media
import pytest
from support import Api, Server, assert_error, unique, wait_indexed

INTERVAL_MINUTES = (
    0.05  # 3 s of music between ads: with the 2-second demo tracks, an ad after every 2 tracks
)
AD_ITEM_FIELDS = {
    "trackToken",
    "adToken",
    "trackType",
    "songTitle",
    "artistName",
    "trackLength",
    "audioURL",
    "audioEncoding",
    "clickThroughUrl",
    "albumArt",
    "allowSkip",
    "allowFeedback",
    "pandoraId",
}


@pytest.fixture(scope="module")
def radio(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    server = start_server(
        "--open-registration",
        "--library",
        str(small_demo_library),
        env={
            "AIRWAVE_AD_INTERVAL_MINUTES": str(INTERVAL_MINUTES),
            "AIRWAVE_FRAGMENT_LIMIT": "100000",
            "AIRWAVE_ENGINE_SEED": "5",
            "AIRWAVE_AD_BROKEN_THRESHOLD": "3",
            "COLUMNS": "240",
        },
    )
    server.campaigns = []  # type: ignore[attr-defined]  # ids this module added, to keep one active at a time
    wait_indexed(server)
    return server


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ad-files")
    art = root / "art.png"
    art.write_bytes(media.image_bytes((30, 160, 90), 400, "PNG"))
    text = root / "notes.mp3"
    text.write_text("this is not audio at all\n")
    return {
        "mp3": media.encode(root / "jingle.mp3", seconds=1.5, freq=660.0),
        "flac": audiokit.write_audio(root / "spot.flac", audiokit.music(2.5, seed=3)),
        "art": art,
        "text": text,
    }


def cli_ok(server: Server, *args: str) -> str:
    # tables are read as a terminal of COLUMNS width shows them: their own process
    tabular = args[:2] in (("ads", "list"), ("ads", "report"))
    done = server.cli(*args) if tabular else server.admin(*args)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def add_ad(server: Server, file: Path, title: str, *extra: str, alone: bool = True) -> int:
    """Add a campaign; with alone=True every campaign this module added before is disabled."""
    text = cli_ok(
        server,
        "ads",
        "add",
        str(file),
        "--title",
        title,
        "--click-url",
        "https://example.org/buy",
        *extra,
    )
    match = re.search(r"added ad campaign (\d+)", text)
    assert match, text
    campaign = int(match.group(1))
    if alone:
        for other in server.campaigns:  # type: ignore[attr-defined]
            cli_ok(server, "ads", "disable", str(other))
        server.campaigns.clear()  # type: ignore[attr-defined]
    server.campaigns.append(campaign)  # type: ignore[attr-defined]
    return campaign


def report(server: Server, *extra: str) -> list[dict[str, Any]]:
    return json.loads(cli_ok(server, "ads", "report", "--format", "json", *extra))


def impressions(server: Server, campaign: int) -> int:
    return sum(r["impressions"] for r in report(server) if r["campaign_id"] == campaign)


def listener(server: Server, tier: str = "free") -> Api:
    api = server.client()
    name = unique()
    api.register(name)
    if tier != "free":
        assert server.admin("user", "tier", name, tier).returncode == 0
    return api


def a_station(api: Api) -> str:
    artist = api.ok("v1/search/fullSearch", {"query": "a", "types": ["AR"]})["items"][0]
    return api.ok("v1/station/createStation", {"musicId": artist["musicId"]})["stationId"]


def fragment(api: Api, station: str, **extra: Any) -> list[dict[str, Any]]:
    return api.ok("v1/playlist/getFragment", {"stationId": station, **extra})["tracks"]


def one_ad(api: Api, **body: Any) -> dict[str, Any]:
    got = api.ok("v1/ad/getAdList", body)["ads"]
    assert len(got) == 1, got
    return got[0]


# ---------------------------------------------------------------- the CLI


@pytest.mark.sqlite_only  # the CLI's shape; campaign storage runs on both in the tests below
def test_cli_add_list_disable_report_and_errors(radio: Server, files: dict[str, Path]) -> None:
    campaign = add_ad(
        radio,
        files["flac"],
        "Spring sale",
        "--art",
        str(files["art"]),
        "--weight",
        "3",
        "--start",
        "2020-01-01",
        "--end",
        "2999-12-31",
    )
    copies = list((radio.backend.data_dir / "ads").glob("*.flac"))
    assert copies and all(c.read_bytes() == files["flac"].read_bytes() for c in copies)
    listing = cli_ok(radio, "ads", "list")
    line = next(row for row in listing.splitlines() if "Spring sale" in row)
    assert str(campaign) in line and "2.5 s" in line and "active" in line and "2020-01-01" in line
    assert "3000-01-01" in line  # --end names the last day: the window runs to its end

    for args, message in [
        (
            [
                "ads",
                "add",
                str(files["text"].with_name("missing.mp3")),
                "--title",
                "x",
                "--click-url",
                "https://a.b",
            ],
            "no such readable file",
        ),
        (
            ["ads", "add", str(files["text"]), "--title", "x", "--click-url", "https://a.b"],
            "notes.mp3",
        ),
        (
            [
                "ads",
                "add",
                str(files["mp3"]),
                "--title",
                "x",
                "--click-url",
                "https://a.b",
                "--start",
                "soon",
            ],
            "not a date",
        ),
        (
            [
                "ads",
                "add",
                str(files["mp3"]),
                "--title",
                "x",
                "--click-url",
                "https://a.b",
                "--start",
                "2030-01-02",
                "--end",
                "2030-01-01",
            ],
            "after its start",
        ),
        (
            ["ads", "add", str(files["mp3"]), "--title", "x", "--click-url", "ftp://a.b"],
            "not an http(s) URL",
        ),
        (
            [
                "ads",
                "add",
                str(files["mp3"]),
                "--title",
                "x",
                "--click-url",
                "https://a.b",
                "--art",
                str(files["mp3"]),
            ],
            "not a readable image",
        ),
        (
            [
                "ads",
                "add",
                str(files["mp3"]),
                "--title",
                "x",
                "--click-url",
                "https://a.b",
                "--weight",
                "0",
            ],
            "weight",
        ),
        (["ads", "disable", "999999"], "no ad campaign with id 999999"),
        (["ads", "report", "--format", "xml"], "--format"),
        (["ads", "report", "--since", "yesterday"], "not a day"),
    ]:
        done = radio.admin(*args)
        assert done.returncode != 0, args
        assert message in done.stderr, (args, done.stderr)
    assert "x" not in [
        r.split()[1] for r in cli_ok(radio, "ads", "list").splitlines() if r[:1].isdigit()
    ]

    cli_ok(radio, "ads", "disable", str(campaign))
    line = next(row for row in cli_ok(radio, "ads", "list").splitlines() if "Spring sale" in row)
    assert "disabled" in line
    assert listener(radio).ok("v1/ad/getAdList", {})["ads"] == []

    # the report: impressions per campaign and day, as table, csv and json
    shown = add_ad(radio, files["mp3"], "Report me")
    api = listener(radio)
    api.ok(
        "v1/ad/registerImpression", {"adTokens": [one_ad(api)["adToken"], one_ad(api)["adToken"]]}
    )
    rows = [r for r in report(radio) if r["campaign_id"] == shown]
    assert rows and sum(r["impressions"] for r in rows) == 2 and rows[-1]["title"] == "Report me"
    tomorrow = (date.fromisoformat(rows[-1]["day"]) + timedelta(days=1)).isoformat()
    assert [r for r in report(radio, "--since", tomorrow) if r["campaign_id"] == shown] == []
    assert [
        r for r in report(radio, "--until", rows[-1]["day"]) if r["campaign_id"] == shown
    ] == rows
    csv_text = cli_ok(radio, "ads", "report", "--format", "csv")
    assert csv_text.splitlines()[0] == "day,campaign_id,title,impressions"
    assert f"{rows[-1]['day']},{shown},Report me,2" in csv_text
    assert "Report me" in cli_ok(radio, "ads", "report")


# ---------------------------------------------------------------- getAdList and ad audio


@pytest.mark.sqlite_only  # rules over the wire; impressions and broken ads run on both
def test_get_ad_list_for_free_listeners_only_and_ad_audio(
    radio: Server, files: dict[str, Path]
) -> None:
    campaign = add_ad(radio, files["flac"], "Listen to this", "--art", str(files["art"]))
    free, plus, premium = listener(radio), listener(radio, "plus"), listener(radio, "premium")
    assert plus.ok("v1/ad/getAdList", {}) == {"ads": []}
    assert premium.ok("v1/ad/getAdList", {}) == {"ads": []}

    ad = one_ad(free, audioFormat="original")
    assert set(ad) == {
        "adToken",
        "title",
        "audioURL",
        "audioEncoding",
        "art",
        "clickThroughUrl",
        "trackLength",
    }
    assert ad["title"] == "Listen to this" and ad["clickThroughUrl"] == "https://example.org/buy"
    assert ad["trackLength"] == 2 or ad["trackLength"] == 3
    assert {a["size"] for a in ad["art"]} == {90, 130, 500, 640, 1080}
    picture = httpx.get(ad["art"][0]["url"])
    assert picture.status_code == 200 and picture.headers["content-type"] == "image/jpeg"
    assert ad["audioEncoding"] == "original" and ad["audioURL"].startswith(radio.url + "/audio/")
    whole = httpx.get(ad["audioURL"])
    assert whole.status_code == 200 and whole.content == files["flac"].read_bytes()
    part = httpx.get(ad["audioURL"], headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and part.content == files["flac"].read_bytes()[100:200]
    assert part.headers["content-range"].startswith("bytes 100-199/")

    mp3 = one_ad(free, audioFormat="mp3")
    assert mp3["audioEncoding"] == "mp3" and mp3["adToken"] != ad["adToken"]
    body = httpx.get(mp3["audioURL"], timeout=60)
    assert body.status_code == 200 and body.headers["content-type"] == "audio/mpeg"
    decoded = audiokit.decode(body.content)
    assert decoded.codec == "mp3" and abs(decoded.seconds - 2.5) < 0.2

    station = a_station(free)
    assert one_ad(free, stationId=station)["title"] == "Listen to this"
    assert_error(
        free.call("v1/ad/getAdList", {"stationId": "999999"}), 404, "STATION_DOES_NOT_EXIST"
    )
    assert_error(
        listener(radio).call("v1/ad/getAdList", {"stationId": station}), 403, "USER_NOT_AUTHORIZED"
    )

    # a disabled campaign's issued URLs stop delivering
    cli_ok(radio, "ads", "disable", str(campaign))
    assert_error(httpx.get(ad["audioURL"]), 404, "NOT_FOUND")
    radio.campaigns.remove(campaign)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- ads in fragments


def spoken(tracks: list[dict[str, Any]]) -> list[str]:
    return ["A" if t["trackType"] == "Ad" else "T" for t in tracks]


@pytest.mark.sqlite_only  # rules over the wire; impressions and broken ads run on both
def test_free_fragments_carry_ads_at_the_interval_plus_never(
    radio: Server, files: dict[str, Path]
) -> None:
    campaign = add_ad(radio, files["mp3"], "Fragment ad", "--art", str(files["art"]))
    free = listener(radio)
    station = a_station(free)
    items: list[dict[str, Any]] = []
    for _ in range(6):
        items += fragment(free, station, audioFormat="mp3")
    order = spoken(items)
    assert order.count("T") >= 20 and order.count("A") >= 8, order
    assert "AA" not in "".join(order)
    interval = INTERVAL_MINUTES * 60
    music = 0
    for item in (
        items
    ):  # each ad follows the track at which the music since the last ad reached the interval
        if item["trackType"] == "Ad":
            assert music >= interval, order
            music = 0
        else:
            before = music
            music += item["trackLength"]
            assert before < interval, order  # an ad was due before this track and did not come
    ad = next(i for i in items if i["trackType"] == "Ad")
    assert AD_ITEM_FIELDS <= set(ad)
    assert ad["adToken"] == ad["trackToken"] and ad["pandoraId"] == f"AD:{campaign}"
    assert ad["songTitle"] == "Fragment ad" and ad["artistName"] == "Advertisement"
    assert (
        ad["allowSkip"] is False
        and ad["allowFeedback"] is False
        and ad["allowTiredOfTrack"] is False
    )
    assert ad["clickThroughUrl"] == "https://example.org/buy" and ad["trackLength"] in (1, 2)
    assert ad["albumArt"] and ad["trackKey"]["trackType"] == "Ad" and ad["stationId"] == station
    assert ad["audioEncoding"] == "mp3"
    got = httpx.get(ad["audioURL"], timeout=60)
    assert got.status_code == 200 and audiokit.decode(got.content).codec == "mp3"
    tracks = [i for i in items if i["trackType"] == "Track"]
    assert all("adToken" not in t and "clickThroughUrl" not in t for t in tracks)
    # ads are not spins: four music tracks per fragment whatever the ads
    assert len(tracks) == 24

    for tier in ("plus", "premium"):
        paying = listener(radio, tier)
        paid_station = a_station(paying)
        for _ in range(4):
            assert set(spoken(fragment(paying, paid_station))) == {"T"}


@pytest.mark.sqlite_only  # rules over the wire; impressions and broken ads run on both
def test_no_ads_without_an_active_campaign_and_owed_ad_opens_the_next_fragment(
    radio: Server, files: dict[str, Path]
) -> None:
    for other in radio.campaigns:  # type: ignore[attr-defined]
        cli_ok(radio, "ads", "disable", str(other))
    radio.campaigns.clear()  # type: ignore[attr-defined]
    free = listener(radio)
    station = a_station(free)
    assert set(spoken(fragment(free, station))) == {"T"}  # 8 s of music, no campaign: no ad
    add_ad(radio, files["mp3"], "Late ad")
    first = fragment(free, station)
    assert spoken(first) == ["A", "T", "T", "A", "T", "T", "A"]


@pytest.mark.sqlite_only  # rules over the wire; impressions and broken ads run on both
def test_date_window(radio: Server, files: dict[str, Path]) -> None:
    today = date.today()
    later = add_ad(
        radio, files["mp3"], "Next week", "--start", (today + timedelta(days=7)).isoformat()
    )
    over = add_ad(
        radio,
        files["mp3"],
        "Last year",
        "--end",
        (today - timedelta(days=365)).isoformat(),
        alone=False,
    )
    free = listener(radio)
    assert free.ok("v1/ad/getAdList", {})["ads"] == []
    assert set(spoken(fragment(free, a_station(free)))) == {"T"}
    listing = cli_ok(radio, "ads", "list")
    assert "scheduled" in next(r for r in listing.splitlines() if "Next week" in r)
    assert "ended" in next(r for r in listing.splitlines() if "Last year" in r)
    now = add_ad(
        radio,
        files["mp3"],
        "This week",
        "--start",
        (today - timedelta(days=1)).isoformat(),
        "--end",
        (today + timedelta(days=1)).isoformat(),
        alone=False,
    )
    assert one_ad(free)["title"] == "This week"
    assert later != now != over


# ---------------------------------------------------------------- impressions, broken reports,
# tokens


def test_impressions_are_counted_once_per_token(radio: Server, files: dict[str, Path]) -> None:
    campaign = add_ad(radio, files["mp3"], "Count me")
    api = listener(radio)
    first, second = one_ad(api)["adToken"], one_ad(api)["adToken"]
    assert api.ok("v1/ad/registerImpression", {"adTokens": [first]}) == {}
    assert api.ok("v1/ad/registerImpression", {"adTokens": [first, first]}) == {}
    assert impressions(radio, campaign) == 1
    api.ok("v1/ad/registerImpression", {"adTokens": [second, first]})
    assert impressions(radio, campaign) == 2

    # a fragment ad's receipt URL counts like registerImpression, once; its skip URL counts nothing
    station = a_station(api)
    ads = [t for t in fragment(api, station) if t["trackType"] == "Ad"]
    assert ads
    skipped = httpx.post(ads[0]["audioSkipUrl"])
    assert skipped.status_code == 200 and skipped.json()["recorded"] is False
    assert impressions(radio, campaign) == 2
    receipt = httpx.post(ads[0]["audioReceiptURL"])
    assert receipt.status_code == 200 and receipt.json()["recorded"] is True
    assert httpx.post(ads[0]["audioReceiptURL"]).json()["recorded"] is False
    api.ok("v1/ad/registerImpression", {"adTokens": [ads[0]["adToken"]]})
    assert impressions(radio, campaign) == 3
    cells = [
        c.strip()
        for c in next(r for r in cli_ok(radio, "ads", "list").splitlines() if "Count me" in r)
        .strip("│ ")
        .split("│")
    ]
    assert cells[0] == str(campaign) and cells[-1] == "3"  # the list's impressions column


@pytest.mark.sqlite_only  # rules over the wire; impressions and broken ads run on both
def test_ad_token_errors(radio: Server, files: dict[str, Path]) -> None:
    campaign = add_ad(radio, files["mp3"], "Tokens")
    owner, other = listener(radio), listener(radio)
    token = one_ad(owner)["adToken"]
    assert_error(
        owner.call("v1/ad/registerImpression", {"adTokens": ["made-up"]}), 404, "NOT_FOUND"
    )
    assert_error(
        owner.call("v1/ad/registerImpression", {"adTokens": [token, "made-up"]}), 404, "NOT_FOUND"
    )
    assert impressions(radio, campaign) == 0  # nothing of a refused list is counted
    assert_error(owner.call("v1/ad/registerImpression", {"adTokens": []}), 400, "INVALID_REQUEST")
    assert_error(
        owner.call("v1/ad/registerImpression", {"adTokens": token}), 400, "INVALID_REQUEST"
    )
    assert_error(
        other.call("v1/ad/registerImpression", {"adTokens": [token]}), 403, "USER_NOT_AUTHORIZED"
    )
    assert_error(other.call("v1/ad/brokenAd", {"adToken": token}), 403, "USER_NOT_AUTHORIZED")
    assert_error(owner.call("v1/ad/brokenAd", {"adToken": "made-up"}), 404, "NOT_FOUND")
    assert_error(owner.call("v1/ad/brokenAd", {}), 400, "INVALID_REQUEST")
    assert_error(radio.client().call("v1/ad/getAdList", {}), 401, "AUTH_INVALID_TOKEN")

    # an adToken where a trackToken belongs: a clean refusal, never a crash
    station = a_station(owner)
    in_fragment = next(t for t in fragment(owner, station) if t["trackType"] == "Ad")["trackToken"]
    for bad in (token, in_fragment):
        for path, body in [
            ("v1/station/trackStarted", {"trackToken": bad}),
            ("v1/station/addFeedback", {"trackToken": bad, "isPositive": True}),
            ("v1/station/deleteFeedback", {"trackToken": bad}),
            ("v1/listener/addTiredSong", {"trackToken": bad}),
        ]:
            assert_error(owner.call(path, body), 403, "CALL_NOT_ALLOWED")
            assert_error(other.call(path, body), 403, "USER_NOT_AUTHORIZED")
    # audio URLs of ads are signed like tracks' ones
    url = one_ad(owner)["audioURL"]
    assert_error(
        httpx.get(url[:-2] + ("AA" if not url.endswith("AA") else "BB")), 403, "USER_NOT_AUTHORIZED"
    )


def test_broken_ads_stop_being_served_after_the_threshold(
    radio: Server, files: dict[str, Path]
) -> None:
    campaign = add_ad(radio, files["mp3"], "Broken one")
    reporters = [listener(radio) for _ in range(3)]
    tokens = [one_ad(api)["adToken"] for api in reporters]
    for _ in range(3):  # one token reported many times counts once
        assert reporters[0].ok("v1/ad/brokenAd", {"adToken": tokens[0]}) == {}
    reporters[1].ok("v1/ad/brokenAd", {"adToken": tokens[1]})
    assert one_ad(reporters[2])["title"] == "Broken one"  # 2 of 3 reports: still served
    line = next(r for r in cli_ok(radio, "ads", "list").splitlines() if "Broken one" in r)
    assert "active" in line
    reporters[2].ok("v1/ad/brokenAd", {"adToken": tokens[2]})
    assert reporters[2].ok("v1/ad/getAdList", {})["ads"] == []
    station = a_station(reporters[2])
    assert set(spoken(fragment(reporters[2], station))) == {"T"}
    line = next(r for r in cli_ok(radio, "ads", "list").splitlines() if "Broken one" in r)
    assert "broken" in line and str(campaign) in line
