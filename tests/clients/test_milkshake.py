"""Replay of Milkshake, the macOS Pandora client in Swift by Dean Liu.

Repository: github.com/skiptomyliu/milkshake, HEAD ece3fb982a5fbc368989ee25378400c976d2f9c5
(2022-08-28). Files followed: `Milkshake/API.swift` (every request), `Milkshake/constants.swift`
(URLs, tuner partner keys), `Milkshake/Crypt.m` (Blowfish of the tuner login),
`Milkshake/LoginViewController.swift`, `Milkshake/AppDelegate.swift` (`handleSuccessLogin`),
`Milkshake/MainViewController.swift` (search, create station, shuffle, album, `playStation`),
`Milkshake/Callback.swift`, `Milkshake/Util.swift` (the parsers: `parseStationSearchIntoItems`,
`parseStationIntoItems`, `parseSearchIntoItems`, `parseCreateStation`,
`parseAlbumIntoTracks`), `Milkshake/Radio.swift` (`playStation`, `playNext`, thumbs),
`Milkshake/SearchTableCellView.swift` (thumb and shuffle buttons, and what drawing a row
force-unwraps), `Milkshake/DJ.swift` (on-demand play), `Milkshake/Music.swift` (`playAudio`: an
`AVURLAsset` on the audioURL), `Milkshake/MenuViewController.swift` (Premium's PLAYLISTS and
ARTISTS menus), `Milkshake/NowPlayingViewController.swift` (the artist and album links),
`Milkshake/ResultsViewController.swift`, `Milkshake/ArtTableCellView.swift` (an artist page's
header) and `Milkshake/MusicItem.swift` (`hasInteractive` defaults to true).
The REST sign-in follows the same repository at d9216eb (2019-04-07, the last release whose
login screen called `API.auth`, i.e. `v1/auth/login`).

How it talks (`API.request`): Alamofire, POST, JSON body (`JSONEncoding.default`, i.e.
JSONSerialization, which writes `/` as `\\/`), headers `Content-Type: application/json`,
`Accept: application/json`, a Firefox User-Agent, `X-CsrfToken: 0123456789abcdef`, and a
`Cookie` header it builds itself: empty ("") until the first answer arrives, then its fixed
`base_cookie` (which holds `csrftoken=0123456789abcdef`) followed by every cookie in the shared
cookie storage (`parseCookie`). It never GETs the site root. Each answer must be JSON
(`responseJSON`; anything else and the callback never runs) and is cast `as! [String:
AnyObject]`. `errorCode == 1001` starts a re-login over the tuner; any other `errorCode`
(except `STREAM_VIOLATION`) is retried once, then handed to the caller as if it were the answer.
So the very first call of a fresh app is refused for CSRF and goes through on its retry.

Sign-in at HEAD is not REST: `authPartnerAndUser` POSTs `auth.partnerLogin` and a Blowfish
`auth.userLogin` to the tuner interface (`/services/json`), then uses `userAuthToken` as
`X-AuthToken` on the REST API and asks `v1/billing/infoV2` whether the listener is Premium.
That tuner sign-in belongs with the tuner interface; the REST flows below sign in the 2019 way
and then go on as HEAD does (`billing/infoV2` first).

The player: `AVURLAsset(url: audioURL)`; AVFoundation first GETs `Range: bytes=0-1` (it needs a
206 with `Content-Range` to learn the length and that ranges work), then GETs ranges of the file.

The on-demand library: `v4/catalog/annotateObjectsSimple` {pandoraIds} after every station
track (Radio.playNext, any listener) and after every album (API.callbackAlbum), read as a bare
object keyed by pandoraId; `v4/catalog/getDetails` {pandoraId} for an artist page (from a
search row, the ARTISTS list, or the now-playing artist link, which free listeners have too);
Premium's menus `v5/collections/getSortedArtists` and `v5/collections/getSortedPlaylists`, and
`v6/playlists/getTracks` (a playlist), those three wrapped as `{"request": {...}}`. Milkshake never
adds to the collection nor makes playlists: the tests put artists in and make playlists the way
the listener's other device would (v4 collections/addItem, v4 playlists/create).

Left out: `station/trackStarted` is defined in API.swift but never called.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from http.cookies import SimpleCookie
from typing import Any

import httpx
from readers import ClientBroke, swift
from support import Server

Account = Any  # conftest.Account: .username, .password

CSRF = "0123456789abcdef"  # API.X_CsrfToken
BASE_COOKIE = (  # API.base_cookie
    "_ga=GA1.2.34567890.1234567890;csrftoken=0123456789abcdef;"
    "_gid=GA1.2.1234567890.1234567890; _uetsid=_uetff68c25a;"
)
USER_AGENT = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.13; rv:56.0) Gecko/20100101 Firefox/56.0"
PLAYER_AGENT = "AppleCoreMedia/1.0.0.17G14 (Macintosh; U; Intel Mac OS X 10_13_6; en_us)"
PLAYABLE = ("audio/mpeg", "audio/mp3", "audio/aac", "audio/aacp", "audio/mp4", "audio/x-m4a")


def _swift_json(value: Any) -> bytes:
    """JSONSerialization.data(withJSONObject:): compact, and `/` escaped as `\\/`."""
    return json.dumps(value, separators=(",", ":")).replace("/", "\\/").encode()


class Milkshake:
    """The client's API class: one shared cookie storage, its own Cookie header, one retry."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url
        self.http = httpx.Client(timeout=60)
        self.auth_token: str | None = None  # API.X_AuthToken
        self.cookies = ""  # API.cookies: "" until the first answer
        self.storage: dict[str, str] = {}  # HTTPCookieStorage.shared
        self.cur_retry = 0
        self.exchanges: list[tuple[str, int, Any]] = []

    def _store(self, response: httpx.Response) -> None:
        for header in response.headers.get_list("set-cookie"):
            jar: SimpleCookie = SimpleCookie()
            jar.load(header)
            for name, morsel in jar.items():
                if morsel["max-age"] in ("0", 0) or morsel.value == "":
                    self.storage.pop(name, None)
                else:
                    self.storage[name] = morsel.value
        self.http.cookies.clear()  # the header below is the only cookie source

    def _parse_cookie(self) -> None:
        """API.parseCookie: base_cookie + `name=value;` for every stored cookie."""
        self.cookies = BASE_COOKIE + "".join(f"{n}={v};" for n, v in self.storage.items())

    def request(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        """API.request: POST https://www.pandora.com{path}, read as the client does."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
            "X-CsrfToken": CSRF,
            "Cookie": self.cookies,
        }
        if self.auth_token is not None:
            headers["X-AuthToken"] = self.auth_token
        response = self.http.post(self.base + path, headers=headers, content=_swift_json(params))
        self._store(response)
        try:
            value = response.json()  # Alamofire responseJSON
        except ValueError:
            raise ClientBroke(
                f"{path}: HTTP {response.status_code} answer is not JSON; responseJSON fails "
                f"and the callback never runs: {response.text[:200]!r}"
            ) from None
        self.exchanges.append((path, response.status_code, value))
        self._parse_cookie()
        rv = swift(value, dict, where=path)  # `responseValue as! [String: AnyObject]`
        code = swift(rv.get("errorCode"), int, forced=False)
        if code == 1001:
            raise ClientBroke(f"{path}: AUTH_INVALID_TOKEN, the client would re-login: {rv}")
        if "errorCode" in rv and rv.get("errorString") != "STREAM_VIOLATION":
            self.cur_retry += 1  # (fn2) one retry, then the error goes to the caller
            if self.cur_retry <= 1:
                return self.request(path, params)
            return rv
        self.cur_retry = 0
        return rv


def _ok(rv: dict[str, Any], what: str) -> dict[str, Any]:
    """An error handed to the callback would be read as if it were the answer."""
    if "errorCode" in rv:
        raise ClientBroke(f"{what}: the client reads this error as its answer: {rv}")
    return rv


def _rest_sign_in(base_url: str, account: Account) -> Milkshake:
    """LoginViewController.loginAction -> API.auth (d9216eb) -> AppDelegate.handleSuccessLogin."""
    app = Milkshake(base_url)
    rv = app.request(
        "/api/v1/auth/login",
        {
            "existingAuthToken": "",
            "username": account.username,
            "password": account.password,
            "keepLoggedIn": True,
        },
    )
    # The first call of a fresh app carries no csrftoken cookie: refused, then retried.
    assert app.exchanges[0][2].get("errorString") == "INVALID_CSRF_TOKEN", app.exchanges[0]
    if swift(rv.get("errorCode"), int, forced=False) is not None:
        raise ClientBroke(f"login refused, the screen shows {rv.get('message')!r}")
    app.auth_token = swift(rv.get("authToken"), str, where="authToken")
    config = swift(rv.get("config"), dict, where="config")
    swift(config.get("branding"), str, where="config.branding")  # `.lowercased()`
    swift(rv.get("listenerId"), str, where="listenerId")
    return app


def _fragment_tracks(rv: dict[str, Any]) -> list[dict[str, Any]]:
    """Util.parseStationIntoItems, then what Radio.playNext force-unwraps."""
    tracks = swift(rv.get("tracks"), "[[String: Any]]", forced=False)
    if not tracks:
        raise ClientBroke(f"no tracks: playNext asks for a fragment again, forever: {rv}")
    for i, track in enumerate(tracks):
        where = f"tracks[{i}]"
        art = swift(track.get("albumArt"), list, where=f"{where}.albumArt")
        if art:  # `albumArtArray[2]["url"]`: index out of range below three images
            if len(art) < 3:
                raise ClientBroke(f"{where}.albumArt has {len(art)} images; [2] crashes")
            swift(art[2], dict, where=f"{where}.albumArt[2]")
        swift(track.get("artistMusicId"), str, where=f"{where}.artistMusicId")
        swift(track.get("audioURL"), str, where=f"{where}.audioURL")  # `.audioURL!`
        swift(track.get("trackToken"), str, where=f"{where}.trackToken")  # `.trackToken!`
    return tracks


def _station_items(rv: dict[str, Any]) -> list[dict[str, Any]]:
    """Util.parseStationSearchIntoItems (the station list), and `item.stationId!` on a click."""
    stations = swift(rv.get("stations"), "[[String: Any]]", forced=False)
    if stations is None:
        raise ClientBroke(f"`stations as? [[String: Any]]` is nil: an empty list shown: {rv}")
    for i, station in enumerate(stations[:50]):
        art = swift(station.get("art"), list, forced=False)
        if art is not None and len(art) > 1:
            if len(art) < 3:
                raise ClientBroke(f"stations[{i}].art has {len(art)} images; [2] crashes")
            swift(art[2], dict, where=f"stations[{i}].art[2]")
        swift(station.get("stationId"), str, where=f"stations[{i}].stationId")
    return stations


def _play_audio(app: Milkshake, url: str) -> None:
    """Music.playAudio: AVURLAsset probes `bytes=0-1`, then reads ranges of the file."""
    headers = {
        "User-Agent": PLAYER_AGENT,
        "Accept": "*/*",
        "Accept-Encoding": "identity",
        "X-Playback-Session-Id": str(uuid.uuid4()).upper(),
        "Range": "bytes=0-1",
    }
    if app.storage:  # AVURLAsset sends the shared storage's cookies
        headers["Cookie"] = "; ".join(f"{n}={v}" for n, v in app.storage.items())
    probe = httpx.get(url, headers=headers, timeout=120)
    assert probe.status_code == 206, (probe.status_code, probe.text[:200])
    content_type = probe.headers.get("content-type", "").split(";")[0].strip()
    assert content_type in PLAYABLE, f"AVPlayer cannot play {content_type!r}"
    content_range = probe.headers.get("content-range", "")
    assert content_range.startswith("bytes 0-1/"), content_range
    assert len(probe.content) == 2
    size = int(content_range.rsplit("/", 1)[1])
    assert size > 1000
    for first, last in ((0, size - 1), (size // 2, size - 1)):
        part = httpx.get(url, headers={**headers, "Range": f"bytes={first}-{last}"}, timeout=120)
        assert part.status_code == 206, (part.status_code, part.text[:200])
        assert part.headers["content-range"] == f"bytes {first}-{last}/{size}"
        assert len(part.content) == last - first + 1


def _setup(app: Milkshake, path: str, body: dict[str, Any], version: int = 1) -> Any:
    """Set-up only (not a Milkshake call): a REST call (v1 unless told) with the listener's
    token."""
    response = httpx.post(
        f"{app.base}/api/v{version}/{path}",
        headers={"X-CsrfToken": "setup", "X-AuthToken": app.auth_token or ""},
        cookies={"csrftoken": "setup"},
        json=body,
    )
    assert response.status_code == 200, response.text
    return response.json()


def _artist_names(app: Milkshake) -> list[str]:
    """Set-up: names to type into the search field, found through the genre pages."""
    names = []
    for category in _setup(app, "music/genrecategories", {})["categories"]:
        for station in _setup(app, "music/genres", {"token": category["token"]})["stations"]:
            names += [t["artistName"] for t in station["sampleTracks"]]
    assert names
    return list(dict.fromkeys(names))


def _v1_search(app: Milkshake, query: str, types: list[str]) -> list[dict[str, Any]]:
    """Set-up: v1 search, to find ids without Milkshake's v3 search."""
    return _setup(app, "search/fullSearch", {"query": query, "types": types})["items"]


def _create_station(app: Milkshake, pandora_id: str) -> str:
    """API.createStation -> MainViewController.createStationCallback -> Util.parseCreateStation
    -> playStation(musicItem) force-unwraps `stationId`."""
    rv = app.request(
        "/api/v1/station/createStation",
        {"pandoraId": pandora_id, "creativeId": "", "lineId": "", "creationSource": ""},
    )
    swift(rv.get("name"), str, forced=False)
    return swift(rv.get("stationId"), str, where="createStation.stationId")


def _get_fragment(
    app: Milkshake, station_id: str, is_start: bool, last_token: str | None
) -> dict[str, Any]:
    """API.getPlaylistFragment; `lastPlayedTrackToken` is absent only when nil."""
    params: dict[str, Any] = {
        "stationId": station_id,
        "isStationStart": is_start,
        "fragmentRequestReason": "Normal",
        "audioFormat": "mp3-hifi",
        "startingAtTrackId": "",
        "onDemandArtistMessageArtistUidHex": "",
        "onDemandArtistMessageIdHex": "",
    }
    if last_token is not None:
        params["lastPlayedTrackToken"] = last_token
    return app.request("/api/v1/playlist/getFragment", params)


def _first_station(app: Milkshake) -> str:
    """A station made from an artist of the library (found with the set-up search)."""
    for name in _artist_names(app):
        for item in _v1_search(app, name, ["AR"]):
            if item["type"] == "artist":
                return _create_station(app, item["pandoraId"])
    raise AssertionError("no artist found")


# --- sign-in ---------------------------------------------------------------------------------


def test_rest_sign_in_and_billing(airwave: Server, account: Account) -> None:
    """The 2019 REST login, then HEAD's AppDelegate.handleSuccessLogin -> API.billingInfo."""
    app = _rest_sign_in(airwave.url, account)
    rv = app.request("/api/v1/billing/infoV2", {})
    # `results["activeProduct"]?["productTier"] as? String ?? ""`: a JSON error passes as free.
    product = swift(rv.get("activeProduct"), dict, forced=False) or {}
    tier = swift(product.get("productTier"), str, forced=False) or ""
    assert tier.lower() != "pandora_premium"


def test_billing_tells_premium(airwave: Server, premium_account: Account) -> None:
    """AppDelegate.handleSuccessLogin: only productTier "pandora_premium" unlocks the artist,
    playlist and shuffle menus, the AL/PL search types and on-demand play (isPremium)."""
    app = _rest_sign_in(airwave.url, premium_account)
    rv = _ok(app.request("/api/v1/billing/infoV2", {}), "billing/infoV2")
    product = swift(rv.get("activeProduct"), dict, forced=False) or {}
    tier = swift(product.get("productTier"), str, forced=False) or ""
    assert tier.lower() == "pandora_premium", f"a Premium listener is treated as free: {rv}"


# --- radio -----------------------------------------------------------------------------------


def test_stations_play_and_thumbs(airwave: Server, account: Account) -> None:
    """Station list -> play a station -> AVPlayer -> next fragment -> thumbs (Radio.swift,
    SearchTableCellView thumbs buttons)."""
    app = _rest_sign_in(airwave.url, account)
    station_id = _first_station(app)

    # MainViewController.loadStationResults -> API.getStations {pageSize: 250}
    rv = _ok(app.request("/api/v1/station/getStations", {"pageSize": 250}), "getStations")
    stations = _station_items(rv)
    assert station_id in [s["stationId"] for s in stations]

    # A click: MainViewController.playStation -> Radio.playStation(isStationStart: true,
    # lastPlayedTrackToken: "") -> API.getPlaylistFragment
    rv = _ok(_get_fragment(app, station_id, True, ""), "getFragment")
    tracks = _fragment_tracks(rv)
    # Radio.playNext -> Music.playAudio(audioURL) (then annotateObjectsSimple: see below)
    _play_audio(app, tracks[0]["audioURL"])

    # End of the fragment: Radio.playNext -> playStation(isStationStart: false, prevToken)
    rv = _ok(_get_fragment(app, station_id, False, tracks[-1]["trackToken"]), "next fragment")
    more = _fragment_tracks(rv)

    # Thumbs up: API.addFeedback {trackToken, isPositive: true}; the answer is only printed.
    token = more[0]["trackToken"]
    _ok(app.request("/api/v1/station/addFeedback", {"trackToken": token, "isPositive": True}), "up")
    # Un-thumb (either thumb): API.deleteFeedback {trackToken, isPositive: false}
    _ok(
        app.request("/api/v1/station/deleteFeedback", {"trackToken": token, "isPositive": False}),
        "deleteFeedback",
    )
    # Radio.thumbDown: API.addFeedback {isPositive: false}, then playNext.
    down = more[1]["trackToken"]
    _ok(
        app.request("/api/v1/station/addFeedback", {"trackToken": down, "isPositive": False}),
        "thumbs down",
    )
    _play_audio(app, more[2]["audioURL"])


def test_another_device_is_playing(airwave: Server, account: Account) -> None:
    """Radio.playStation: any error from getFragment -> playbackResumed {forceActive: true} ->
    getFragment again (STREAM_VIOLATION is not retried by API.request)."""
    other = _rest_sign_in(airwave.url, account)  # the listener's other device
    station_id = _first_station(other)
    _fragment_tracks(_ok(_get_fragment(other, station_id, True, ""), "other device"))

    app = _rest_sign_in(airwave.url, account)
    rv = _get_fragment(app, station_id, True, "")
    if "errorCode" in rv:
        app.request("/api/v1/station/playbackResumed", {"forceActive": True})
        rv = _get_fragment(app, station_id, True, "")
    tracks = _fragment_tracks(rv)
    _play_audio(app, tracks[0]["audioURL"])


def test_search_and_create_station(airwave: Server, account: Account) -> None:
    """MainViewController.search -> API.search (free types) -> Util.parseSearchIntoItems ->
    a click on an artist (free: API.createStation) -> playStation."""
    app = _rest_sign_in(airwave.url, account)
    name = _artist_names(app)[0]
    rv = app.request(
        "/api/v3/sod/search",
        {
            "query": name,
            "types": ["AR", "CO", "SF", "TR"],
            "listener": "",
            "start": 0,
            "count": 20,
            "annotate": True,
            "filters": [],
            "searchTime": int(time.time() * 1000),
        },
    )
    results = swift(rv.get("results"), list, forced=False)
    if not results:
        raise ClientBroke(f"`results as? [String]` gives nothing to show: {rv}")
    annotations = swift(rv.get("annotations"), dict, where="annotations")  # `annotations!`
    artist = None
    for key in results:
        swift(key, str, where="results[]")
        if key not in annotations:
            raise ClientBroke(f"`annotations![{key!r}]!` crashes")
        row = swift(annotations[key], dict, where=f"annotations[{key}]")
        kind = (swift(row.get("type"), str, forced=False) or "").upper()
        if kind == "AR" and artist is None:
            artist = swift(row.get("pandoraId"), str, where="pandoraId")  # `item.pandoraId!`
    assert artist is not None, f"no artist row for {name!r}: {rv}"
    station_id = _create_station(app, artist)
    _fragment_tracks(_ok(_get_fragment(app, station_id, True, ""), "getFragment"))


def _two_stations(app: Milkshake) -> tuple[str, str]:
    first = _first_station(app)
    for name in _artist_names(app)[1:]:
        for item in _v1_search(app, name, ["AR"]):
            second = _create_station(app, item["pandoraId"])
            if second != first:
                return first, second
    raise AssertionError("one artist only")


def test_shuffle_all_stations(airwave: Server, account: Account) -> None:
    """MainViewController: the "Shuffle Stations" row -> API.shuffleStation([]) ->
    callbackShuffle -> API.createShuffleStation -> callbackCreateShuffleStation -> playStation."""
    app = _rest_sign_in(airwave.url, account)
    _two_stations(app)
    rv = app.request("/api/v1/station/shuffle", {})
    shuffle_id = swift(rv.get("stationId"), str, where="shuffle.stationId")  # `as! String`
    chosen = swift(rv.get("shuffleStationIds"), list, where="shuffleStationIds")  # `as! [String]`
    for item in chosen:
        swift(item, str, where="shuffleStationIds[]")

    rv = app.request(
        "/api/v1/station/createStation",
        {
            "stationCode": f"sh{shuffle_id}",
            "stationName": "",
            "searchQuery": "",
            "pandoraId": None,
            "creativeId": None,
            "lineId": None,
            "creationSource": None,
            "modeId": None,
        },
    )
    if "errorCode" in rv:  # parseCreateStation: stationId nil; playStation `stationId!`
        raise ClientBroke(f"createStation(stationCode: sh{shuffle_id}) -> crash: {rv}")
    station_id = swift(rv.get("stationId"), str, where="createStation(sh...).stationId")
    _fragment_tracks(_ok(_get_fragment(app, station_id, True, ""), "shuffle fragment"))


def test_shuffle_toggle_station(airwave: Server, account: Account) -> None:
    """SearchTableCellView.shuffle: the per-station toggle sends the chosen list to
    API.shuffleStation(ids) and shows the answer's `shuffleStationIds as! [String]`."""
    app = _rest_sign_in(airwave.url, account)
    first, second = _two_stations(app)
    rv = app.request("/api/v1/station/shuffle", {})  # the shuffle row, as above
    swift(rv.get("shuffleStationIds"), list, where="shuffleStationIds")
    # Toggle `second` off: radio.shuffleStations [first, second] minus second.
    rv = app.request("/api/v1/station/shuffle", {"stationIds": [first], "shuffleType": "my"})
    ids = rv.get("shuffleStationIds")
    if ids is not None:
        ids = swift(ids, list, where="shuffleStationIds")
        assert ids == [first], f"the toggle shows the server's list, not the choice: {ids}"
    # And back on: [first, second].
    rv = app.request(
        "/api/v1/station/shuffle", {"stationIds": [first, second], "shuffleType": "my"}
    )
    ids = swift(rv.get("shuffleStationIds"), list, where="shuffleStationIds")
    assert sorted(ids) == sorted([first, second]), ids


# --- Premium: albums, artists, playlists, on-demand play -------------------------------------
# A row is a MusicItem; here a dict of what Milkshake copied out of an answer.

# SearchTableCellView: an ALBUM row's releaseDate goes through a DateFormatter with
# "yyyy-MM-dd'T'HH:mm:ss.SSSZ" and the result is force-unwrapped.
RELEASE_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:?\d\d)")


