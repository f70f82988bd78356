"""Replay of TingPing/pandora-rest, the Python REST client written for Pithos.

Repository https://github.com/TingPing/pandora-rest, commit 262f57cf3f8829db1a6e2da14eb1ce53d46be7ff
(2017-12-26): `pandora.py` (class `Client` and the model classes that read every answer),
`soupy.py` (its libsoup transport) and `__main__.py` (the demo flow that drives the library).

What the client does on the wire (`soupy.Session` over one `Soup.Session` with a cookie jar):
- `Client.login` first sends `HEAD https://www.pandora.com` (`_get_csrf_token`), reads
  `session.cookies['csrftoken']` from the jar (a KeyError when absent) and from then on sends it
  as `X-CsrfToken`; the jar sends the cookie itself, and keeps whatever the API sets (session
  cookie) for later requests.
- `Client._send_message` POSTs `https://www.pandora.com/api/{method}` with exactly two headers
  set by the client, `X-CsrfToken` and `X-AuthToken` (an empty string before login), and the body
  `json.dumps(body)` with `Content-Type: application/json;charset=utf-8` (`Message.json_body`).
  No User-Agent. Any status other than 200 raises `SoupException.new_from_message`, which reads
  `message`, `errorCode` and `errorString` from the error body with `data[...]`.
- Each answer is turned into a model object with `data['key']` (KeyError on a missing field),
  `data.get('art', [])` lists of `{size, url}`, `int(...)`, `float(...)` and enum lookups
  (`TrackRating(int(rating))`, `ResultType(type)`, `RecommendationType(key)`).
- `__main__.py` downloads `track.audio_url` with a fresh `soupy.Session().get` (a plain GET,
  no Range, status must be 200) and the 500 px station and cover art the same way.

The `_parse_*` functions below read an answer exactly as the model class of the same name does.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from readers import ClientBroke, py
from support import Server

Account = Any  # tests/clients/conftest.py's Account: .username, .password


# --- the model classes of pandora.py, read as strictly as Python reads them ------------------


def _list(value: Any, where: str) -> list[Any]:
    """`for i in value`: a TypeError unless iterable (None breaks it)."""
    if not isinstance(value, list):
        raise ClientBroke(f"Python: iterating {where} raised TypeError on {value!r}")
    return value


def _get(value: Any, key: str, default: Any) -> Any:
    """`value.get(key, default)`: an AttributeError unless value is a dict."""
    if not isinstance(value, dict):
        raise ClientBroke(f"Python: {value!r}.get({key!r}) raised AttributeError")
    return value.get(key, default)


def _art(items: Any, where: str) -> dict[int, str]:
    """`Art({i['size']: i['url'] for i in data.get('art', [])})`."""
    return {py(i, "size"): py(i, "url") for i in _list(items, where)}


def _int(value: Any, where: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ClientBroke(f"Python: int({value!r}) at {where}: {type(exc).__name__}") from None


def _float(value: Any, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise ClientBroke(f"Python: float({value!r}) at {where}: {type(exc).__name__}") from None


def _enum(value: Any, allowed: tuple[Any, ...], enum: str) -> Any:
    if value not in allowed:
        raise ClientBroke(f"Python: {enum}({value!r}) raised ValueError (valid: {allowed})")
    return value


def _parse_track_base(d: Any) -> dict[str, Any]:
    """pandora.TrackBase.__init__."""
    out = {
        key: py(d, key)
        for key in (
            "musicId",
            "songTitle",
            "albumTitle",
            "artistName",
            "albumSeoToken",
            "artistSeoToken",
            "trackSeoToken",
            "amazonUrl",
        )
    }
    out["length"] = _int(_get(d, "trackLength", 0), "trackLength")
    out["art"] = _art(_get(d, "albumArt", []), "albumArt")
    return out


def _lyric_snippet(d: Any) -> tuple[Any, Any]:
    """`data.get('lyricSnippet', {}).get('lyricId', '')` and `.get('checksum', 0)`."""
    snippet = _get(d, "lyricSnippet", {})
    return _get(snippet, "lyricId", ""), _get(snippet, "checksum", 0)


def _parse_track(d: Any) -> dict[str, Any]:
    """pandora.Track (v1/playlist/getFragment, v1/ondemand/getReplayTrack)."""
    out = _parse_track_base(d)
    out["artistMusicId"] = py(d, "artistMusicId")
    out["token"] = py(d, "trackToken")
    out["stationId"] = py(d, "stationId")
    out["audioURL"] = py(d, "audioURL")
    out["rating"] = _enum(_int(py(d, "rating"), "rating"), (0, 1, 2), "TrackRating")
    out["gain"] = _float(_get(d, "fileGain", 0.0), "fileGain")
    out["audioEncoding"] = py(d, "audioEncoding")
    out["artistArt"] = _art(_get(d, "artistArt", []), "artistArt")
    for key in ("genre", "isSeed", "isBookmarked"):
        out[key] = py(d, key)
    out["lyricId"], out["lyricChecksum"] = _lyric_snippet(d)
    return out


def _parse_station(d: Any) -> dict[str, Any]:
    """pandora.StationBase (Station, StationInfo; createStation answers a Station too)."""
    keys = (
        "name",
        "stationId",
        "isShared",
        "isTransformAllowed",
        "isThumbprint",
        "isShuffle",
        "allowAddSeed",
        "genre",
        "allowDelete",
        "allowEditDescription",
        "allowRename",
    )
    out = {key: py(d, key) for key in keys}
    out["description"] = _get(d, "description", "")
    out["art"] = _art(_get(d, "art", []), "station art")
    return out


def _parse_station_seed(seed: Any) -> dict[str, Any]:
    """pandora.StationSeed: dispatches on `'artist' in seed`, then 'song', then 'genre'."""
    if "artist" in seed:
        artist = py(seed, "artist")
        art = _get(artist, "art", [])
        out = {
            "type": "artist",
            "artistMusicId": py(seed, "musicId"),
            "artistName": py(artist, "artistName"),
            "artistSeoToken": py(seed, "seoToken"),
        }
    elif "song" in seed:
        track = py(seed, "song")
        art = _get(track, "art", [])
        out = {
            "type": "song",
            "musicId": py(seed, "musicId"),
            "trackName": py(track, "songTitle"),
            "artistName": py(track, "artistSummary"),
            "albumTitle": py(track, "albumTitle"),
            "trackSeoToken": py(seed, "seoToken"),
        }
    elif "genre" in seed:
        genre = py(seed, "genre")
        art = _get(genre, "art", [])
        out = {
            "type": "genre",
            "genreMusicId": py(seed, "musicId"),
            "stationName": py(genre, "stationName"),
        }
    else:
        raise ClientBroke(f"pandora.StationSeed: no artist/song/genre in {seed!r}")
    out["art"] = _art(art, "seed art")
    return out


def _parse_station_info(d: Any) -> dict[str, Any]:
    """pandora.StationInfo (v1/station/getStationDetails)."""
    out = _parse_station(d)
    out["seeds"] = [_parse_station_seed(s) for s in _list(_get(d, "seeds", []), "seeds")]
    return out


def _parse_feedback(d: Any) -> dict[str, Any]:
    """pandora.Feedback (v1/station/getStationFeedback)."""
    out = _parse_track_base(d)
    out["feedbackId"] = py(d, "feedbackId")
    out["isPositive"] = py(d, "isPositive")
    return out


def _parse_artist_base(d: Any) -> dict[str, Any]:
    """pandora.ArtistBase."""
    out = {key: py(d, key) for key in ("name", "musicId", "seoToken")}
    out["art"] = _art(_get(d, "art", []), "artist art")
    return out


def _parse_album_base(d: Any) -> dict[str, Any]:
    """pandora.AlbumBase."""
    out = {key: py(d, key) for key in ("seoToken", "albumTitle")}
    out["art"] = _art(_get(d, "art", []), "album art")
    return out


def _parse_artist_info(d: Any) -> dict[str, Any]:
    """pandora.ArtistInfo (v1/music/artist) with DiscographyAlbum and SimilarArtist."""
    out = _parse_artist_base(d)
    out["bio"] = _get(d, "bio", "")
    out["isBookmarked"] = py(d, "isBookmarked")
    out["listenerCount"] = py(d, "listenerCount")
    out["discography"] = [
        {**_parse_album_base(a), "year": _get(a, "year", 0)}
        for a in _list(_get(d, "discography", []), "discography")
    ]
    out["similar"] = [_parse_artist_base(a) for a in _list(_get(d, "similar", []), "similar")]
    return out


def _parse_album_info(d: Any) -> dict[str, Any]:
    """pandora.AlbumInfo (v1/music/album) with InfoTrack."""
    out = _parse_album_base(d)
    out["review"] = _get(d, "review", "")
    for key in ("seoToken", "artistSeoToken", "artistName", "isBookmarked", "amazonUrl"):
        out[key] = py(d, key)
    out["tracks"] = [_parse_track_base(t) for t in _list(_get(d, "tracks", []), "tracks")]
    return out


def _parse_track_info(d: Any) -> dict[str, Any]:
    """pandora.TrackInfo (v1/music/track)."""
    out = _parse_track_base(d)
    out["focusTraits"] = _get(d, "focusTraits", [])
    out["lyricId"], out["lyricChecksum"] = _lyric_snippet(d)
    out["isBookmarked"] = py(d, "isBookmarked")
    out["similar"] = [_parse_track_base(t) for t in _list(_get(d, "similar", []), "similar")]
    return out


def _parse_lyric(d: Any) -> dict[str, Any]:
    """pandora.Lyric (v1/music/fullLyrics)."""
    out = {key: py(d, key) for key in ("lyricId", "checksum", "lines")}
    out["credits"] = _get(d, "credits", [])
    return out


def _parse_search_result(r: Any) -> dict[str, Any]:
    """pandora.SearchResult (v1/search/fullSearch): `ResultType(result['type'])` first."""
    kind = _enum(py(r, "type"), ("track", "artist", "genre"), "ResultType")
    if kind == "artist":
        out = {
            "artistName": py(r, "name"),
            "artistMusicId": py(r, "musicId"),
            "artistSeoToken": py(r, "seoToken"),
            "listenerCount": py(r, "listenerCount"),
        }
    elif kind == "track":
        out = {
            "artistName": py(r, "artistName"),
            "trackName": py(r, "name"),
            "musicId": py(r, "musicId"),
            "trackSeoToken": py(r, "seoToken"),
        }
    else:
        out = {
            "stationName": py(r, "name"),
            "genreMusicId": py(r, "musicId"),
            "listenerCount": py(r, "listenerCount"),
        }
    out["type"] = kind
    out["art"] = _art(_get(r, "art", []), "search art")
    return out


def _parse_seed_suggestion(s: Any) -> dict[str, Any]:
    """pandora.StationSeedSuggestion (v1/search/getSeedSuggestions)."""
    out = {key: py(s, key) for key in ("name", "musicId", "listenerCount")}
    out["art"] = _art(_get(s, "art", []), "suggestion art")
    return out


def _parse_recommendation(rec: Any, kind: str) -> dict[str, Any]:
    """pandora.StationRecommendation: `RecommendationType(k)` for each key of the answer."""
    _enum(kind, ("genreStations", "artists"), "RecommendationType")
    out: dict[str, Any] = {"name": py(rec, "name"), "musicId": py(rec, "musicId")}
    if kind == "artists":
        out["art"] = _art(_get(rec, "art", []), "recommendation art")
    else:
        out["description"] = _get(rec, "description", "")
        out["sampleTracks"] = [
            _parse_track_base(t) for t in _list(_get(rec, "sampleTracks", []), "sampleTracks")
        ]
        out["art"] = _art(_get(rec, "headerArt", []), "headerArt")
    out["listenerCount"] = py(rec, "listenerCount")
    return out


def _parse_genre_category(c: Any) -> dict[str, Any]:
    """pandora.GenreCategory (v1/music/genrecategories)."""
    out = {key: py(c, key) for key in ("name", "token", "stationCount", "listenerCount")}
    out["art"] = _art(_get(c, "art", []), "category art")
    return out


def _parse_genre_station(s: Any) -> dict[str, Any]:
    """pandora.GenreStation (v1/music/genres)."""
    out = {key: py(s, key) for key in ("name", "musicId", "listenerCount")}
    out["description"] = _get(s, "description", "")
    out["art"] = _art(_get(s, "art", []), "genre art")
    out["sampleTracks"] = [
        _parse_track_base(t) for t in _list(_get(s, "sampleTracks", []), "sampleTracks")
    ]
    return out


def _art_url_for_size(art: dict[int, str], size: int) -> str:
    """pandora.Art.get_url_for_size: the closest size at or above, else the largest."""
    if not art:
        return ""
    sizes = sorted(art)
    if size in sizes:
        return art[size]
    larger = [s for s in sizes if s >= size]
    return art[larger[0] if larger else sizes[-1]]


# --- the transport: pandora.Client over soupy.Session ----------------------------------------


class SoupError(Exception):
    """soupy.SoupException as `new_from_message` builds it from an error answer."""

    def __init__(self, status: int, message: str, error_code: int, error_string: str) -> None:
        super().__init__(f"{error_string} ({error_code}): {message} [HTTP {status}]")
        self.status = status
        self.error_code = error_code
        self.error_string = error_string


class PandoraRest:
    """pandora.Client: one Soup session (with its cookie jar) for every call."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.http = httpx.Client(timeout=60)
        # libsoup sends no User-Agent and no Accept of its own; its content decoder asks for gzip.
        del self.http.headers["User-Agent"]
        del self.http.headers["Accept"]
        self.auth_token = ""
        self.csrf_token = ""

    def close(self) -> None:
        self.http.close()

    def get_csrf_token(self) -> str:
        """Client._get_csrf_token: `HEAD https://www.pandora.com`, then the jar's csrftoken."""
        response = self.http.head(self.base_url)
        if response.status_code != 200:  # soupy._send_message: anything but 200 raises
            raise ClientBroke(f"soupy: HEAD / answered {response.status_code}")
        cookies = {cookie.name: cookie.value for cookie in self.http.cookies.jar}
        return py(cookies, "csrftoken")

    def send(self, method: str, body: dict[str, Any]) -> Any:
        """Client._send_message: POST /api/{method}; soupy raises on anything but 200."""
        response = self.http.post(
            f"{self.base_url}/api/{method}",
            content=json.dumps(body).encode("utf-8"),
            headers={
                "X-CsrfToken": self.csrf_token,
                "X-AuthToken": self.auth_token,
                "Content-Type": "application/json;charset=utf-8",
            },
        )
        if response.status_code != 200:
            # soupy.SoupException.new_from_message: json.loads, then data['message'] etc.
            try:
                data = json.loads(response.content.decode("utf-8"))
            except ValueError:
                raise ClientBroke(
                    f"soupy: {method} answered {response.status_code} with a non-JSON body "
                    f"{response.text[:200]!r}: json.loads raised"
                ) from None
            raise SoupError(
                response.status_code,
                py(data, "message"),
                py(data, "errorCode"),
                py(data, "errorString"),
            )
        # soupy.Message.json_body: json.loads(data) if data else ''
        return json.loads(response.content.decode("utf-8")) if response.content else ""

    def call(self, method: str, body: dict[str, Any]) -> Any:
        """A call the client makes and expects to succeed (the library has no error handling)."""
        try:
            return self.send(method, body)
        except SoupError as exc:
            raise ClientBroke(f"pandora.Client: {method} raised SoupException: {exc}") from None

    def login(self, username: str, password: str) -> dict[str, Any]:
        """Client.login (pandora.py)."""
        self.csrf_token = self.get_csrf_token()
        response = self.call("v1/auth/login", {"username": username, "password": password})
        # flags = response.get('config', {}).get('flags', []);
        # self._hifi_available = 'highQualityStreamingAvailable' in flags
        flags = _get(_get(response, "config", {}), "flags", [])
        try:
            hifi = "highQualityStreamingAvailable" in flags
        except TypeError:
            raise ClientBroke(f"Python: `in` on flags {flags!r} raised TypeError") from None
        self.auth_token = py(response, "authToken")
        return {"hifi": hifi, "flags": flags}

    def search_raw(self, query: str) -> Any:
        """Client.search: the request; the answer is parsed by the caller."""
        return self.call(
            "v1/search/fullSearch", {"query": query, "type": "all", "maxItemsPerCategory": 50}
        )

    def create_station(self, music_id: str, search_query: str | None = None) -> Any:
        """Client.create_station: 'mc' + id for tracks (S...), 'mi' + id otherwise; no name."""
        sig = "mc" if music_id.startswith("S") else "mi"
        return self.call(
            "v1/station/createStation",
            {"stationCode": sig + music_id, "stationName": "", "searchQuery": search_query or ""},
        )

    def fragment_raw(self, station_id: str) -> Any:
        """Client.get_playlist_fragment with its defaults (is_start=True, AudioFormat.MP3)."""
        return self.send(
            "v1/playlist/getFragment",
            {
                "stationId": station_id,
                "isStationStart": True,
                "fragmentRequestReason": "Normal",
                "audioFormat": "mp3",
            },
        )


