"""Replay of libepimetheus (Kotlin), the Pandora REST library of the Epimetheus Android app.

Client: github.com/EpimetheusMusicPlayer/libepimetheusKotlin at 547586e2 (2019-08-11), files
`src/main/java/tk/hacker1024/libepimetheus/`: `Networking.kt` (every request), `User.kt`
(sign-in), `Stations.kt` (station list, shuffle, details, fragment, rename, delete, feedback
list), `Music.kt` (thumbs, tired), `Browse.kt` (recommendations, genres, station creation,
search, track details, lyrics) and the readers in `data/` (`Station.kt`, `Song.kt`,
`PandoraData.kt`, `feedback/FeedbackItem.kt`, `search/*.kt`, `search/details/TrackDetails.kt`).
How the app uses them (audio, art, call order): github.com/EpimetheusMusicPlayer/EpimetheusKotlin
at 70fc7e31, `service/data/EpimetheusMediaProvider.kt` and `StationProvider.kt` (ExoPlayer
2.9.2), `fragments/LoginFragment.kt`, `FeedbackFragment.kt`, `BrowseFragment.kt`.

What the client does on the wire (`Networking.makeApiRequest`):
- Before its first call, OkHttp 3.11 sends `HEAD {site}/`; its cookie jar keeps the response's
  `Set-Cookie` and `getCSRFToken` takes the `csrftoken` value (none: `LocationException`). The
  jar never sends cookies back (`loadForRequest` is empty), so the session cookies Airwave sets
  at login are never returned: each call carries only a hand-written `Cookie: csrftoken=...`.
- Every call: `POST {site}/api/{version}/{endpoint}`, `Content-Type: application/json;
  charset=utf-8`, body `JSONObject.toString()` (android org.json: compact, insertion order, `/`
  escaped, and `put(key, null)` *removes* the key, so the `null`s in the source are absent on
  the wire), headers `X-CsrfToken` and `X-AuthToken` (`""` at sign-in).
- Any answer is parsed as a JSONObject whatever the HTTP status; if it `has("errorCode")` the
  library throws (`throwError`: 0 + `AUTH_INVALID_USERNAME_PASSWORD` -> InvalidLogin, 1001 ->
  InvalidAuthToken, anything else -> InvalidRequest). Fields are read with org.json getters
  (`readers.OrgJson`): a missing key or a wrong kind throws JSONException.
- Audio: the Song's `audioURL` goes to ExoPlayer's `DefaultHttpDataSourceFactory("khtml")`: a
  plain GET from position 0 (no Range), `User-Agent: khtml`, `Accept-Encoding: identity`, any
  2xx accepted, the format sniffed from the bytes (ADTS for `aacplus`).
- Art: `PandoraData.getArtUrl(size)` picks an `{url, size}` entry (the app's default size 500)
  and Glide GETs that URL as given.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from clients.conftest import Account, make_account
from readers import ClientBroke, OrgJson, org_json_objects
from support import Server

OKHTTP_UA = "okhttp/3.11.0"  # libepimetheus build.gradle: com.squareup.okhttp3:okhttp:3.11.0
ART_SIZE = 500  # EpimetheusKotlin MainActivity.kt `Context.artSize`: preference default "500"
# data/PandoraData.kt: what getArtUrl falls back to when a list of art is empty (a pandora.com
# web asset, not part of the API; never requested here).
GENERIC_ART_URL = "https://www.pandora.com/web-version/1.25.1/images/album_500.png"


# --- The client's request machinery (Networking.kt) ------------------------------------------


class PandoraException(ClientBroke):
    """What `throwError` (Exceptions.kt) throws for an answer that has `errorCode`."""

    def __init__(self, kind: str, code: int, description: str, message: str) -> None:
        super().__init__(f"{kind}: Pandora error {code}: {description}. {message}.")
        self.kind = kind
        self.code = code
        self.description = description


def throw_error(code: int, description: str, message: str) -> PandoraException:
    """Exceptions.kt `throwError`: which exception class the app sees."""
    if code == 0 and description == "AUTH_INVALID_USERNAME_PASSWORD":
        kind = "InvalidLoginException"
    elif code == 1001:
        kind = "InvalidAuthTokenException"
    else:
        kind = "InvalidRequestException"
    return PandoraException(kind, code, description, message)


def org_json_text(body: dict[str, Any]) -> bytes:
    """android org.json `JSONObject.toString()`: no spaces, keys in insertion order, non-ASCII
    left as is, and `/` written as `\\/` (JSONStringer escapes it)."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return text.replace("/", "\\/").encode()


