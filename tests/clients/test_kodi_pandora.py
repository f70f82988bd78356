"""Replay of srhamil/plugin.audio.pandora, a Kodi add-on for Pandora (version 2.1.16).

Repository https://github.com/srhamil/plugin.audio.pandora, commit
0bbf2e2ca0ded346bb54508c0aeeff2df4a5b2ad: `resources/lib/pandora.py` (class `PandoraClient`, the
HTTP layer), `default.py` (the plugin: one Kodi invocation per directory listing or action) and
`service.py` (asks `default.py` for `action=append` when the queue runs low).

What it sends:
- `PandoraClient._get_csrf`: `GET https://www.pandora.com/` with `User-Agent: Mozilla/5.0`
  through urllib with an `HTTPCookieProcessor`; the `csrftoken` cookie of the jar becomes
  `csrf_token`.
- `PandoraClient._post`: POST `/api{path}` with `Content-Type: application/json`,
  `User-Agent: Mozilla/5.0`, `X-CsrfToken`, and `X-AuthToken` only once logged in (absent on
  login); body `json.dumps(payload)`; the jar sends its cookies. A non-2xx answer or a 200 whose
  body is not JSON raises `PandoraError` (the add-on then shows the error); every answer is read
  with `.get(...)` except `st["stationId"]` in `list_stations`.
- `default.py` caches `authToken` and the csrf value in Kodi window properties; each later
  invocation (`make_client`) builds a new client whose jar holds only a rebuilt `csrftoken` cookie
  (`_csrf_cookie`: domain www.pandora.com, Secure). The replay sends that cookie as it goes to the
  add-on's host over HTTPS (Airwave's normal transport); the session cookie of the login is gone.
  On a `PandoraError`, `with_client` clears the cache, logs in afresh and retries once.
- Kodi plays each track's `audioURL` with its curl file layer: `CFileItem::FillInMimeType` asks
  for the type with a HEAD (`CCurlFile::Stat`, CURLOPT_NOBODY), then `CCurlFile::Open` GETs with
  `Range: bytes=0-` (`CReadState::SetResume`) and a `Kodi/...` User-Agent, failing on >= 400.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from readers import ClientBroke, py
from support import Server

Account = Any  # tests/clients/conftest.py's Account: .username, .password

KODI_UA = "Kodi/21.0 (X11; Linux x86_64) App_Bitness/64 Version/21.0-(21.0.0)-Git:20240406"


class PandoraError(Exception):
    """resources/lib/pandora.PandoraError: what `_post` raises on a failed call."""


class KodiPandora:
    """resources/lib/pandora.PandoraClient, one per plugin invocation."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        # urllib.request: Accept-Encoding identity, Connection close, no Accept.
        self.http = httpx.Client(timeout=60, headers={"Accept-Encoding": "identity"})
        del self.http.headers["Accept"]
        self.http.headers["Connection"] = "close"
        self.csrf_token: str | None = None
        self.auth_token: str | None = None

    def close(self) -> None:
        self.http.close()

    @classmethod
    def from_cache(cls, base_url: str, cache: dict[str, str]) -> KodiPandora:
        """default.make_client: a new client with the cached tokens and a rebuilt csrftoken
        cookie (default._csrf_cookie), nothing else in its jar."""
        client = cls(base_url)
        client.auth_token = cache["token"]
        client.csrf_token = cache["csrf"]
        client.http.cookies.set("csrftoken", cache["csrf"])
        return client

    def get_csrf(self) -> None:
        """PandoraClient._get_csrf: GET {BASE}/ (an HTTP error is ignored), then the jar."""
        self.http.get(self.base_url + "/", headers={"User-Agent": "Mozilla/5.0"})
        for cookie in self.http.cookies.jar:
            if cookie.name == "csrftoken":
                self.csrf_token = cookie.value
                return
        raise PandoraError("Could not obtain CSRF token (is Pandora reachable from your region?)")

    def post(self, path: str, payload: dict[str, Any]) -> Any:
        """PandoraClient._post."""
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Mozilla/5.0",
            "X-CsrfToken": self.csrf_token or "",
        }
        if self.auth_token:
            headers["X-AuthToken"] = self.auth_token
        response = self.http.post(
            f"{self.base_url}/api{path}",
            content=json.dumps(payload).encode("utf-8"),
            headers=headers,
        )
        if not 200 <= response.status_code < 300:  # urllib raises HTTPError
            try:
                body = json.loads(response.content.decode("utf-8"))
                msg = body.get("message") or body.get("errorString")
            except Exception:
                msg = f"HTTP Error {response.status_code}"
            raise PandoraError(f"{msg} ({path}) [HTTP {response.status_code}]")
        try:
            return json.loads(response.content.decode("utf-8"))
        except ValueError:
            raise PandoraError(f"Non-JSON response from {path} (session expired?)") from None

    def login(self, username: str, password: str) -> Any:
        """PandoraClient.login: the csrf bootstrap, then v1/auth/login with keepLoggedIn."""
        if not self.csrf_token:
            self.get_csrf()
        data = self.post(
            "/v1/auth/login", {"username": username, "password": password, "keepLoggedIn": True}
        )
        self.auth_token = data.get("authToken")
        if not self.auth_token:
            raise PandoraError("Login succeeded but no auth token returned")
        return data

    def get_fragment(self, station_id: str, is_start: bool) -> Any:
        """PandoraClient.get_fragment: aacplus, and three null fields of the web player."""
        data = self.post(
            "/v1/playlist/getFragment",
            {
                "stationId": station_id,
                "isStationStart": is_start,
                "fragmentRequestReason": "Normal",
                "audioFormat": "aacplus",
                "startingAtTrackId": None,
                "onDemandArtistMessageArtistUidHex": None,
                "onDemandArtistMessageIdHex": None,
            },
        )
        return data.get("tracks", [])