@pytest.fixture
def client(airwave: Server, account: Account) -> Any:
    rest = PandoraRest(airwave.url)
    rest.login(account.username, account.password)
    yield rest
    rest.close()


def _find_music(rest: PandoraRest) -> dict[str, str]:
    """Music of the demo library, found the way a user of the client does: the genre stations
    (`get_genre_categories` / `get_genre_category_stations`) name artists, tracks and genres.

    Read loosely on purpose (`.get`): this only picks real ids for the later steps; the
    client's own reading of these answers is checked in `test_sign_in_and_browse`.
    """
    categories = rest.call("v1/music/genrecategories", {}).get("categories", [])
    token = categories[0]["token"]
    genres = rest.call("v1/music/genres", {"categoryToken": token})
    stations = genres.get("genres") or genres.get("stations") or []
    station = stations[0]
    sample = station["sampleTracks"][0]
    return {
        "genreMusicId": station["musicId"],
        "trackMusicId": sample["musicId"],
        "artistMusicId": sample["artistMusicId"],
        "artistName": sample["artistName"],
    }


def _station_from_artist(rest: PandoraRest) -> str:
    music = _find_music(rest)
    station = rest.create_station(music["artistMusicId"], music["artistName"])
    return py(station, "stationId")


# --- flows --------------------------------------------------------------------------------------