@dataclass
class Epimetheus:
    """One `Networking.client` (OkHttp with PandoraCookieJar) against the server's base URL."""

    base: str
    http: httpx.Client = field(init=False)
    csrf: str | None = None
    auth_token: str | None = None  # User.authToken once signed in

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.base, timeout=60, follow_redirects=True)

    def close(self) -> None:
        self.http.close()

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        # PandoraCookieJar.loadForRequest returns no cookies: nothing the server set is sent back.
        self.http.cookies.clear()
        response = self.http.request(method, url, **kwargs)
        self.http.cookies.clear()
        return response

    def get_csrf_token(self) -> str:
        """PandoraCookieJar.getCSRFToken: once per jar, `HEAD https://www.pandora.com/`."""
        if self.csrf is None:
            head = self._send(
                "HEAD",
                "/",
                headers={"User-Agent": OKHTTP_UA, "Accept-Encoding": "gzip"},
            )
            # saveFromResponse stores the parsed Set-Cookie list; the token is the cookie named
            # csrftoken, else LocationException.
            token = head.cookies.get("csrftoken")
            if not token:
                raise ClientBroke(
                    f"LocationException: HEAD / ({head.status_code}) set no csrftoken cookie: "
                    f"{head.headers.get_list('set-cookie')}"
                )
            self.csrf = token
        return self.csrf

    def api(self, version: str, endpoint: str, body: dict[str, Any] | None = None) -> OrgJson:
        """Networking.makeApiRequest: POST, then JSONObject(body) and the errorCode check."""
        token = self.get_csrf_token()
        response = self._send(
            "POST",
            f"/api/{version}/{endpoint}",
            content=org_json_text(body if body is not None else {}),
            headers={
                "Content-Type": "application/json; charset=utf-8",
                "Cookie": f"csrftoken={token}",
                "X-CsrfToken": token,
                "X-AuthToken": self.auth_token or "",
                "User-Agent": OKHTTP_UA,
                "Accept-Encoding": "gzip",
            },
        )
        try:
            parsed = json.loads(response.text)
        except ValueError:
            raise ClientBroke(
                f"org.json: {endpoint} answered {response.status_code} with no JSON: "
                f"{response.text[:200]!r}"
            ) from None
        answer = OrgJson(parsed, endpoint)
        if answer.has("errorCode"):
            raise throw_error(
                answer.getInt("errorCode"),
                answer.getString("errorString") if answer.has("errorString") else "No error string",
                answer.getString("message") if answer.has("message") else "No message",
            )
        return answer


# --- The client's readers (data/*.kt) ---------------------------------------------------------


def trim_name(name: str) -> str:
    """`trim().replace("\\s+".toRegex(), " ")` (Station.kt, Artist.kt, GenreStation.kt...)."""
    return re.sub(r"\s+", " ", name.strip())


def art_map(art: list[Any], where: str) -> dict[int, str]:
    """PandoraData.artJSONtoMap: `getJSONObject(i)`, then getInt("size") -> getString("url")."""
    return {item.getInt("size"): item.getString("url") for item in org_json_objects(art, where)}


def get_art_url(art_urls: dict[int, str], preferred: int, default: str = GENERIC_ART_URL) -> str:
    """PandoraData.getArtUrl: the exact size, else the next larger, else the largest."""
    if not art_urls:
        return default
    if preferred in art_urls:
        return art_urls[preferred]
    for size in sorted(art_urls):
        if preferred <= size:
            return art_urls[size]
    return art_urls[max(art_urls)]


def read_station(obj: OrgJson, trim: bool = True) -> dict[str, Any]:
    """data/Station.kt `Station(stationJSON, trim)`."""
    name = obj.getString("name")
    return {
        "name": trim_name(name) if trim else name,
        "id": obj.getString("stationId"),
        "isShuffle": obj.getBoolean("isShuffle"),
        "isThumbprint": obj.getBoolean("isThumbprint"),
        "canDelete": obj.getBoolean("allowDelete"),
        "canRename": obj.getBoolean("allowRename"),
        "artUrls": art_map(obj.getJSONArray("art"), "art") if obj.has("art") else {},
    }