def _ok(call: Any, what: str) -> Any:
    """A call the add-on needs: its PandoraError is the add-on's error notification."""
    try:
        return call()
    except PandoraError as exc:
        raise ClientBroke(f"plugin.audio.pandora: {what} failed: {exc}") from None


def _sign_in(airwave: Server, account: Account) -> dict[str, str]:
    """default.get_client on a cache miss: default.login -> PandoraClient.login, then the
    token and csrf value go to the window-property cache."""
    client = KodiPandora(airwave.url)
    try:
        _ok(lambda: client.login(account.username, account.password), "login")
        assert client.auth_token and client.csrf_token
        return {"token": client.auth_token, "csrf": client.csrf_token}
    finally:
        client.close()


def _pandora_id_of_an_artist(airwave: Server, cache: dict[str, str]) -> tuple[str, str]:
    """Set-up, not the add-on: an artist's pandoraId and name, found with v1/search/fullSearch
    (the add-on's own search, v3/sod/search, is replayed in test_search_for_a_station)."""
    with httpx.Client(timeout=30) as http:
        http.cookies.set("csrftoken", cache["csrf"])
        headers = {"X-CsrfToken": cache["csrf"], "X-AuthToken": cache["token"]}
        categories = http.post(
            f"{airwave.url}/api/v1/music/genrecategories", json={}, headers=headers
        ).json()["categories"]
        genres = http.post(
            f"{airwave.url}/api/v1/music/genres",
            json={"token": categories[0]["token"]},
            headers=headers,
        ).json()["stations"]
        name = genres[0]["sampleTracks"][0]["artistName"]
        items = http.post(
            f"{airwave.url}/api/v1/search/fullSearch",
            json={"query": name, "types": ["AR"]},
            headers=headers,
        ).json()["items"]
    return items[0]["pandoraId"], name


def _track_listitem(track: Any) -> dict[str, Any]:
    """default.track_listitem: what it reads from a track (all with .get, int() on two)."""
    if not isinstance(track, dict):
        raise ClientBroke(f"Python: {track!r}.get raised AttributeError")
    item = {
        "title": track.get("songTitle", "Unknown"),
        "artist": track.get("artistName", ""),
        "album": track.get("albumTitle", ""),
        "token": track.get("trackToken"),
    }
    try:
        item["duration"] = int(track.get("trackLength", 0))
        item["rated"] = int(track.get("rating", 0)) > 0
    except (TypeError, ValueError) as exc:
        raise ClientBroke(f"Python: int() on a track field raised {type(exc).__name__}") from None
    art = track.get("albumArt", [])
    if art:
        item["thumb"] = py(art, -1).get("url")
    return item


def _queue(tracks: Any, limit: int = 4) -> list[dict[str, Any]]:
    """default.list_station_tracks / do_append: tracks[:limit] with an audioURL become
    playable items (the others are skipped); `tracks_per_page` defaults to 4."""
    if not isinstance(tracks, list):
        raise ClientBroke(f"Python: slicing tracks raised TypeError on {tracks!r}")
    queued = []
    for track in tracks[:limit]:
        item = _track_listitem(track)
        url = track.get("audioURL")
        if url:
            queued.append({**item, "url": url})
    return queued