def _present(row: dict[str, Any], key: str, where: str) -> Any:
    """`row[key]!` on a [String: AnyObject]: a missing key crashes (a JSON null is NSNull)."""
    if key not in row:
        raise ClientBroke(f"Swift: `{where}[{key!r}]!` crashed on nil")
    return row[key]


def _member(value: Any, key: str) -> Any:
    """`anyObject[key]` (AnyObject's dynamic subscript): a dictionary's value, else nil."""
    return value.get(key) if isinstance(value, dict) else None


def _member_forced(value: Any, key: str, where: str) -> Any:
    """`anyObject[key]!`: nil (no dictionary, or no such key) crashes."""
    if not isinstance(value, dict) or key not in value:
        raise ClientBroke(f"Swift: `{where}[{key!r}]!` crashed on nil")
    return value[key]


def _strings(value: Any, where: str) -> list[str]:
    """`as! [String]`."""
    for i, item in enumerate(swift(value, list, where=where)):
        swift(item, str, where=f"{where}[{i}]")
    return value


def _has_interactive(note: dict[str, Any]) -> bool:
    """`if let rightsDict = note["rightsInfo"] { hasInteractive = rightsDict["hasInteractive"]
    as? Bool ?? false }`; without rightsInfo, MusicItem.hasInteractive stays true."""
    if "rightsInfo" not in note:
        return True
    return swift(_member(note["rightsInfo"], "hasInteractive"), bool, forced=False) or False


