"""Replay of Milkshake, the macOS Pandora client in Swift by Dean Liu.

Repository: github.com/skiptomyliu/milkshake, HEAD ece3fb982a5fbc368989ee25378400c976d2f9c5
(2022-08-28). Files followed: `Milkshake/API.swift` (every request), `Milkshake/constants.swift`
(URLs, tuner partner keys), `Milkshake/Crypt.m` (Blowfish of the tuner login),
`Milkshake/LoginViewController.swift`, `Milkshake/AppDelegate.swift` (`handleSuccessLogin`),
`Milkshake/MainViewController.swift` (search, create station, shuffle, album, `playStation`),
`Milkshake/Callback.swift`, `Milkshake/Util.swift` (the parsers: `parseStationSearchIntoItems`,
`parseStationIntoItems`, `parseSearchIntoItems`, `parseCreateStation`,
`parseAlbumIntoTracks`), `Milkshake/Radio.swift` (`playStation`, `playNext`, thumbs),
`Milkshake/SearchTableCellView.swift` (thumb and shuffle buttons), `Milkshake/DJ.swift`
(on-demand play) and `Milkshake/Music.swift` (`playAudio`: an `AVURLAsset` on the audioURL).
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

Left out (see the report): `/api/v4/catalog/annotateObjectsSimple`, `/api/v4/catalog/getDetails`,
`/api/v5/collections/getSortedArtists`, `/api/v5/collections/getSortedPlaylists`,
`/api/v6/playlists/getTracks` (on-demand library, later versions); `station/trackStarted` is
defined in API.swift but never called.
"""

from __future__ import annotations

import json
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


def _setup(app: Milkshake, path: str, body: dict[str, Any]) -> Any:
    """Set-up only (not a Milkshake call): a v1 call with the listener's token."""
    response = httpx.post(
        app.base + "/api/v1/" + path,
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
    # Radio.playNext -> Music.playAudio(audioURL) (then v4 annotateObjectsSimple, left out)
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


# --- Premium: album and on-demand ------------------------------------------------------------


def test_album_and_on_demand_play(airwave: Server, premium_account: Account) -> None:
    """MainViewController.cellAlbumSelectedProtocol -> API.albumToken (v1/music/album) ->
    Util.parseAlbumIntoTracks (then v4 annotateObjectsSimple, left out) -> DJ.playTrack ->
    API.getAudioPlaybackInfoPandoraId -> DJ.callbackAudio -> Music.playAudio."""
    app = _rest_sign_in(airwave.url, premium_account)
    album_id = None
    for name in _artist_names(app):
        for item in _v1_search(app, name, ["AR"]):
            artist = _setup(app, "music/artist", {"token": item["pandoraId"]})
            if artist["discography"]:
                album_id = artist["discography"][0]["pandoraId"]
                break
        if album_id:
            break
    assert album_id is not None
    album = _ok(app.request("/api/v1/music/album", {"token": album_id}), "music/album")
    tracks = swift(album.get("tracks"), "[[String: Any]]", forced=False) or []
    assert tracks, f"an empty album is shown: {album}"
    source = swift(album.get("pandoraId"), str, forced=False)
    for i, track in enumerate(tracks):
        art = swift(track.get("albumArt"), list, forced=False)
        if art is not None and len(art) > 1 and len(art) < 3:
            raise ClientBroke(f"tracks[{i}].albumArt has {len(art)} images; [2] crashes")
        swift(track.get("pandoraId"), str, where=f"tracks[{i}].pandoraId")  # callbackAlbum `!`
        swift(track.get("trackLength"), int, where=f"tracks[{i}].trackLength")
    if source is None:
        raise ClientBroke("`item.albumId!` in getAudioPlaybackInfoPandoraId crashes")
    rv = app.request(
        "/api/v1/ondemand/getAudioPlaybackInfo",
        {"pandoraId": tracks[0]["pandoraId"], "sourcePandoraId": source},
    )
    url = swift(rv.get("audioURL"), str, forced=False)
    if url is None:
        raise ClientBroke(f"DJ.callbackAudio: no audioURL, nothing plays: {rv}")
    _play_audio(app, url)