def read_song(obj: OrgJson) -> dict[str, Any]:
    """data/Song.kt `Song(songJSON)` (trackType other than Track/ArtistMessage: a warning)."""
    return {
        "trackType": obj.getString("trackType"),
        "name": obj.getString("songTitle"),
        "artist": obj.getString("artistName"),
        "album": obj.getString("albumTitle"),
        "rated": obj.getInt("rating") == 1,
        "id": obj.getString("musicId"),
        "trackToken": obj.getString("trackToken"),
        "audioUri": obj.getString("audioURL"),
        "artUrls": art_map(obj.getJSONArray("albumArt"), "albumArt"),
    }


def read_feedback_item(obj: OrgJson) -> dict[str, Any]:
    """data/feedback/FeedbackItem.kt `FeedbackItem(feedbackItemJSON)`."""
    return {
        "isPositive": obj.getBoolean("isPositive"),
        "name": obj.getString("songTitle"),
        "artist": obj.getString("artistName"),
        "album": obj.getString("albumTitle"),
        "sampleUrl": obj.getString("sampleUrl") if obj.has("sampleUrl") else None,
        "feedbackId": obj.getString("feedbackId"),
        "pandoraId": obj.getString("pandoraId"),
        "artUrls": art_map(obj.getJSONArray("albumArt"), "albumArt"),
    }


def read_artist(obj: OrgJson) -> dict[str, Any]:
    """data/search/Artist.kt private constructor (station recommendations)."""
    return {
        "name": trim_name(obj.getString("name")),
        "musicId": obj.getString("musicId"),
        "pandoraId": obj.getString("pandoraId"),
        "detailUrl": obj.getString("detailUrl"),
        "listenerCount": obj.getInt("listenerCount") if obj.has("listenerCount") else None,
        "artUrls": art_map(obj.getJSONArray("art"), "art"),
    }


def read_genre_station(obj: OrgJson) -> dict[str, Any]:
    """data/search/GenreStation.kt private constructor (recommendations and music/genres)."""
    return {
        "name": trim_name(obj.getString("name")),
        "token": obj.getString("token"),
        "musicId": obj.getString("musicId"),
        "pandoraId": obj.getString("pandoraId"),
        "description": obj.getString("description") if obj.has("description") else None,
        "listenerCount": obj.getInt("listenerCount"),
        "artUrls": art_map(obj.getJSONArray("art"), "art"),
    }


def read_genre_category(obj: OrgJson) -> dict[str, Any]:
    """data/search/GenreCategory.kt private constructor."""
    return {
        "name": trim_name(obj.getString("name")),
        "token": obj.getString("token"),
        "artUrls": art_map(obj.getJSONArray("art"), "art"),
    }


def json_array_strings(array: list[Any], where: str) -> list[str]:
    """`JSONArray.getString(i)`: any non-null value as text; JSON null is the text "null"."""
    out = []
    for i, value in enumerate(array):
        if value is None:
            out.append("null")
        elif isinstance(value, str):
            out.append(value)
        elif isinstance(value, list | dict):
            out.append(json.dumps(value, separators=(",", ":")))
        else:
            out.append(OrgJson({"v": value}, f"{where}[{i}]").getString("v"))
    return out


def read_track_details(obj: OrgJson) -> dict[str, Any]:
    """data/search/details/TrackDetails.kt `TrackDetails(jsonObject)`."""
    return {
        "name": obj.getString("songTitle"),
        "pandoraId": obj.getString("pandoraId"),
        "musicId": obj.getString("musicId"),
        "artistName": obj.getString("artistName"),
        "albumName": obj.getString("albumTitle"),
        # `has` is true for a JSON null too, and getJSONObject(null) throws.
        "lyricSnippet": "\n".join(
            json_array_strings(
                obj.getJSONObject("lyricSnippet").getJSONArray("lines"), "lyricSnippet.lines"
            )
        )
        if obj.has("lyricSnippet")
        else "",
        "focusTraits": json_array_strings(obj.getJSONArray("focusTraits"), "focusTraits")
        if obj.has("focusTraits")
        else [],
        "artUrls": art_map(obj.getJSONArray("albumArt"), "albumArt"),
    }