def _album_art(track: dict[str, Any], where: str) -> None:
    """`if let a = albumArt as? [AnyObject] { if a.count > 1 { a[2]["url"] } }`."""
    art = swift(track.get("albumArt"), list, forced=False)
    if art is not None and 1 < len(art) < 3:
        raise ClientBroke(f"{where}.albumArt has {len(art)} images; [2] crashes")


def _row(note: dict[str, Any], kind: str, is_artist: bool = False) -> dict[str, Any]:
    """The MusicItem Util's parsers make of an annotation (all `as? String`)."""
    row: dict[str, Any] = {"type": kind, "isArtist": is_artist}
    for key in ("pandoraId", "name", "artistName", "artistId", "albumId", "shareableUrlPath"):
        row[key] = swift(note.get(key), str, forced=False)
    row["releaseDate"] = swift(note.get("releaseDate"), str, forced=False)
    if kind == "AR":  # artistSimilarArtists, parseArtistIntoItems
        row["artistName"], row["artistId"] = row["name"], row["pandoraId"]
        row["hasInteractive"] = True
    else:
        row["hasInteractive"] = _has_interactive(note)
    return row


def _token_from_item(row: dict[str, Any]) -> str:
    """API.getTokenFromItem: shareableUrlPath's "/"-components from the third on, rejoined."""
    path = row.get("shareableUrlPath")
    if path is None:
        return ""
    parts = path.split("/")
    if len(parts) < 3:
        raise ClientBroke(f"getTokenFromItem: `pathArray[2...{len(parts) - 1}]` crashes: {path!r}")
    return "/".join(parts[2:])