def test_sign_in_and_browse(airwave: Server, account: Account) -> None:
    """__main__.login, first half: sign in, genre categories and stations, recommendations,
    the explicit filter, the station list."""
    rest = PandoraRest(airwave.url)
    try:
        # Client.login -> _get_csrf_token: HEAD the site root; the csrftoken cookie must be set.
        # Then POST v1/auth/login {username, password} with `X-AuthToken: ""`.
        login = rest.login(account.username, account.password)
        # A free listener: `'highQualityStreamingAvailable' in flags` must be false.
        assert login["hifi"] is False, f"free tier read as high quality: flags={login['flags']!r}"

        # Client.get_genre_categories: v1/music/genrecategories {} -> GenreCategory(c)
        # for c in response.get('categories', []) (name, token, stationCount, listenerCount).
        response = rest.call("v1/music/genrecategories", {})
        categories = [_parse_genre_category(c) for c in _list(_get(response, "categories", []), "")]
        assert categories, "no genre categories to browse"

        # Client.get_genre_category_stations: v1/music/genres {categoryToken} ->
        # GenreStation(s) for s in response.get('genres', []): a missing `genres` list leaves the
        # user with an empty category.
        response = rest.call("v1/music/genres", {"categoryToken": categories[0]["token"]})
        stations = [_parse_genre_station(s) for s in _list(_get(response, "genres", []), "")]
        assert stations, f"v1/music/genres gave the client no `genres`: keys {sorted(response)}"

        # Client.get_station_recommendations: v1/search/getStationRecommendations {} ->
        # StationRecommendation(r, RecommendationType(k)) for k, v in response.items() for r in v.
        response = rest.call("v1/search/getStationRecommendations", {})
        if not isinstance(response, dict):
            raise ClientBroke(f"Python: response.items() on {response!r}")
        for kind, recs in response.items():
            for rec in _list(recs, kind):
                _parse_recommendation(rec, kind)

        # Client.get_explicit_content_filter: v1/listener/updateSettings {} ->
        # response['explicitContentFilterEnabled'].
        response = rest.call("v1/listener/updateSettings", {})
        assert py(response, "explicitContentFilterEnabled") is False

        # Client.get_stations: v1/station/getStations {pageSize: 250} -> response['stations'].
        response = rest.call("v1/station/getStations", {"pageSize": 250})
        assert [_parse_station(s) for s in _list(py(response, "stations"), "stations")] == []

        # Client.logout: v1/auth/logout {}.
        rest.call("v1/auth/logout", {})
    finally:
        rest.close()