# --- Flows used by several tests --------------------------------------------------------------


@dataclass
class User:
    """User.kt: what the constructor keeps."""

    client: Epimetheus
    email: str
    webname: str
    username: str
    profile_pic_uri: str


def sign_in(server: Server, account: Account) -> User:
    """User.kt `User(email, password, usePortaller = false)`, as LoginFragment.authenticate."""
    client = Epimetheus(server.url)
    # User.kt: v1/auth/login; `.put("existingAuthToken", null)` removes the key (org.json), so
    # the body is keepLoggedIn, username, password in that order. X-AuthToken is "".
    login = client.api(
        "v1",
        "auth/login",
        {"keepLoggedIn": True, "username": account.username, "password": account.password},
    )
    client.auth_token = login.getString("authToken")
    webname = login.getString("webname")
    # User.kt retrieveUsername: v1/listener/getProfile {webname}; fullName if present.
    profile = client.api("v1", "listener/getProfile", {"webname": webname})
    username = profile.getString("fullName") if profile.has("fullName") else webname
    # User.kt getProfilePicUri: a facebookId (if `facebookData` is present) goes to the
    # Facebook Graph API; otherwise a pandora.com static picture named after the username.
    if login.has("facebookData"):
        login.getJSONObject("facebookData").getString("facebookId")
        raise ClientBroke("the client would call graph.facebook.com for the profile picture")
    picture = f"/static/user/default_images/user_default_{username[0].lower()}_500x500.png"
    return User(client, account.username, webname, username, picture)


def get_stations(user: User) -> list[dict[str, Any]]:
    """Stations.kt `getStations(user)`: the list, then the shuffle station put at index 0."""
    answer = user.client.api("v1", "station/getStations", {"pageSize": 250})
    stations = [read_station(s) for s in org_json_objects(answer.getJSONArray("stations"))]
    try:
        # Stations.kt getShuffle: v1/station/shuffle with an empty JSONObject.
        stations.insert(0, read_station(user.client.api("v1", "station/shuffle", {})))
    except PandoraException as error:
        if error.kind != "InvalidRequestException":  # the only one getStations catches
            raise
    # Stations.kt counts on getStations leaving the shuffle station out, as Airwave does, so the
    # app shows it once. The default comparator: shuffle first, then Thumbprint, then by name.
    return sorted(stations, key=lambda s: (not s["isShuffle"], not s["isThumbprint"], s["name"]))


def recommendations(user: User) -> OrgJson:
    """Browse.kt `getStationRecommendations`: v1/search/getStationRecommendations {}."""
    return user.client.api("v1", "search/getStationRecommendations", {})


def add_station(user: User, listenable: OrgJson) -> None:
    """Listenable.add -> Browse.kt `add`: v1/station/createStation {pandoraId, stationName};
    the default name is `name.trim() + " Radio"`; the answer is not read."""
    user.client.api(
        "v1",
        "station/createStation",
        {
            "pandoraId": listenable.getString("pandoraId"),
            "stationName": trim_name(listenable.getString("name")).strip() + " Radio",
        },
    )


def get_playlist(user: User, station_id: str) -> list[dict[str, Any]]:
    """Stations.kt `Station.getPlaylist`: v1/playlist/getFragment. The three `null` puts
    (startingAtTrackId, onDemandArtistMessage*) remove those keys."""
    answer = user.client.api(
        "v1",
        "playlist/getFragment",
        {
            "stationId": station_id,
            "isStationStart": False,
            "fragmentRequestReason": "Normal",
            "audioFormat": "aacplus",
        },
    )
    return [read_song(t) for t in org_json_objects(answer.getJSONArray("tracks"), "tracks")]


def first_own_station(user: User) -> dict[str, Any]:
    stations = [s for s in get_stations(user) if not s["isShuffle"]]
    assert stations, "the station just added is not in the client's station list"
    return stations[0]


def new_station_from_recommended_artist(user: User, index: int = 0) -> dict[str, Any]:
    """BrowseFragment: the user taps a recommended artist and adds it (Listenable.add). The
    client builds an Artist first; that full read is `test_browse_recommendations`; here only
    the fields `add` sends are read, so the later steps run even while that read fails."""
    artists = org_json_objects(recommendations(user).getJSONArray("artists"), "artists")
    assert len(artists) > index, "no recommended artists"
    add_station(user, artists[index])
    return first_own_station(user)