def _draw_rows(rows: list[dict[str, Any]]) -> None:
    """ResultsViewController -> SearchTableCellView.setCellWithSearchResult: what drawing a row
    force-unwraps (ALBUM rows also keep `item.token`, which a click sends to albumToken)."""
    for i, row in enumerate(rows):
        where = f"row {i} ({row['type']} {row.get('pandoraId')})"
        if row["type"] == "TR" and not row["isArtist"] and row.get("artistName") is None:
            raise ClientBroke(f"{where}: `artistLink.customTitle = item.artistName!` crashes")
        if row["type"] in ("AL", "AR"):
            row["token"] = _token_from_item(row)
        date = row.get("releaseDate")
        if row["type"] == "AL" and date is not None and not RELEASE_DATE.fullmatch(date):
            raise ClientBroke(f"{where}: releaseDate {date!r}: `dateFromString!` crashes")


def _annotate(app: Milkshake, pandora_ids: list[str]) -> dict[str, Any]:
    """API.annotateObjectsSimple {pandoraIds}: the answer is the annotations themselves, keyed
    by pandoraId (an error answer too is handed over as if it were them)."""
    return app.request("/api/v4/catalog/annotateObjectsSimple", {"pandoraIds": pandora_ids})


def _open_album(app: Milkshake, token: str) -> list[dict[str, Any]]:
    """API.albumToken (v1/music/album) -> API.callbackAlbum (Util.parseAlbumIntoTracks,
    `item.pandoraId!`) -> API.annotateObjectsSimple(trackIds:results:) ->
    MainViewController.callbackAlbum -> Util.parseAlbumIntoTracksv2, whose first row titles
    the page (`searchResults[0]`)."""
    album = app.request("/api/v1/music/album", {"token": token})
    tracks = swift(album.get("tracks"), "[[String: Any]]", forced=False) or []
    track_ids = []
    for i, track in enumerate(tracks):  # parseAlbumIntoTracks, then callbackAlbum
        _album_art(track, f"tracks[{i}]")
        swift(track.get("trackLength"), int, where=f"tracks[{i}].trackLength")
        track_ids.append(swift(track.get("pandoraId"), str, where=f"tracks[{i}].pandoraId"))
    notes = _annotate(app, track_ids)  # `results["results1"] as! [String: AnyObject]`
    rows = []
    for i, track in enumerate(tracks):  # parseAlbumIntoTracksv2
        note = swift(notes.get(track["pandoraId"]), dict, forced=False)
        if note is None:
            continue  # `trackMap[pandoraId] as? [String: AnyObject]`: the track is left out
        swift(track.get("trackLength"), int, where=f"tracks[{i}].trackLength")
        rows.append(
            {
                "type": "TR",
                "isArtist": False,
                "pandoraId": track["pandoraId"],
                "name": swift(track.get("songTitle"), str, forced=False),
                "artistName": swift(track.get("artistName"), str, forced=False) or "",
                "artistId": swift(note.get("artistId"), str, forced=False) or "",
                "albumId": swift(note.get("albumId"), str, forced=False),
                "hasInteractive": _has_interactive(note),
            }
        )
    if not rows:
        broke = album if "errorCode" in album else notes
        raise ClientBroke(
            f"album {token!r}: no annotated track; `searchResults[0]` crashes: {broke}"
        )
    _draw_rows(rows)
    return rows