def test_premium_sign_in_reads_high_quality(airwave: Server, premium_account: Account) -> None:
    """Client.login sets `_hifi_available` from `'highQualityStreamingAvailable' in flags`."""
    rest = PandoraRest(airwave.url)
    try:
        login = rest.login(premium_account.username, premium_account.password)
        assert login["hifi"] is True, f"premium read without high quality: {login['flags']!r}"
    finally:
        rest.close()


def test_search(client: PandoraRest) -> None:
    """Client.search: v1/search/fullSearch {query, type: 'all', maxItemsPerCategory: 50} ->
    SearchResult(r, query) for r in response['items']; every item goes through
    `ResultType(result['type'])` ('track', 'artist' or 'genre')."""
    music = _find_music(client)
    response = client.search_raw(music["artistName"])
    results = [_parse_search_result(r) for r in _list(py(response, "items"), "items")]
    assert any(r["type"] == "artist" for r in results)


def test_create_update_and_remove_stations(client: PandoraRest) -> None:
    """Station management: create from an artist, a track and a genre, list, details, rename,
    seeds, seed suggestions, delete."""
    music = _find_music(client)

    # Client.create_station(artist_music_id, search_query=...): stationCode 'mi' + R..,
    # stationName "" (no name given), searchQuery the query -> Station(response).
    artist_station = _parse_station(
        client.create_station(music["artistMusicId"], music["artistName"])
    )
    assert artist_station["name"], "a station created without a name must get the default name"
    # Client.create_station(music_id of a track): 'mc' + S.., searchQuery "".
    track_station = _parse_station(client.create_station(music["trackMusicId"]))
    # Client.create_station(genre_music_id): 'mi' + G...
    genre_station = _parse_station(client.create_station(music["genreMusicId"]))

    # Client.get_stations -> Station(s) for s in response['stations'].
    response = client.call("v1/station/getStations", {"pageSize": 250})
    stations = [_parse_station(s) for s in _list(py(response, "stations"), "stations")]
    assert {s["stationId"] for s in stations} >= {
        artist_station["stationId"],
        track_station["stationId"],
        genre_station["stationId"],
    }

    # Client.get_station_info(station, is_current_station=True): v1/station/getStationDetails
    # {stationId, isCurrentStation} -> StationInfo with StationSeed for each seed.
    for station, kind in ((artist_station, "artist"), (track_station, "song")):
        info = _parse_station_info(
            client.call(
                "v1/station/getStationDetails",
                {"stationId": station["stationId"], "isCurrentStation": True},
            )
        )
        assert [seed["type"] for seed in info["seeds"]] == [kind]
    info = _parse_station_info(
        client.call(
            "v1/station/getStationDetails",
            {"stationId": genre_station["stationId"], "isCurrentStation": False},
        )
    )
    assert [seed["type"] for seed in info["seeds"]] == ["genre"]

    # Client.update_station(station, name=...): v1/station/updateStation {stationId, name,
    # description} (the unchanged one is sent back as it was read).
    client.call(
        "v1/station/updateStation",
        {
            "stationId": artist_station["stationId"],
            "name": "Super Awesome Jams",
            "description": artist_station["description"],
        },
    )
    client.call(
        "v1/station/updateStation",
        {
            "stationId": artist_station["stationId"],
            "name": "Super Awesome Jams",
            "description": "Nothing but the most Super Awesome Jams",
        },
    )

    # Client.get_station_seed_suggestions(station, artist_music_id): v1/search/getSeedSuggestions
    # {stationId, seedMusicId, maxResults: 10} -> StationSeedSuggestion(s) for s in response:
    # the answer itself must be the list of artists.
    response = client.call(
        "v1/search/getSeedSuggestions",
        {
            "stationId": artist_station["stationId"],
            "seedMusicId": music["artistMusicId"],
            "maxResults": 10,
        },
    )
    suggestions = [_parse_seed_suggestion(s) for s in _list(response, "getSeedSuggestions")]
    assert suggestions

    # Client.add_station_seed / delete_station_seed: v1/station/addSeed and deleteSeed
    # {stationId, musicId} (answers unread).
    new_seed = suggestions[0]["musicId"]
    client.call(
        "v1/station/addSeed", {"stationId": artist_station["stationId"], "musicId": new_seed}
    )
    client.call(
        "v1/station/deleteSeed", {"stationId": artist_station["stationId"], "musicId": new_seed}
    )

    # Client.delete_station: v1/station/removeStation {stationId}.
    for station in (artist_station, track_station, genre_station):
        client.call("v1/station/removeStation", {"stationId": station["stationId"]})
    response = client.call("v1/station/getStations", {"pageSize": 250})
    assert _list(py(response, "stations"), "stations") == []