def _kodi_plays(url: str) -> bytes:
    """Kodi's player on a plugin item's URL: HEAD for the mime type, then GET from byte 0."""
    with httpx.Client(timeout=60, headers={"User-Agent": KODI_UA}) as curl:
        curl.headers["Accept-Charset"] = "UTF-8,*;q=0.8"
        head = curl.head(url)
        assert head.status_code < 400, f"HEAD {url}: {head.status_code} {head.text[:200]}"
        assert head.headers.get("content-type", "").startswith("audio/"), head.headers
        body = curl.get(url, headers={"Range": "bytes=0-"})
        assert body.status_code in (200, 206), f"GET {url}: {body.status_code}"
        assert body.content, "no audio"
        return body.content


# --- flows --------------------------------------------------------------------------------------


def test_settings_test_login(airwave: Server, account: Account) -> None:
    """default.do_test_login (the settings page's button): a fresh PandoraClient logs in."""
    client = KodiPandora(airwave.url)
    try:
        # PandoraClient._get_csrf: GET / with User-Agent Mozilla/5.0 sets the csrftoken cookie.
        # PandoraClient.login: POST /v1/auth/login {username, password, keepLoggedIn: true}, no
        # X-AuthToken header; data.get("authToken") must be non-empty.
        data = _ok(lambda: client.login(account.username, account.password), "login")
        assert data.get("authToken")
    finally:
        client.close()


def _station_list(client: Any) -> list[Any]:
    """PandoraClient.get_stations: /v1/station/getStations {pageSize: 250} ->
    data.get("stations", [])."""
    return _ok(
        lambda: client.post("/v1/station/getStations", {"pageSize": 250}), "getStations"
    ).get("stations", [])


def test_list_stations_on_first_start(airwave: Server, account: Account) -> None:
    """default.list_stations (the add-on's root): log in on a cache miss, then getStations."""
    client = KodiPandora(airwave.url)
    try:
        _ok(lambda: client.login(account.username, account.password), "login")
        # a new listener has no stations (only the Search entry is shown)
        assert _station_list(client) == []
    finally:
        client.close()


def test_search_for_a_station(airwave: Server, account: Account) -> None:
    """default.do_search: PandoraClient.search posts /v3/sod/search {query, types: ["ar",
    "tr"], listener: null, start: 0, count: 20, annotate: true, searchTime: 0} and reads
    `annotations` (pandoraId -> object) for each id in `results`; each annotation needs
    `pandoraId`, `type` "AR" (with `name`) or "TR" (with `artistName`, `name`) and an icon:
    `r.get("icon", {}).get("artUrl") or r.get("art", [{}])[-1].get("url")`."""
    cache = _sign_in(airwave, account)
    _, name = _pandora_id_of_an_artist(airwave, cache)
    client = KodiPandora.from_cache(airwave.url, cache)
    try:
        payload = {
            "query": name,
            "types": ["ar", "tr"],
            "listener": None,
            "start": 0,
            "count": 20,
            "annotate": True,
            "searchTime": 0,
        }
        data = _ok(lambda: client.post("/v3/sod/search", payload), "search (v3/sod/search)")
        annotations = data.get("annotations", {})
        results = [annotations.get(pid) for pid in data.get("results", [])]
        results = [r for r in results if r]
        assert results, f"the search for {name!r} listed nothing: {data!r}"
        labels = []
        for r in results:
            if not r.get("pandoraId"):
                continue
            if r.get("type") == "AR":
                labels.append(r.get("name", "Unknown"))
            elif r.get("type") == "TR":
                labels.append(f"{r.get('artistName', '')} - {r.get('name', 'Unknown')}")
            else:
                continue
            icon = r.get("icon", {})
            if icon is not None and not isinstance(icon, dict):
                raise ClientBroke(f"Python: icon.get on {icon!r}")
            if not (icon and icon.get("artUrl")):
                art = r.get("art", [{}])
                py(art, -1)  # an empty art list raises IndexError
        assert name in labels
    finally:
        client.close()