def _dj_play(app: Milkshake, rows: list[dict[str, Any]], row: dict[str, Any]) -> None:
    """A click on a TRACK row (canClick: hasInteractive) -> MainViewController.cellSelectedProtocol
    -> DJ.setWithAlbum(getAllTracks(): `item.pandoraId!` each) -> DJ.playTrack ->
    API.getAudioPlaybackInfoPandoraId (`item.albumId!` is the sourcePandoraId) ->
    DJ.callbackAudio -> Music.playAudio, and NowPlayingViewController.setViewWithMusicItem
    (`item.name!`, `item.artistName!`)."""
    if not row["hasInteractive"]:
        raise ClientBroke(f"{row['pandoraId']}: hasInteractive false: greyed out, cannot play")
    if any(r["type"] == "TR" and r["pandoraId"] is None for r in rows):
        raise ClientBroke("DJ.setWithAlbum: `item.pandoraId!` crashes")
    if row["albumId"] is None:
        raise ClientBroke(f"{row['pandoraId']}: getAudioPlaybackInfo's `item.albumId!` crashes")
    rv = app.request(
        "/api/v1/ondemand/getAudioPlaybackInfo",
        {"pandoraId": row["pandoraId"], "sourcePandoraId": row["albumId"]},
    )
    url = swift(rv.get("audioURL"), str, forced=False)
    if url is None:
        raise ClientBroke(f"DJ.callbackAudio: no audioURL, nothing plays: {rv}")
    for key in ("name", "artistName"):
        if row.get(key) is None:
            raise ClientBroke(f"NowPlayingViewController: `item.{key}!` crashes on {row}")
    _play_audio(app, url)