def test_play_a_station(client: PandoraRest) -> None:
    """__main__.login, second half: a fragment, the audio and art downloads, track started,
    pause/resume, then logout."""
    station_id = _station_from_artist(client)

    # Client.get_playlist_fragment(station): v1/playlist/getFragment {stationId,
    # isStationStart: true, fragmentRequestReason: 'Normal', audioFormat: 'mp3'} ->
    # Track(t) for t in response['tracks'].
    response = client.fragment_raw(station_id)
    tracks = [_parse_track(t) for t in _list(py(response, "tracks"), "tracks")]
    assert tracks
    track = tracks[0]
    assert track["audioEncoding"] == "mp3"

    # __main__: soupy.Session().get(track.audio_url): a new session (no cookies, no headers),
    # a plain GET; soupy needs 200 and keeps response.body.
    with httpx.Client(timeout=60) as player:
        del player.headers["User-Agent"]
        audio = player.get(track["audioURL"])
        assert audio.status_code == 200, audio.text[:300]
        assert audio.content[:3] == b"ID3" or audio.content[:2] in (b"\xff\xfb", b"\xff\xf3")

        # __main__: station.art.get_url_for_size(500) and track.art.get_url_for_size(500),
        # fetched the same way when non-empty.
        station = _parse_station(
            client.call(
                "v1/station/getStationDetails", {"stationId": station_id, "isCurrentStation": True}
            )
        )
        for art in (station["art"], track["art"]):
            url = _art_url_for_size(art, 500)
            if url:
                picture = player.get(url)
                assert picture.status_code == 200, url

    # Client.track_started: v1/station/trackStarted {trackToken}.
    client.call("v1/station/trackStarted", {"trackToken": track["token"]})
    # Client.playback_paused: v1/station/playbackPaused {}.
    client.call("v1/station/playbackPaused", {})
    # Client.playback_resumed(): v1/station/playbackResumed {forceActive: false}.
    client.call("v1/station/playbackResumed", {"forceActive": False})
    # Client.logout: v1/auth/logout {}.
    client.call("v1/auth/logout", {})


