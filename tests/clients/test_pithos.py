"""Replay of Pithos, the GNOME Pandora player, against Airwave's tuner interface.

Repository https://github.com/pithos/pithos, commit 0c5ca80 (release 1.6.2, 2024-03-03):
`pithos/pandora/pandora.py` (class `Pandora`: `json_call`, `connect`, `get_stations`, `search`,
the station and feedback calls; classes `Station`, `Song` and `SearchResult`, which read every
answer), `pithos/pandora/data.py` (the `android-generic` client keys) and, for the order of calls
and the 1001 handling, `pithos/pithos.py` (`worker_run`, `_pandora_connect_real`,
`process_stations`, `get_playlist`'s album art fetch) and `pithos/StationsDialog.py`.

This release is not run here (it needs GStreamer `playbin3` and a D-Bus Secret Service for the
password, and Debian ships the old 1.1.2, which `test_pithos_app.py` runs for real under Xvfb).
This module replays its protocol layer from its source, written anew here:
- `json_call` builds `proto + rpcUrl + query` by hand, the query in the order `partner_id`,
  `user_id`, `auth_token` (the user token, else the partner token, `quote_plus`-ed), `method`;
  the body is `json.dumps(args)` plus `syncTime` and `userAuthToken` (or `partnerAuthToken`),
  Blowfish-ECB with the encrypt key, the last block padded with NUL bytes (nothing added when
  aligned), lowercase hex; headers `User-agent: pithos` and `Content-type: text/plain`.
  auth.partnerLogin goes unencrypted.
- https for auth.partnerLogin, auth.userLogin, station.getPlaylist and user.getSettings, plain
  http for every other call, to the same host (the force-client setting's `rpcUrl`, the only way
  to point Pithos at another server; it holds the android keys here). So the server listens with
  TLS on 443 and plain HTTP on 80 (`--plain-port`) on a loopback address of its own; binding
  those needs root, which the CI runs as. TLS is verified (Pithos has no switch to turn it off)
  against a trustme CA.
- Any non-2xx answer is a `PandoraNetError` (the API code is lost); `stat: "fail"` needs `code`
  and `message`; 1001 makes the window reconnect (partnerLogin, userLogin, user.getStationList)
  and retry the call once.
- Answers are read with `d['key']` where Pithos does (a KeyError is the app breaking) and
  `.get` where it does.
"""

from __future__ import annotations

import json
import re
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus, urlsplit
from xml.dom import minidom

import httpx
import pytest
from conftest import Account, make_account, needs_low_ports, pithos_client
from Crypto.Cipher import Blowfish
from readers import ClientBroke, py
from support import Server

HOST = "127.0.0.21"  # this module's own loopback address (pydora has .19, pianobar .20)
CLIENT = pithos_client(HOST)  # the force-client GSettings key (a JSON dict)
HTTPS_METHODS = {"auth.partnerLogin", "auth.userLogin", "station.getPlaylist", "user.getSettings"}
# pandora.py's ApiError enum (codes outside it are "Undocumented Error Code")
API_ERRORS = {
    *range(16),
    *range(1000, 1016),
    1018, 1020, 1023, 1024, 1025, 1026, 1034, 1035, 1036, 1037, 1039,
}  # fmt: skip
NAME_COMPARE = re.compile(r"[^A-Za-z0-9]")


pytestmark = needs_low_ports(HOST)


# --- pandora.py's errors --------------------------------------------------------------------


class PandoraError(ClientBroke):
    """`stat: "fail"`: an error dialog in the app (with the code's sub-message)."""

    def __init__(self, code: Any, message: Any) -> None:
        known = isinstance(code, int) and not isinstance(code, bool) and code in API_ERRORS
        super().__init__(
            f"Pandora error {code} ({'known' if known else 'UNKNOWN_ERROR'}): {message}"
        )
        self.code = code
        self.message = message


class PandoraAuthTokenInvalid(PandoraError):
    """1001: the window reconnects and retries the call once."""


class PandoraNetError(ClientBroke):
    """urllib's HTTPError (any non-2xx) or a network error: the API code is lost."""


# --- the models ------------------------------------------------------------------------------