def _artist_page(rv: dict[str, Any]) -> dict[str, Any]:
    """Callback.callbackArtist over getDetails' answer: Util.artistLatestRelease,
    artistTopTracks, artistAlbumsRelease, artistSimilarArtists, artistDetails; then the rows
    drawn, the header by ArtTableCellView (`item.name!`: the first top track's artistName, else
    the first album's)."""
    if "errorCode" in rv:  # handed over after its retry: `annotations as!` below crashes
        raise ClientBroke(f"catalogDetails: Callback.callbackArtist crashes on an error: {rv}")
    key = "artistDetails" if "artistDetails" in rv else "composerDetails"  # Util.artistKey
    # artistLatestRelease
    notes = swift(rv.get("annotations"), dict, where="annotations")
    latest_rows = []
    latest = swift(_member(rv.get(key), "latestRelease"), str, forced=False)
    if latest is not None:
        album = swift(notes.get(latest), dict, where=f"annotations[{latest}]")
        _present(album, "icon", f"annotations[{latest}]")  # `track["icon"]!["artId"]`
        latest_rows.append(_row(album, "AL"))
    # artistTopTracks: `catalog[artistKey]!["topTracks"]! as! [String]`, at most 21 read
    details = _present(rv, key, "catalog")
    top_rows = []
    for pandora_id in _strings(_member_forced(details, "topTracks", key), f"{key}.topTracks")[:21]:
        where = f"annotations[{pandora_id}]"
        track = swift(notes.get(pandora_id), dict, where=where)
        _present(track, "icon", where)
        swift(track.get("duration"), int, where=f"{where}.duration")
        top_rows.append(_row(track, "TR", is_artist=True))
    # artistAlbumsRelease
    album_rows = []
    for pandora_id in _strings(_member_forced(details, "topAlbums", key), f"{key}.topAlbums"):
        album_rows.append(
            _row(swift(notes.get(pandora_id), dict, where=f"annotations[{pandora_id}]"), "AL")
        )
    # artistSimilarArtists
    similar_rows = []
    for pandora_id in _strings(
        _member_forced(details, "similarArtists", key), f"{key}.similarArtists"
    ):
        where = f"annotations[{pandora_id}]"
        artist = swift(notes.get(pandora_id), dict, where=where)
        _present(artist, "icon", where)  # `artist["icon"]!["artUrl"]`
        similar_rows.append(_row(artist, "AR"))
    # artistDetails: `catalog[artistKey]!["heroImage"]! as! [String: String]`
    hero = swift(_member_forced(details, "heroImage", key), dict, where=f"{key}.heroImage")
    for name, value in hero.items():
        swift(value, str, where=f"{key}.heroImage.{name} (`as! [String: String]`)")
    swift(_member(details, "stationListenerCount"), int, forced=False)
    title = top_rows[0]["artistName"] if top_rows else None
    if album_rows and title is None:
        title = album_rows[0]["artistName"]
    if title is None:
        raise ClientBroke(f"artist page: no artistName for the header; `item.name!` crashes: {rv}")
    _draw_rows([*latest_rows, *top_rows, *album_rows, *similar_rows])
    return {
        # the header's station button: ArtTableCellView `item.pandoraId!`
        "pandoraId": swift(_member(details, "pandoraId"), str, where=f"{key}.pandoraId"),
        "latest": latest_rows,
        "top": top_rows,
        "albums": album_rows,
        "similar": similar_rows,
    }


def _open_artist(app: Milkshake, row: dict[str, Any]) -> dict[str, Any]:
    """MainViewController.cellArtistSelectedProtocol (or a Premium click on an ARTIST row):
    API.catalogDetails(`item.artistId!`) {pandoraId} -> callbackArtist."""
    if row.get("artistId") is None:
        raise ClientBroke(f"catalogDetails(pandoraId: item.artistId!) crashes on {row}")
    return _artist_page(app.request("/api/v4/catalog/getDetails", {"pandoraId": row["artistId"]}))


def _radio_track(app: Milkshake) -> dict[str, Any]:
    """Radio.playStation -> Radio.playNext: Music.playAudio, then
    API.annotateObjectsSimple(trackIds: [pandoraId]), whose callback copies the annotation's
    artistId and albumId into the playing MusicItem (over parseStationIntoItems' artistId)."""
    station_id = _first_station(app)
    track = _fragment_tracks(_ok(_get_fragment(app, station_id, True, ""), "getFragment"))[0]
    _play_audio(app, track["audioURL"])
    pandora_id = swift(track.get("pandoraId"), str, forced=False)
    if pandora_id is None:
        raise ClientBroke(f"a station track without pandoraId is never annotated: {track}")
    row = {
        "type": "TR",
        "isArtist": False,
        "pandoraId": pandora_id,
        "name": swift(track.get("songTitle"), str, forced=False),
        "artistName": swift(track.get("artistName"), str, forced=False),
        "albumTitle": swift(track.get("albumTitle"), str, forced=False),
        "artistId": "AR:" + track["artistMusicId"][1:],  # parseStationIntoItems
        "albumId": None,
    }
    notes = _annotate(app, [pandora_id])
    # `if let trackDict = results[pandoraId] as? Dictionary<String, AnyObject>`
    note = swift(notes.get(pandora_id), dict, forced=False)
    if note is None:
        raise ClientBroke(f"{pandora_id} not annotated: no albumId, no album link: {notes}")
    # `if let icon = trackDict["icon"] { icon["dominantColor"] as? String }`: never breaks
    row["artistId"] = swift(note.get("artistId"), str, forced=False)
    row["albumId"] = swift(note.get("albumId"), str, forced=False)
    # NowPlayingViewController.setViewWithMusicItem: `item.name!`, `item.artistName!`; the
    # artist link is always shown and sends `item.artistId!`.
    for key in ("name", "artistName", "artistId"):
        if row[key] is None:
            raise ClientBroke(f"now playing: `item.{key}!` crashes (annotation: {note})")
    if row["albumId"] is None:  # `if item.albumId != nil` else the album link is hidden
        raise ClientBroke(f"the annotation has no albumId: the album link is hidden: {note}")
    return row