def test_create_station_play_rate_and_continue(airwave: Server, account: Account) -> None:
    """default.do_create_station -> list_station_tracks, Kodi playing the queue, the context
    menu's Thumbs up / Thumbs down (do_feedback), service.py's append, delete_station."""
    cache = _sign_in(airwave, account)
    pandora_id, name = _pandora_id_of_an_artist(airwave, cache)

    # Invocation action=create_station (with_client -> make_client from the cache).
    client = KodiPandora.from_cache(airwave.url, cache)
    try:
        # PandoraClient.create_station: /v1/station/createStation {pandoraId, stationCode: null,
        # searchQuery: the query, creativeSource: "search"} -> .get("name"), .get("stationId").
        station = _ok(
            lambda: client.post(
                "/v1/station/createStation",
                {
                    "pandoraId": pandora_id,
                    "stationCode": None,
                    "searchQuery": name,
                    "creativeSource": "search",
                },
            ),
            "createStation",
        )
        station_id = station.get("stationId")
        assert station_id, f"no stationId: {station!r}"
        assert station.get("name")
        # ... which jumps into list_station_tracks(station_id, True): with_retry(get_fragment).
        tracks = _ok(lambda: client.get_fragment(station_id, True), "getFragment (start)")
    finally:
        client.close()
    queued = _queue(tracks)
    assert len(queued) == 4, f"{len(queued)} playable tracks of {tracks!r}"

    # Kodi plays the queue's URLs (HEAD for the mime type, GET with Range: bytes=0-).
    for item in queued[:2]:
        _kodi_plays(item["url"])

    # Invocation action=station (the root listing again, then the station): getStations reads
    # st["stationId"], st.get("name"), (st.get("art") or [])[-1].get("url").
    client = KodiPandora.from_cache(airwave.url, cache)
    try:
        stations = _ok(
            lambda: client.post("/v1/station/getStations", {"pageSize": 250}), "getStations"
        ).get("stations", [])
        assert [py(st, "stationId") for st in stations] == [station_id]
        for st in stations:
            art = st.get("art") or []
            if art:
                py(art, -1).get("url")
    finally:
        client.close()

    # Invocations action=feedback (context menu): PandoraClient.feedback ->
    # /v1/station/addFeedback {trackToken, isPositive: bool}.
    for item, positive in ((queued[0], True), (queued[1], False)):
        client = KodiPandora.from_cache(airwave.url, cache)
        try:
            _ok(
                lambda item=item, positive=positive, client=client: client.post(
                    "/v1/station/addFeedback",
                    {"trackToken": item["token"], "isPositive": bool(positive)},
                ),
                "addFeedback",
            )
        finally:
            client.close()

    # Invocation action=append (service.py, when the last queued track starts):
    # get_fragment(station_id, False).
    client = KodiPandora.from_cache(airwave.url, cache)
    try:
        more = _ok(lambda: client.get_fragment(station_id, False), "getFragment (append)")
    finally:
        client.close()
    appended = _queue(more)
    assert appended, f"append got no playable tracks: {more!r}"
    _kodi_plays(appended[0]["url"])

    # Invocation action=delete_station: PandoraClient.delete_station ->
    # /v1/station/removeStation {stationId}.
    client = KodiPandora.from_cache(airwave.url, cache)
    try:
        _ok(
            lambda: client.post("/v1/station/removeStation", {"stationId": station_id}),
            "removeStation",
        )
        assert _station_list(client) == []
    finally:
        client.close()


def test_cached_session_after_logout_logs_in_again(airwave: Server, account: Account) -> None:
    """default.with_client: a cached token the server no longer accepts makes the call fail
    with PandoraError; the add-on clears the cache, logs in afresh and retries once."""
    cache = _sign_in(airwave, account)
    # Another session of the account ends this one (here: the server forgets the token by
    # logout from the same token, as `airwave` would after expiry).
    with httpx.Client(timeout=30) as http:
        http.cookies.set("csrftoken", cache["csrf"])
        http.post(
            f"{airwave.url}/api/v1/auth/logout",
            json={},
            headers={"X-CsrfToken": cache["csrf"], "X-AuthToken": cache["token"]},
        )
    client = KodiPandora.from_cache(airwave.url, cache)
    try:
        try:
            client.post("/v1/station/getStations", {"pageSize": 250})
            raise AssertionError("a logged-out token was accepted")
        except PandoraError:
            pass  # with_client: clear_session(), get_client() -> a fresh login, retry
    finally:
        client.close()
    fresh = KodiPandora(airwave.url)
    try:
        _ok(lambda: fresh.login(account.username, account.password), "login (retry)")
        _ok(lambda: fresh.post("/v1/station/getStations", {"pageSize": 250}), "getStations")
    finally:
        fresh.close()