def glide_fetch_art(url: str) -> None:
    """Glide's HttpUrlFetcher: GET the URL as given; 2xx and a decodable picture."""
    assert url != GENERIC_ART_URL, "no art: the client would show pandora.com's placeholder"
    assert url.startswith(("http://", "https://")), f"art URL {url!r} is not absolute"
    picture = httpx.get(url, headers={"User-Agent": "Dalvik/2.1.0"}, timeout=60)
    assert picture.status_code == 200, (url, picture.status_code, picture.text[:200])
    assert picture.content[:3] == b"\xff\xd8\xff" or picture.content[:8] == b"\x89PNG\r\n\x1a\n"


# --- Fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def user(airwave: Server, account: Account) -> Any:
    signed_in = sign_in(airwave, account)
    yield signed_in
    signed_in.client.close()


# --- Tests, in the app's order ----------------------------------------------------------------


def test_sign_in(airwave: Server, account: Account) -> None:
    """LoginFragment.authenticate -> User(email, password): HEAD /, auth/login, getProfile."""
    user = sign_in(airwave, account)
    try:
        assert user.client.csrf  # from the HEAD / Set-Cookie, sent back by hand ever since
        assert user.client.auth_token
        assert user.webname
        assert user.username  # getProfile has no fullName: the webname is shown
    finally:
        user.client.close()


def test_sign_in_with_a_wrong_password_is_an_error_the_app_shows(airwave: Server) -> None:
    """LoginFragment.handleLoginError: any PandoraException is shown; only errorCode 0 with
    AUTH_INVALID_USERNAME_PASSWORD becomes the "invalid credentials" hint (Pandora's own code);
    Airwave's contract code 1002 becomes a generic error dialog, which the app survives."""
    account = make_account(airwave)
    client = Epimetheus(airwave.url)
    try:
        with pytest.raises(PandoraException) as raised:
            client.api(
                "v1",
                "auth/login",
                {"keepLoggedIn": True, "username": account.username, "password": "wrong"},
            )
        assert raised.value.description == "AUTH_INVALID_USERNAME_PASSWORD"
    finally:
        client.close()


def test_station_list_of_a_new_listener(user: User) -> None:
    """MainActivity: Stations.getStations(user) right after sign-in (no stations yet)."""
    stations = get_stations(user)
    assert [s for s in stations if not s["isShuffle"]] == []


def test_browse_recommendations(user: User) -> None:
    """BrowseFragment: Browse.getStationRecommendations -> Artist and GenreStation lists, then
    their art through Glide (getArtUrl(artSize))."""
    answer = recommendations(user)
    artists = [read_artist(a) for a in org_json_objects(answer.getJSONArray("artists"))]
    genres = [read_genre_station(g) for g in org_json_objects(answer.getJSONArray("genreStations"))]
    assert artists or genres
    for item in (artists + genres)[:1]:
        glide_fetch_art(get_art_url(item["artUrls"], ART_SIZE))


def test_browse_genre_categories_and_genres(user: User) -> None:
    """BrowseFragment: Browse.getGenreCategories; GenresFragment: GenreCategory.getGenres
    (v1/music/genres with `categoryToken`, read from `genres`)."""
    answer = user.client.api("v1", "music/genrecategories", {})
    categories = [
        read_genre_category(c) for c in org_json_objects(answer.getJSONArray("categories"))
    ]
    assert categories
    glide_fetch_art(get_art_url(categories[0]["artUrls"], ART_SIZE))
    genres_answer = user.client.api("v1", "music/genres", {"categoryToken": categories[0]["token"]})
    genres = [read_genre_station(g) for g in org_json_objects(genres_answer.getJSONArray("genres"))]
    assert genres


def test_add_station_and_list_it(user: User) -> None:
    """Listenable.add from Browse, then the station list (with shuffle) and its art."""
    station = new_station_from_recommended_artist(user)
    stations = get_stations(user)
    assert station in stations
    shown = [s["id"] for s in stations]
    assert len(shown) == len(set(shown)), shown  # shuffle (put first by the app) is not listed too
    assert station["canDelete"] and station["canRename"]
    glide_fetch_art(get_art_url(station["artUrls"], ART_SIZE))
    # Station.getDetails: v1/station/getStationDetails; the raw JSONObject is returned.
    user.client.api(
        "v1", "station/getStationDetails", {"stationId": station["id"], "isCurrentStation": False}
    )