def _first_album_id(app: Milkshake) -> str:
    """Set-up: an album of the library, found through the v1 artist pages."""
    for name in _artist_names(app):
        for item in _v1_search(app, name, ["AR"]):
            artist = _setup(app, "music/artist", {"token": item["pandoraId"]})
            if artist["discography"]:
                return artist["discography"][0]["pandoraId"]
    raise AssertionError("no album found")


def _artist_ids(app: Milkshake, count: int) -> list[str]:
    """Set-up: pandoraIds of artists of the library."""
    found: list[str] = []
    for name in _artist_names(app):
        for item in _v1_search(app, name, ["AR"]):
            if item["type"] == "artist" and item["pandoraId"] not in found:
                found.append(item["pandoraId"])
            if len(found) == count:
                return found
    raise AssertionError(f"fewer than {count} artists")


def test_album_and_on_demand_play(airwave: Server, premium_account: Account) -> None:
    """MainViewController.cellAlbumSelectedProtocol (a row's album link: `item.albumId!`) ->
    API.albumToken -> annotateObjectsSimple -> Util.parseAlbumIntoTracksv2 -> a click on a
    track -> DJ.playTrack -> API.getAudioPlaybackInfoPandoraId -> Music.playAudio."""
    app = _rest_sign_in(airwave.url, premium_account)
    album_id = _first_album_id(app)
    rows = _open_album(app, album_id)
    assert rows[0]["albumId"] == album_id, rows[0]
    _dj_play(app, rows, rows[0])


def test_radio_track_annotated(airwave: Server, account: Account) -> None:
    """Radio.playNext: every station track is annotated (v4 annotateObjectsSimple) for the
    now-playing view's artist and album links; any listener, Premium or not."""
    app = _rest_sign_in(airwave.url, account)
    row = _radio_track(app)
    assert row["artistId"].startswith("AR:") and row["albumId"].startswith("AL:"), row


def test_now_playing_album_link(airwave: Server, premium_account: Account) -> None:
    """NowPlayingViewController.loadAlbumAction (a station track: albumTitle, no playlistName)
    -> cellAlbumSelectedProtocol -> API.albumToken(the annotation's albumId) -> the album page
    -> a click on a track plays it on demand."""
    app = _rest_sign_in(airwave.url, premium_account)
    row = _radio_track(app)
    rows = _open_album(app, row["albumId"])
    assert row["pandoraId"] in [r["pandoraId"] for r in rows], rows
    _dj_play(app, rows, rows[-1])


def test_now_playing_artist_link(airwave: Server, premium_account: Account) -> None:
    """NowPlayingViewController.loadArtistAction -> cellArtistSelectedProtocol ->
    API.catalogDetails (v4 catalog/getDetails) -> Callback.callbackArtist -> a click on a TOP
    SONGS row -> DJ.playTrack."""
    app = _rest_sign_in(airwave.url, premium_account)
    row = _radio_track(app)
    page = _open_artist(app, row)
    assert page["pandoraId"] == row["artistId"], page
    assert page["top"], f"the artist page shows no TOP SONGS: {page}"
    _dj_play(app, page["top"], page["top"][0])


def test_free_listener_artist_link(airwave: Server, account: Account) -> None:
    """A free listener's now-playing view has the same artist link (cellArtistSelectedProtocol
    asks nothing about the tier): catalogDetails, then Callback.callbackArtist, which
    force-casts `annotations` (an error answer crashes the app)."""
    app = _rest_sign_in(airwave.url, account)
    row = _radio_track(app)
    page = _open_artist(app, row)
    assert page["pandoraId"] == row["artistId"], page


def test_artist_page_album(airwave: Server, premium_account: Account) -> None:
    """An artist page's ALBUMS row: drawing it keeps `item.token = API.getTokenFromItem(item)`
    (from shareableUrlPath); a click (cellSelectedProtocol, ALBUM) -> API.albumToken(token) ->
    the album page -> a track plays."""
    app = _rest_sign_in(airwave.url, premium_account)
    for artist_id in _artist_ids(app, 3):
        # A Premium click on a search row of an artist: catalogDetails(item.artistId!)
        page = _open_artist(app, {"artistId": artist_id})
        if page["albums"]:
            break
    else:
        raise AssertionError("no artist page lists ALBUMS")
    album = page["albums"][0]
    assert album["pandoraId"] and album["hasInteractive"], album
    rows = _open_album(app, album["token"])
    assert {r["albumId"] for r in rows} == {album["pandoraId"]}, rows
    _dj_play(app, rows, rows[0])