@dataclass
class Station:
    """`Station.__init__`: five keys required, isThumbprint and quickMixStationIds optional."""

    id: str
    token: str
    is_creator: bool
    is_quick_mix: bool
    is_thumbprint: bool
    name: str
    quick_mix_ids: list[str] | None = None
    use_quick_mix: bool = False

    @classmethod
    def read(cls, d: Any) -> Station:
        station = cls(
            id=py(d, "stationId"),
            token=py(d, "stationToken"),
            is_creator=not py(d, "isShared"),
            is_quick_mix=py(d, "isQuickMix"),
            is_thumbprint=_get(d, "isThumbprint", False),
            name=py(d, "stationName"),
        )
        if station.is_quick_mix:
            station.quick_mix_ids = _get(d, "quickMixStationIds", [])
        return station


@dataclass
class Song:
    """`Song.__init__` and its `audioUrl` property."""

    d: dict[str, Any]
    album: str
    artist: str
    track_token: str
    loved: bool
    station_id: str
    song_name: str
    detail_url: str
    explorer_url: str
    art_url: str
    track_length: Any
    track_gain: float
    audio_url_map: dict[str, Any]
    title: str = ""
    feedback_id: str | None = None
    rating: str | None = None

    @classmethod
    def read(cls, d: Any) -> Song:
        try:
            gain = float(_get(d, "trackGain", "0.0"))
        except (TypeError, ValueError) as exc:
            raise ClientBroke(f"Python: float(trackGain) raised {type(exc).__name__}") from None
        song = cls(
            d=d,
            album=py(d, "albumName"),
            artist=py(d, "artistName"),
            track_token=py(d, "trackToken"),
            loved=py(d, "songRating") == 1,
            station_id=py(d, "stationId"),
            song_name=py(d, "songName"),
            detail_url=py(d, "songDetailUrl"),
            explorer_url=py(d, "songExplorerUrl"),
            art_url=py(d, "albumArtUrl"),
            track_length=py(d, "trackLength"),
            track_gain=gain,
            audio_url_map=py(d, "audioUrlMap"),
        )
        song.rating = "love" if song.loved else None
        extra = _get(d, "additionalAudioUrl", [])
        if _len(extra) == 2:  # the two formats asked for: HTTP_32_AACPLUS, HTTP_128_MP3
            high = py(song.audio_url_map, "highQuality")
            if _int(py(high, "bitrate")) < 128:
                song.audio_url_map["mediumQuality"] = high
                song.audio_url_map["highQuality"] = {
                    "encoding": "mp3",
                    "bitrate": "128",
                    "audioUrl": py(extra, 1),
                }
            else:
                song.audio_url_map["lowQuality"] = {
                    "encoding": "aacplus",
                    "bitrate": "32",
                    "audioUrl": py(extra, 0),
                }
        return song

    def audio_url(self, quality: str = "highQuality") -> tuple[str, int]:
        """The URL GStreamer plays and the bitrate its buffer is sized by (`int(bitrate)`)."""
        chosen = self.audio_url_map.get(quality)
        if chosen is None:  # KeyError: the map's first entry
            chosen = next(iter(self.audio_url_map.values()))
        return py(chosen, "audioUrl"), _int(py(chosen, "bitrate"))


def _get(value: Any, key: str, default: Any) -> Any:
    if not isinstance(value, dict):
        raise ClientBroke(f"Python: {value!r}.get({key!r}) raised AttributeError")
    return value.get(key, default)


def _len(value: Any) -> int:
    try:
        return len(value)
    except TypeError:
        raise ClientBroke(f"Python: len({value!r}) raised TypeError") from None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ClientBroke(f"Python: int({value!r}) raised {type(exc).__name__}") from None


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ClientBroke(f"Python: iterating {where} raised TypeError on {value!r}")
    return value


# --- pandora.py's Pandora --------------------------------------------------------------------


@dataclass
class Sent:
    method: str
    url: str
    body: dict[str, Any]
    status: int