def test_play_station(user: User) -> None:
    """StationProvider.load: Station.getPlaylist, then each Song's audioUri into ExoPlayer and
    its album art into Glide."""
    station = new_station_from_recommended_artist(user)
    songs = get_playlist(user, station["id"])
    assert songs, "an empty fragment: nothing to play"
    playable = [s for s in songs if s["trackType"] != "ArtistMessage"]  # filterNot in load()
    song = playable[0]
    # ExoPlayer DefaultHttpDataSource at position 0: GET, no Range header.
    audio = httpx.get(
        song["audioUri"],
        headers={"User-Agent": "khtml", "Accept-Encoding": "identity"},
        timeout=120,
    )
    assert 200 <= audio.status_code < 300, (audio.status_code, audio.text[:200])
    data = audio.content
    # DefaultExtractorsFactory must sniff it: AdtsExtractor (after an optional ID3 tag).
    if data[:3] == b"ID3":
        size = (data[6] << 21) | (data[7] << 14) | (data[8] << 7) | data[9]
        data = data[10 + size :]
    assert data[:1] == b"\xff" and data[1] & 0xF6 == 0xF0, f"not ADTS: {data[:4]!r}"
    glide_fetch_art(get_art_url(song["artUrls"], ART_SIZE))


def test_thumbs_up_then_unrate_then_tired(user: User) -> None:
    """StationProvider.rate / tired: Song.addFeedback, Rateable.deleteFeedback, Song.addTired."""
    station = new_station_from_recommended_artist(user)
    songs = get_playlist(user, station["id"])
    assert len(songs) >= 2
    # Music.kt Song.addFeedback(true): {trackToken, isPositive}; reads feedbackId, isPositive.
    rated = user.client.api(
        "v1", "station/addFeedback", {"trackToken": songs[0]["trackToken"], "isPositive": True}
    )
    feedback_id = rated.getString("feedbackId")
    assert rated.getBoolean("isPositive") is True
    # Music.kt Rateable.deleteFeedback: {feedbackId, isPositive: rating.isThumbUp}; the answer's
    # feedbackId is read (getString) into the song.
    removed = user.client.api(
        "v1", "station/deleteFeedback", {"feedbackId": feedback_id, "isPositive": True}
    )
    removed.getString("feedbackId")
    # Song.addFeedback(false): thumbs down.
    down = user.client.api(
        "v1", "station/addFeedback", {"trackToken": songs[1]["trackToken"], "isPositive": False}
    )
    down.getString("feedbackId")
    assert down.getBoolean("isPositive") is False
    # Music.kt Song.addTired: v1/listener/addTiredSong {trackToken}; answer not read.
    user.client.api("v1", "listener/addTiredSong", {"trackToken": songs[0]["trackToken"]})


def thumbs_up_first_song(user: User, station_id: str) -> dict[str, Any]:
    song = get_playlist(user, station_id)[0]
    answer = user.client.api(
        "v1", "station/addFeedback", {"trackToken": song["trackToken"], "isPositive": True}
    )
    answer.getString("feedbackId")
    answer.getBoolean("isPositive")
    return song


def feedback_list(user: User, station_id: str, positive: bool) -> tuple[int, list[dict[str, Any]]]:
    """FeedbackFragment DataSource.loadInitial: Station.getFeedback(user, thumbsUp, 30, 0)
    (PagedList page size 10, initial load 3 pages)."""
    answer = user.client.api(
        "v1",
        "station/getStationFeedback",
        {"pageSize": 30, "positive": positive, "startIndex": 0, "stationId": station_id},
    )
    total = answer.getInt("total")
    return total, [read_feedback_item(f) for f in org_json_objects(answer.getJSONArray("feedback"))]


def track_details(user: User, feedback_item: dict[str, Any]) -> OrgJson:
    """FeedbackFragment -> songDetails(item.toTrack()) -> SongDetails.onlineData: Browse.kt
    `Track.getDetails`: v1/music/track {token: pandoraId with "TR:" replaced by "S"}."""
    return user.client.api(
        "v1", "music/track", {"token": feedback_item["pandoraId"].replace("TR:", "S")}
    )