def test_my_artists(airwave: Server, premium_account: Account) -> None:
    """MenuViewController (Premium) "ARTISTS" -> MainViewController.loadArtistResults ->
    API.getSortedArtists (v5 collections/getSortedArtists) -> Util.parseArtistIntoItems -> a
    click on an artist -> catalogDetails -> a TOP SONGS row plays."""
    app = _rest_sign_in(airwave.url, premium_account)
    artists = _artist_ids(app, 2)
    for artist_id in artists:  # the listener's other device collected them
        _setup(app, "collections/addItem", {"pandoraId": artist_id}, version=4)

    rv = app.request(
        "/api/v5/collections/getSortedArtists",
        {"request": {"offset": 0, "limit": 50, "annotationLimit": 100}},
    )
    # parseArtistIntoItems: `totalCount as! Int`; when > 0 `annotations as! [String:
    # AnyObject]`, `items as! [[String: AnyObject]]`, each `pandoraId as! String` and
    # `annotationsDict[pandoraId] as! [String: AnyObject]`.
    if "errorCode" in rv:  # handed over after its retry: `totalCount as! Int` crashes
        raise ClientBroke(f"getSortedArtists: Util.parseArtistIntoItems crashes on an error: {rv}")
    total = swift(rv.get("totalCount"), int, where="totalCount")
    assert total == len(artists), f"the ARTISTS list shows nothing or too much: {rv}"
    notes = swift(rv.get("annotations"), dict, where="annotations")
    rows = []
    for i, item in enumerate(swift(rv.get("items"), "[[String: Any]]", where="items")):
        pandora_id = swift(item.get("pandoraId"), str, where=f"items[{i}].pandoraId")
        rows.append(
            _row(swift(notes.get(pandora_id), dict, where=f"annotations[{pandora_id}]"), "AR")
        )
    _draw_rows(rows)
    assert sorted(r["pandoraId"] for r in rows) == sorted(artists), rows
    assert all(r["name"] for r in rows), f"nameless rows: {rows}"

    page = _open_artist(app, rows[0])  # cellSelectedProtocol, ARTIST, Premium
    assert page["top"], f"the artist page shows no TOP SONGS: {page}"
    _dj_play(app, page["top"], page["top"][-1])


def _get_tracks(app: Milkshake, pandora_id: str) -> list[dict[str, Any]]:
    """API.getTracks (v6 playlists/getTracks) -> Util.parsePlaylistIntoItems: `annotations`,
    `tracks`, `pandoraId` and `name` all force-cast; per entry `trackPandoraId as! String`,
    `annotationsDict[id] as! [String: AnyObject]`, `track["icon"]!`, `duration as! Int`."""
    rv = app.request(
        "/api/v6/playlists/getTracks",
        {
            "request": {
                "pandoraId": pandora_id,
                "playlistVersion": 0,
                "offset": 0,
                "limit": 100,
                "annotationLimit": 100,
            }
        },
    )
    if "errorCode" in rv:  # handed over after its retry: `annotations as!` below crashes
        raise ClientBroke(f"getTracks: Util.parsePlaylistIntoItems crashes on an error: {rv}")
    notes = swift(rv.get("annotations"), dict, where="annotations")
    entries = swift(rv.get("tracks"), "[[String: Any]]", where="tracks")
    playlist_id = swift(rv.get("pandoraId"), str, where="pandoraId")
    playlist_name = swift(rv.get("name"), str, where="name")
    rows = []
    for i, entry in enumerate(entries):
        track_id = swift(entry.get("trackPandoraId"), str, where=f"tracks[{i}].trackPandoraId")
        where = f"annotations[{track_id}]"
        track = swift(notes.get(track_id), dict, where=where)
        _present(track, "icon", where)
        swift(track.get("duration"), int, where=f"{where}.duration")
        rows.append({**_row(track, "TR"), "playlistId": playlist_id, "playlistName": playlist_name})
    _draw_rows(rows)
    return rows


def test_my_playlists(airwave: Server, premium_account: Account) -> None:
    """MenuViewController (Premium) "PLAYLISTS" -> MainViewController.loadPlaylistResults ->
    API.getSortedPlaylists (v5 collections/getSortedPlaylists) -> Callback.callbackPlaylistList
    -> a click on the playlist (cellSelectedProtocol, PLAYLIST) -> API.getTracks ->
    callbackPlaylist -> a track plays; the now-playing album link shows the playlist
    (loadAlbumAction -> cellPlaylistSelectedProtocol -> getTracks(item.playlistId!))."""
    app = _rest_sign_in(airwave.url, premium_account)
    album = _setup(app, "music/album", {"token": _first_album_id(app)})
    track_ids = [t["pandoraId"] for t in album["tracks"]][:3]
    made = _setup(  # the listener's other device made it
        app, "playlists/create", {"name": "Milkshake mix", "tracks": track_ids}, version=4
    )

    rv = app.request(
        "/api/v5/collections/getSortedPlaylists",
        {"request": {"sortOrder": "MOST_RECENT_MODIFIED", "limit": 100, "annotationLimit": 100}},
    )
    # Util.parsePlaylistSearchIntoItems: `annotations as? [String: AnyObject] ?? [:]`, `items as?
    # [[String: Any]] ?? []`, each `pandoraId as! String`; an annotated one gets its name,
    # `totalTracks as! Int` and type PLAYLIST (without it the row cannot be clicked).
    notes = swift(rv.get("annotations"), dict, forced=False) or {}
    rows = []
    for i, item in enumerate(swift(rv.get("items"), "[[String: Any]]", forced=False) or []):
        pandora_id = swift(item.get("pandoraId"), str, where=f"items[{i}].pandoraId")
        row: dict[str, Any] = {"pandoraId": pandora_id, "type": None}
        note = swift(notes.get(pandora_id), dict, forced=False)
        if note is not None:
            row["name"] = swift(note.get("name"), str, forced=False)
            row["totalTracks"] = swift(
                note.get("totalTracks"), int, where=f"annotations[{pandora_id}].totalTracks"
            )
            row["type"] = "PL"
        rows.append(row)
    mine = [r for r in rows if r["pandoraId"] == made["pandoraId"]]
    assert mine, f"the PLAYLISTS list leaves the playlist out: {rv}"
    if mine[0]["type"] != "PL":
        raise ClientBroke(f"the playlist is not annotated: a nameless row, not clickable: {rv}")
    assert mine[0]["name"] == "Milkshake mix" and mine[0]["totalTracks"] == len(track_ids), mine

    tracks = _get_tracks(app, mine[0]["pandoraId"])
    assert [t["pandoraId"] for t in tracks] == track_ids, tracks
    _dj_play(app, tracks, tracks[1])
    assert [t["pandoraId"] for t in _get_tracks(app, tracks[1]["playlistId"])] == track_ids