def test_stream_violation_then_force_active(airwave: Server, account: Account) -> None:
    """__main__.login: `get_playlist_fragment` raising (another device is playing) is caught;
    the demo then calls `playback_resumed(force_active=True)` and asks again."""
    first, second = PandoraRest(airwave.url), PandoraRest(airwave.url)
    try:
        first.login(account.username, account.password)
        station_id = _station_from_artist(first)
        first.fragment_raw(station_id)  # the other device of the account is now playing

        second.login(account.username, account.password)
        with pytest.raises(SoupError) as caught:
            second.fragment_raw(station_id)
        assert caught.value.error_string == "STREAM_VIOLATION"

        # Client.playback_resumed(force_active=True): {forceActive: true}.
        second.call("v1/station/playbackResumed", {"forceActive": True})
        response = second.call(
            "v1/playlist/getFragment",
            {
                "stationId": station_id,
                "isStationStart": True,
                "fragmentRequestReason": "Normal",
                "audioFormat": "mp3",
            },
        )
        assert _list(py(response, "tracks"), "tracks")
    finally:
        first.close()
        second.close()


def test_feedback_tired_and_bookmarks(client: PandoraRest) -> None:
    """Rating, the station's feedback list, tired, bookmarks. Track tokens and ids are those the
    client's Track objects carry (`token` = trackToken, `music_id`, `artist_music_id`)."""
    station_id = _station_from_artist(client)
    tracks = py(client.fragment_raw(station_id), "tracks")
    loved, banned, tired = tracks[0], tracks[1], tracks[2]

    # Client.rate_track(track, LOVED) on an unrated track: v1/station/addFeedback
    # {trackToken, isPositive: true}; BANNED: isPositive false.
    client.call("v1/station/addFeedback", {"trackToken": loved["trackToken"], "isPositive": True})
    client.call("v1/station/addFeedback", {"trackToken": banned["trackToken"], "isPositive": False})

    # Client.get_station_feedback(station, LOVED): v1/station/getStationFeedback {pageSize: 10,
    # startIndex: 0, stationId, positive: true} -> Feedback(f) for f in .get('feedback', []).
    response = client.call(
        "v1/station/getStationFeedback",
        {"pageSize": 10, "startIndex": 0, "stationId": station_id, "positive": True},
    )
    feedback = [_parse_feedback(f) for f in _list(_get(response, "feedback", []), "feedback")]
    assert [f["musicId"] for f in feedback] == [loved["musicId"]]

    # Client.delete_feedback(feedback): v1/station/deleteFeedback {feedbackId, isPositive}.
    client.call(
        "v1/station/deleteFeedback",
        {"feedbackId": feedback[0]["feedbackId"], "isPositive": feedback[0]["isPositive"]},
    )
    # Client.rate_track(track, NONE) on a banned track: v1/station/deleteFeedback
    # {trackToken, isPositive: false}.
    client.call(
        "v1/station/deleteFeedback", {"trackToken": banned["trackToken"], "isPositive": False}
    )
    response = client.call(
        "v1/station/getStationFeedback",
        {"pageSize": 10, "startIndex": 0, "stationId": station_id, "positive": False},
    )
    assert _list(_get(response, "feedback", []), "feedback") == []

    # Client.tired_track: v1/listener/addTiredSong {trackToken}.
    client.call("v1/listener/addTiredSong", {"trackToken": tired["trackToken"]})

    # Client.add_bookmark / delete_bookmark with a track's music_id and its artist_music_id:
    # v1/bookmark/add {musicId} and v1/bookmark/delete {musicId}.
    for music_id in (loved["musicId"], loved["artistMusicId"]):
        client.call("v1/bookmark/add", {"musicId": music_id})
    for music_id in (loved["musicId"], loved["artistMusicId"]):
        client.call("v1/bookmark/delete", {"musicId": music_id})