@dataclass
class Pithos:
    """One `Pandora` object (with the window's calls around it), talking to the server."""

    ca_file: Path
    audio_quality: str = "highQuality"  # the GSettings default
    pandora_one: bool = False  # the GSettings key, flipped to match isSubscriber
    sent: list[Sent] = field(default_factory=list)
    stations: list[Station] = field(default_factory=list)
    quick_mix_ids: list[str] | None = None
    explorer_fetches: list[int] = field(default_factory=list)  # statuses of songExplorerUrl GETs

    def __post_init__(self) -> None:
        # build_opener: ssl.create_default_context() plus a CA (the system's store trusts the
        # server's real certificate; here the trustme CA stands in for it)
        self.tls = ssl.create_default_context(cafile=str(self.ca_file))
        self.http = httpx.Client(verify=self.tls, timeout=30)
        self.partner_id = self.user_id = self.partner_token = self.user_token = None
        self.time_offset: float | None = None
        self.is_subscriber = False

    def close(self) -> None:
        self.http.close()

    # json_call
    def call(self, method: str, args: dict[str, Any] | None = None) -> Any:
        args = dict(args or {})
        query = []
        if self.partner_id:
            query.append(f"partner_id={self.partner_id}")
        if self.user_id:
            query.append(f"user_id={self.user_id}")
        if self.user_token:
            query.append(f"auth_token={quote_plus(self.user_token)}")
        elif self.partner_token:
            query.append(f"auth_token={quote_plus(self.partner_token)}")
        query.append(f"method={method}")
        url = ("https" if method in HTTPS_METHODS else "http") + CLIENT["rpcUrl"] + "&".join(query)
        if self.time_offset:
            args["syncTime"] = int(time.time() + self.time_offset)
        if self.user_token:
            args["userAuthToken"] = self.user_token
        elif self.partner_token:
            args["partnerAuthToken"] = self.partner_token
        data = json.dumps(args).encode("utf-8")
        if method != "auth.partnerLogin":
            data = _encrypt(data, CLIENT["encryptKey"])
        response = self.http.post(
            url,
            content=data,
            headers={
                "User-agent": "pithos",
                "Content-type": "text/plain",
                "Accept-Encoding": "identity",  # urllib's
                "Connection": "close",
            },
        )
        self.sent.append(Sent(method, url, args, response.status_code))
        if not 200 <= response.status_code < 300:
            raise PandoraNetError(f"{method}: HTTP {response.status_code}: {response.text[:300]}")
        try:
            tree = json.loads(response.content.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ClientBroke(f"{method}: json.loads raised {type(exc).__name__}") from None
        if py(tree, "stat") == "fail":
            code, message = py(tree, "code"), py(tree, "message")
            if code == 1001 and isinstance(code, int):
                raise PandoraAuthTokenInvalid(code, message)
            raise PandoraError(code, message)
        return tree["result"] if "result" in tree else None

    def connect(self, username: str, password: str) -> None:
        self.partner_id = self.user_id = self.partner_token = self.user_token = None
        self.time_offset = None
        partner = self.call(
            "auth.partnerLogin",
            {
                "deviceModel": CLIENT["deviceModel"],
                "username": CLIENT["username"],
                "password": CLIENT["password"],
                "version": CLIENT["version"],
            },
        )
        self.partner_id = py(partner, "partnerId")
        self.partner_token = py(partner, "partnerAuthToken")
        clock = _decrypt(py(partner, "syncTime"), CLIENT["decryptKey"]).rstrip(b"\x08")[4:14]
        self.time_offset = _int(clock) - time.time()
        user = self.call(
            "auth.userLogin",
            {
                "username": username,
                "password": password,
                "loginType": "user",
                "returnIsSubscriber": True,
            },
        )
        self.user_id = py(user, "userId")
        self.user_token = py(user, "userAuthToken")
        self.is_subscriber = py(user, "isSubscriber")

    def log_in(self, username: str, password: str) -> None:
        """`_pandora_connect_real`: connect; when isSubscriber differs from the pandora-one
        setting, flip it and connect again (the forced client stays); then the stations."""
        self.connect(username, password)
        if self.pandora_one != self.is_subscriber:
            self.pandora_one = self.is_subscriber
            self.connect(username, password)
        self.get_stations()

    def get_stations(self) -> list[Station]:
        listed = py(self.call("user.getStationList", {"returnAllStations": True}), "stations")
        self.quick_mix_ids = None
        self.stations = [Station.read(d) for d in _list(listed, "stations")]
        for station in self.stations:
            if station.is_quick_mix:
                self.quick_mix_ids = station.quick_mix_ids
        if self.quick_mix_ids:
            for station in self.stations:
                station.use_quick_mix = station.id in self.quick_mix_ids
        return self.stations

    def station_by_id(self, station_id: str) -> Station | None:
        return next((s for s in self.stations if s.id == station_id), None)

    def get_playlist(self, station: Station) -> list[Song]:
        items = py(
            self.call(
                "station.getPlaylist",
                {
                    "stationToken": station.token,
                    "includeTrackLength": True,
                    "additionalAudioUrl": "HTTP_32_AACPLUS,HTTP_128_MP3",
                },
            ),
            "items",
        )
        songs = [Song.read(i) for i in _list(items, "items") if "songName" in i]
        for song in songs:
            song.title = self._title(song)
        return songs

    def _title(self, song: Song) -> str:
        """The explorer URL's last segment is the clean title; else Pithos GETs that URL and
        reads `<songExplorer songTitle=...>` (any failure: the songName)."""
        last = song.explorer_url.split("?")[0].split("/")[-1]
        if NAME_COMPARE.sub("", last).lower() == NAME_COMPARE.sub("", song.song_name).lower():
            return song.song_name
        try:
            page = httpx.get(song.explorer_url, verify=self.tls, timeout=30)
            self.explorer_fetches.append(page.status_code)
            page.raise_for_status()
            with minidom.parseString(page.content) as dom:
                title = dom.getElementsByTagName("songExplorer")[0].attributes["songTitle"].value
            return title.replace(f"{song.song_name}: ", "", 1)
        except Exception:  # noqa: BLE001 - Pithos swallows everything here
            return song.song_name

    def album_art(self, song: Song) -> bytes | None:
        """The window's get_album_art: `urlopen(artRadio)` when it is non-empty."""
        if not song.art_url:
            return None
        art = httpx.get(song.art_url, verify=self.tls, timeout=30)
        assert art.status_code == 200, f"album art {song.art_url}: HTTP {art.status_code}"
        return art.content

    # the song menu and buttons (Song.rate, set_tired, bookmark, bookmark_artist)
    def add_feedback(self, song: Song, rating: str) -> str:
        result = self.call(
            "station.addFeedback",
            {"trackToken": song.track_token, "isPositive": rating == "love"},
        )
        return py(result, "feedbackId")

    def rate(self, song: Song, rating: str | None) -> None:
        if song.rating == rating:
            return
        station = self.station_by_id(song.station_id)
        if station is None:  # `self.station.transformIfShared()` on None
            raise ClientBroke(f"AttributeError: no station {song.station_id!r} in the list")
        if not station.is_creator:
            self.call("station.transformSharedStation", {"stationToken": station.token})
            station.is_creator = True
        if rating is None:
            if not song.feedback_id:
                opposite = "ban" if song.rating == "love" else "love"
                song.feedback_id = self.add_feedback(song, opposite)
            self.call(
                "station.deleteFeedback",
                {"feedbackId": song.feedback_id, "stationToken": station.token},
            )
        else:
            song.feedback_id = self.add_feedback(song, rating)
        song.rating = rating

    def search(self, text: str) -> list[tuple[str, Any, str, Any]]:
        """(type, score, musicToken, name) of what the search dialog lists, best first."""
        found = self.call(
            "music.search",
            {"includeGenreStations": True, "includeNearMatches": True, "searchText": text},
        )
        rows = [
            ("artist", py(i, "score"), py(i, "musicToken"), py(i, "artistName"))
            for i in _list(py(found, "artists"), "artists")
            if py(i, "score") >= 80
        ]
        rows += [
            ("song", py(i, "score"), py(i, "musicToken"), (py(i, "songName"), py(i, "artistName")))
            for i in _list(py(found, "songs"), "songs")
            if py(i, "score") >= 80
        ]
        rows += [
            ("genre", py(i, "score"), py(i, "musicToken"), py(i, "stationName"))
            for i in _list(py(found, "genreStations"), "genreStations")
        ]
        rows.sort(key=lambda r: r[1], reverse=True)
        return rows

    def station_added(self, found: Any) -> Station:
        """add_station_by_*: the answer is read as a station; a new one joins the list."""
        station = Station.read(found)
        if self.station_by_id(station.id) is None:
            self.stations.append(station)
        return station

    def save_quick_mix(self) -> None:
        chosen = [s.id for s in self.stations if s.use_quick_mix]
        self.call("user.setQuickMix", {"quickMixStationIds": chosen})

    def explicit_content_filter_state(self) -> tuple[Any, Any]:
        settings = self.call("user.getSettings")
        return (
            _get(settings, "isExplicitContentFilterEnabled", False),
            _get(settings, "isExplicitContentFilterPINProtected", False),
        )

    def worker_run(self, username: str, password: str, fn: Any, *args: Any) -> Any:
        """worker_run's errback: 1001 reconnects (log_in) and runs the call once more."""
        try:
            return fn(*args)
        except PandoraAuthTokenInvalid:
            self.log_in(username, password)
            return fn(*args)


def _encrypt(plain: bytes, key: str) -> bytes:
    """pandora_encrypt: 8-byte chunks, the last one NUL-padded, lowercase hex."""
    padded = plain + b"\0" * (-len(plain) % 8)
    return Blowfish.new(key.encode(), Blowfish.MODE_ECB).encrypt(padded).hex().encode()


def _decrypt(hex_text: Any, key: str) -> bytes:
    if not isinstance(hex_text, str):
        raise ClientBroke(f"Python: {hex_text!r}.encode('utf-8') raised AttributeError")
    try:
        data = bytes.fromhex(hex_text)
    except ValueError:
        raise ClientBroke(f"codecs.decode(hex) failed on {hex_text!r}") from None
    data += b"\0" * (-len(data) % 8)
    return Blowfish.new(key.encode(), Blowfish.MODE_ECB).decrypt(data)


@pytest.fixture
def pithos(tuner: tuple[Server, Path]) -> Iterator[Pithos]:
    _server, ca_file = tuner
    client = Pithos(ca_file)
    try:
        yield client
    finally:
        client.close()


def _query(url: str) -> list[str]:
    return urlsplit(url).query.split("&")


# --- the replays -----------------------------------------------------------------------------


def test_wrong_password_is_code_1002_in_a_200(tuner: tuple[Server, Path], pithos: Pithos) -> None:
    server, _ = tuner
    account = make_account(server)
    with pytest.raises(PandoraError) as refused:
        pithos.connect(account.username, "not the password")
    assert refused.value.code == 1002  # "Invalid username or password."
    assert [(s.method, s.status) for s in pithos.sent] == [
        ("auth.partnerLogin", 200),
        ("auth.userLogin", 200),
    ]


def test_login_stations_play_rate_search_create_and_settings(
    tuner: tuple[Server, Path], pithos: Pithos
) -> None:
    server, _ = tuner
    account: Account = make_account(server)
    pithos.log_in(account.username, account.password)

    # the logins over TLS, with the query and body Pithos builds
    partner, user, listing = pithos.sent[:3]
    assert partner.url == f"https://{HOST}/services/json/?method=auth.partnerLogin"
    assert set(partner.body) == {"deviceModel", "username", "password", "version"}
    assert pithos.partner_id and pithos.user_id and pithos.user_token
    assert _query(user.url) == [
        f"partner_id={pithos.partner_id}",
        f"auth_token={quote_plus(pithos.partner_token or '')}",
        "method=auth.userLogin",
    ]
    assert user.url.startswith("https://") and "syncTime" in user.body
    assert pithos.is_subscriber is False  # a free listener: no second connect
    assert [s.method for s in pithos.sent] == [
        "auth.partnerLogin",
        "auth.userLogin",
        "user.getStationList",
    ]
    assert listing.url.startswith("http://") and _query(listing.url) == [
        f"partner_id={pithos.partner_id}",
        f"user_id={pithos.user_id}",
        f"auth_token={quote_plus(pithos.user_token)}",
        "method=user.getStationList",
    ]
    assert abs(listing.body["syncTime"] - time.time()) < 120

    # process_stations selects the first station and plays it at once (the stations dialog
    # opens only for an empty list): for a new listener that is the empty QuickMix, and any
    # refusal must be a clean `stat: "fail"` with a known code (an error dialog, not a crash)
    assert pithos.stations and pithos.stations[0].is_quick_mix
    try:
        pithos.get_playlist(pithos.stations[0])
    except PandoraError as dialog:
        assert isinstance(dialog.code, int) and dialog.code in API_ERRORS

    # the stations dialog: search, then create from the best result
    found = pithos.search("glass harbor")
    assert found and found[0][0] == "artist" and found[0][3] == "Glass Harbor"
    station = pithos.station_added(
        pithos.call("station.createStation", {"musicToken": found[0][2]})
    )
    assert station.name and station in pithos.stations and station.is_creator

    # station_changed -> get_playlist over TLS; album art fetched; the chosen URL played
    songs = pithos.get_playlist(station)
    assert pithos.sent[-1].url.startswith("https://")
    assert len(songs) >= 3
    for song in songs:
        assert song.title == song.song_name
        assert song.track_length and song.audio_url_map
    # the explorer URL ends in the title's slug, so Pithos takes songName without fetching it;
    # fetched (as for a title the slug cannot spell), it is the record's XML document
    assert pithos.explorer_fetches == []
    explorer = httpx.get(songs[0].explorer_url, verify=pithos.tls, timeout=30)
    assert explorer.status_code == 200 and explorer.headers["content-type"].startswith("text/xml")
    with minidom.parseString(explorer.content) as dom:
        named = dom.getElementsByTagName("songExplorer")[0].attributes
        assert named["songTitle"].value == songs[0].song_name
        assert named["artistName"].value == songs[0].artist
    for song in songs:
        art = pithos.album_art(song)
        assert art is None or len(art) > 100
    url, bitrate = songs[0].audio_url(pithos.audio_quality)
    assert bitrate > 0
    audio = httpx.get(url, verify=pithos.tls, timeout=60)  # playbin3's souphttpsrc
    assert audio.status_code == 200 and len(audio.content) > 1000

    # love, then unrate (deleteFeedback with the feedbackId addFeedback gave)
    first = songs[0]
    pithos.rate(first, "love")
    assert first.feedback_id
    assert "stationToken" not in pithos.sent[-1].body
    pithos.rate(first, None)
    assert pithos.sent[-1].body["feedbackId"] == first.feedback_id
    assert pithos.sent[-1].body["stationToken"] == station.token
    # ban: addFeedback isPositive false
    pithos.rate(songs[1], "ban")
    assert pithos.sent[-1].body["isPositive"] is False
    # tired, bookmarks
    pithos.call("user.sleepSong", {"trackToken": songs[2].track_token})
    pithos.call("bookmark.addSongBookmark", {"trackToken": songs[2].track_token})
    pithos.call("bookmark.addArtistBookmark", {"trackToken": songs[2].track_token})
    assert all(s.url.startswith("http://") and s.status == 200 for s in pithos.sent[-6:])

    # the thumbs and bookmarks are the REST API's: one core, two edges
    api = server.client(verify=False)
    api.login(account.username, account.password)
    down = api.ok("v1/station/getStationFeedback", {"stationId": station.id, "positive": False})
    assert [f["songTitle"] for f in down["feedback"]] == [songs[1].song_name]
    up = api.ok("v1/station/getStationFeedback", {"stationId": station.id, "positive": True})
    assert up["feedback"] == []  # loved, then unrated
    marks = api.ok("v1/bookmark/getBookmarks", {})
    assert songs[2].song_name in {b["songTitle"] for b in marks["tracks"]}

    # the song menu: "Create song station"; then rename, QuickMix and delete
    made = pithos.station_added(
        pithos.call(
            "station.createStation", {"trackToken": songs[2].track_token, "musicType": "song"}
        )
    )
    assert made.id != station.id
    pithos.call("station.renameStation", {"stationToken": made.token, "stationName": "Evening"})
    made.name = "Evening"
    station.use_quick_mix = made.use_quick_mix = True
    pithos.save_quick_mix()
    listed = {s.id: s for s in pithos.get_stations()}
    assert listed[made.id].name == "Evening"
    assert listed[made.id].use_quick_mix and listed[station.id].use_quick_mix
    # QuickMix plays; a song's stationId names a listed station (Song.station), so it rates
    quick_mix = next(s for s in pithos.stations if s.is_quick_mix)
    mixed = pithos.get_playlist(quick_mix)
    assert mixed and all(pithos.station_by_id(s.station_id) for s in mixed)
    pithos.rate(mixed[0], "love")
    pithos.call("station.deleteStation", {"stationToken": made.token})
    assert made.id not in {s.id for s in pithos.get_stations()}

    # the preferences dialog: the explicit filter (getSettings over TLS)
    assert pithos.explicit_content_filter_state() == (False, False)
    assert pithos.sent[-1].url.startswith("https://")
    pithos.call("user.setExplicitContentFilter", {"isExplicitContentFilterEnabled": True})
    assert pithos.sent[-1].url.startswith("http://")
    assert pithos.get_playlist(pithos.station_by_id(station.id) or station)  # a new playlist
    assert pithos.explicit_content_filter_state() == (True, False)
    pithos.call("user.setExplicitContentFilter", {"isExplicitContentFilterEnabled": False})
    assert pithos.explicit_content_filter_state() == (False, False)


def test_errors_are_http_200_with_stat_fail(tuner: tuple[Server, Path], pithos: Pithos) -> None:
    server, _ = tuner
    account = make_account(server)
    pithos.log_in(account.username, account.password)
    with pytest.raises(PandoraError) as refused:
        pithos.call("station.deleteStation", {"stationToken": "999999"})
    assert pithos.sent[-1].status == 200
    assert isinstance(refused.value.code, int) and refused.value.code in API_ERRORS
    assert isinstance(refused.value.message, str) and refused.value.message


def test_logged_out_session_answers_1001_then_relogin_and_retry(
    tuner: tuple[Server, Path], pithos: Pithos
) -> None:
    server, _ = tuner
    account = make_account(server)
    pithos.log_in(account.username, account.password)
    genre = next(r for r in pithos.search("rock") if r[0] == "genre")
    station = pithos.station_added(pithos.call("station.createStation", {"musicToken": genre[2]}))
    songs = pithos.get_playlist(station)
    old_token = pithos.user_token

    api = server.client(verify=False)  # the listener signs out everywhere from the web
    api.login(account.username, account.password)
    api.ok("v1/auth/logoutAll", {"currentPassword": account.password})

    # the song menu's bookmark (plain http) and the next playlist (https): each 1001, then the
    # window reconnects (partnerLogin, userLogin, getStationList) and runs the call again
    before = len(pithos.sent)
    pithos.worker_run(
        account.username,
        account.password,
        pithos.call,
        "bookmark.addSongBookmark",
        {"trackToken": songs[0].track_token},
    )
    assert [(s.method, s.status) for s in pithos.sent[before:]] == [
        ("bookmark.addSongBookmark", 200),
        ("auth.partnerLogin", 200),
        ("auth.userLogin", 200),
        ("user.getStationList", 200),
        ("bookmark.addSongBookmark", 200),
    ]
    assert pithos.user_token != old_token

    api.login(account.username, account.password)
    api.ok("v1/auth/logoutAll", {"currentPassword": account.password})
    again = pithos.worker_run(
        account.username,
        account.password,
        pithos.get_playlist,
        pithos.station_by_id(station.id),
    )
    assert again and [s.method for s in pithos.sent[-5:]] == [
        "station.getPlaylist",
        "auth.partnerLogin",
        "auth.userLogin",
        "user.getStationList",
        "station.getPlaylist",
    ]


def test_a_subscriber_logs_in_twice(tuner: tuple[Server, Path], pithos: Pithos) -> None:
    """isSubscriber true flips the pandora-one setting, which connects again."""
    server, _ = tuner
    account = make_account(server, "premium")
    pithos.log_in(account.username, account.password)
    assert pithos.is_subscriber is True and pithos.pandora_one is True
    assert [s.method for s in pithos.sent] == [
        "auth.partnerLogin",
        "auth.userLogin",
        "auth.partnerLogin",
        "auth.userLogin",
        "user.getStationList",
    ]