def test_feedback_list_and_song_details(user: User) -> None:
    """FeedbackFragment: the thumbs-up list of a station, then a song's details screen."""
    station = new_station_from_recommended_artist(user)
    song = thumbs_up_first_song(user, station["id"])
    total, items = feedback_list(user, station["id"], positive=True)
    assert total == 1 and len(items) == 1
    assert items[0]["name"] == song["name"] and items[0]["isPositive"]
    glide_fetch_art(get_art_url(items[0]["artUrls"], ART_SIZE))
    details = read_track_details(track_details(user, items[0]))
    assert details["name"] == song["name"]


def test_song_details_and_lyrics_of_a_track_with_lyrics(user: User) -> None:
    """The same details screen for a song that has lyrics (a snippet is shown), then
    TrackDetails.getLyrics: v1/music/fullLyrics {nonExplicit: !explicit (explicit defaults to
    true), trackUid: musicId}, read as `lines` joined."""
    # Find such a song as the app would meet it: playing a vocal genre's station (genres of
    # Jazz, Rock and Hip-Hop have lyrics in the demo library).
    categories = user.client.api("v1", "music/genrecategories", {}).getJSONArray("categories")
    jazz = [c for c in org_json_objects(categories) if c.getString("name") == "Jazz"]
    assert jazz, "the demo library has a Jazz category"
    genres = user.client.api("v1", "music/genres", {"categoryToken": jazz[0].getString("token")})
    # The client reads `genres` (test_browse_genre_categories_and_genres); to reach the
    # lyrics calls at all this flow takes the list under either name.
    listed = genres.optJSONArray("genres") or genres.getJSONArray("stations")
    add_station(user, org_json_objects(listed)[0])
    station = first_own_station(user)
    with_lyrics = None
    # a quarter of the demo's Jazz tracks have lyrics, and a genre station also plays its
    # neighbours: listen on until one comes (usually within a few fragments; the default limit
    # is 40 fragments per listener in 10 minutes)
    for _ in range(30):
        answer = user.client.api(
            "v1",
            "playlist/getFragment",
            {
                "stationId": station["id"],
                "isStationStart": False,
                "fragmentRequestReason": "Normal",
                "audioFormat": "aacplus",
            },
        )
        for track in org_json_objects(answer.getJSONArray("tracks")):
            read_song(track)
            if track.optJSONObject("lyricSnippet") is not None:
                with_lyrics = track
                break
        if with_lyrics:
            break
    assert with_lyrics is not None, "no track with lyrics on a Jazz station"
    user.client.api(
        "v1",
        "station/addFeedback",
        {"trackToken": with_lyrics.getString("trackToken"), "isPositive": True},
    )
    _, items = feedback_list(user, station["id"], positive=True)
    answer = track_details(user, items[0])
    details_broke: ClientBroke | None = None
    try:
        details = read_track_details(answer)
        assert details["lyricSnippet"], "the details screen shows no lyrics"
    except ClientBroke as broke:
        details_broke = broke  # reported below, after the lyrics call has been tried too
    # TrackDetails.getLyrics uses TrackDetails.musicId, read the same way (getString).
    music_id = answer.getString("musicId")
    lyrics = user.client.api("v1", "music/fullLyrics", {"nonExplicit": False, "trackUid": music_id})
    text = "\n".join(json_array_strings(lyrics.getJSONArray("lines"), "lines"))
    assert text.strip()
    if details_broke is not None:
        raise details_broke


def test_rename_and_delete_station(user: User) -> None:
    """StationListFragment: Station.rename (if canRename) and Station.delete (if canDelete)."""
    station = new_station_from_recommended_artist(user)
    assert station["canRename"]
    # Stations.kt rename: v1/station/updateStation {name, stationId}; reads getString("name").
    renamed = user.client.api(
        "v1", "station/updateStation", {"name": "Late night", "stationId": station["id"]}
    )
    assert renamed.getString("name") == "Late night"
    # Stations.kt delete: v1/station/removeStation {stationId}; answer not read.
    user.client.api("v1", "station/removeStation", {"stationId": station["id"]})
    assert station["id"] not in [s["id"] for s in get_stations(user)]