def test_track_details_and_lyrics(client: PandoraRest) -> None:
    """__main__.login: artist, track and album info from a playlist track's seo tokens, the
    lyrics of the first track that has a lyric snippet, and a search for the track's title."""
    station_id = _station_from_artist(client)
    tracks = py(client.fragment_raw(station_id), "tracks")
    track = tracks[0]

    # Client.get_artist_info(track.artist_seo_token): v1/music/artist {token}.
    _parse_artist_info(client.call("v1/music/artist", {"token": track["artistSeoToken"]}))
    # Client.get_track_info(track.track_seo_token): v1/music/track {token}.
    _parse_track_info(client.call("v1/music/track", {"token": track["trackSeoToken"]}))
    # Client.get_album_info(track.album_seo_token): v1/music/album {token}.
    _parse_album_info(client.call("v1/music/album", {"token": track["albumSeoToken"]}))

    # Client.get_lyrics(track): only when the Track has lyric_id and lyric_checksum;
    # v1/music/fullLyrics {trackUid: music_id, lyricId, checksum, nonExplicit: false}.
    # Search the station's tracks (more fragments) for one with a lyric snippet.
    with_lyrics = None
    for _ in range(6):
        for t in tracks:
            lyric_id, checksum = _lyric_snippet(t)
            if lyric_id and checksum:
                with_lyrics = (t, lyric_id, checksum)
                break
        if with_lyrics:
            break
        tracks = py(client.fragment_raw(station_id), "tracks")
    if with_lyrics is not None:
        t, lyric_id, checksum = with_lyrics
        lyric = _parse_lyric(
            client.call(
                "v1/music/fullLyrics",
                {
                    "trackUid": t["musicId"],
                    "lyricId": lyric_id,
                    "checksum": checksum,
                    "nonExplicit": False,
                },
            )
        )
        assert lyric["lines"]

    # Client.search(track.title).
    response = client.search_raw(track["songTitle"])
    results = [_parse_search_result(r) for r in _list(py(response, "items"), "items")]
    assert any(r["type"] == "track" for r in results)


def test_replay_track(airwave: Server, premium_account: Account) -> None:
    """Client.get_replay_track: v1/ondemand/getReplayTrack {stationId, trackToken,
    lastPlayedTrackToken} -> Track(response['replayTrack']) (a tier with replays)."""
    rest = PandoraRest(airwave.url)
    try:
        rest.login(premium_account.username, premium_account.password)
        station_id = _station_from_artist(rest)
        tracks = py(rest.fragment_raw(station_id), "tracks")
        for t in tracks[:2]:
            rest.call("v1/station/trackStarted", {"trackToken": t["trackToken"]})
        response = rest.call(
            "v1/ondemand/getReplayTrack",
            {
                "stationId": tracks[0]["stationId"],
                "trackToken": tracks[0]["trackToken"],
                "lastPlayedTrackToken": tracks[1]["trackToken"],
            },
        )
        replay = _parse_track(py(response, "replayTrack"))
        assert replay["musicId"] == tracks[0]["musicId"]
    finally:
        rest.close()


def test_explicit_content_filter(client: PandoraRest, account: Account) -> None:
    """Client.set_explicit_content_filter: v1/listener/updateAccount {currentUsername,
    currentPassword, enableExplicitContentFilter}; read back by get_explicit_content_filter."""
    client.call(
        "v1/listener/updateAccount",
        {
            "currentUsername": account.username,
            "currentPassword": account.password,
            "enableExplicitContentFilter": True,
        },
    )
    response = client.call("v1/listener/updateSettings", {})
    assert py(response, "explicitContentFilterEnabled") is True
