"""pydora (PyPI `pydora`, github.com/mcrute/pydora) against Airwave's tuner interface: the real
client library, configured as its own config file would configure it (the android partner keys
`pydora-configure` writes, `api_host` pointing at the server).

pydora sends auth.partnerLogin, auth.userLogin and station.getPlaylist over HTTPS and every other
method over plain HTTP to the same host, on the default ports; so the server listens on 443 with
TLS and on 80 with `--plain-port`, on a loopback address of its own (binding those ports needs
root, which the CI runs as). Certificates come from trustme, trusted through REQUESTS_CA_BUNDLE.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from conftest import Account, make_account, needs_low_ports
from pandora.clientbuilder import SettingsDictBuilder
from pandora.errors import InvalidUserLogin
from support import Server

HOST = "127.0.0.19"  # this module's own loopback address (other modules use others)
PARTNER = {  # the public record's android partner, as pydora-configure writes it
    "PARTNER_USER": "android",
    "PARTNER_PASSWORD": "AC7IBG09A3DTSYM4R41UJWL07VLN8JI7",
    "DEVICE": "android-generic",
    "ENCRYPTION_KEY": "6#26FRL$ZWD",
    "DECRYPTION_KEY": "R=U!LH$O2B#",
    "AUDIO_QUALITY": "highQuality",
}


pytestmark = needs_low_ports(HOST)


@pytest.fixture
def client(tuner: tuple[Server, Path], monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    server, ca_file = tuner
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca_file))
    client = SettingsDictBuilder({**PARTNER, "API_HOST": f"{HOST}/services/json/"}).build()
    account = make_account(server)
    client.login(account.username, account.password)
    client.account = account  # type: ignore[attr-defined]
    return client


def test_wrong_password_is_invalid_user_login(tuner: tuple[Server, Path], monkeypatch) -> None:
    server, ca_file = tuner
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca_file))
    account: Account = make_account(server)
    client = SettingsDictBuilder({**PARTNER, "API_HOST": f"{HOST}/services/json/"}).build()
    with pytest.raises(InvalidUserLogin):
        client.login(account.username, "not the password")


def test_create_play_rate_and_explain(client, tuner: tuple[Server, Path]) -> None:  # noqa: ANN001
    server, _ = tuner
    first = client.get_station_list()  # a new listener: QuickMix alone
    assert [s.is_quickmix for s in first] == [True]
    genres = client.get_genre_stations()
    assert genres and all(genres.values())  # category name -> its genre stations
    found = client.search(next(iter(genres.values()))[0].name, include_genre_stations=True)
    assert found.genre_stations
    station = client.create_station(search_token=found.genre_stations[0].token)
    assert station.token and station.name.endswith("Radio")
    listed = client.get_station_list()
    assert [s.token for s in listed if not s.is_quickmix] == [station.token]
    assert client.get_station_list_checksum() == listed.checksum

    playlist = client.get_playlist(station.token)
    tracks = [t for t in playlist if not t.is_ad]
    assert len(tracks) >= 2
    first = tracks[0]
    # mpg123 (pydora's player) plays the mp3 URL: plain http, no cookies, real audio
    assert first.audio_url.startswith(f"http://{HOST}/audio/") and first.encoding == "mp3"
    audio = httpx.get(first.audio_url, timeout=60)
    assert audio.status_code == 200 and audio.headers["content-type"] == "audio/mpeg"
    assert len(audio.content) > 1000

    feedback = first.thumbs_up()  # station.addFeedback, sent without a stationToken
    assert feedback["isPositive"] is True
    assert any("roots" in e["focusTraitName"] or e["focusTraitName"] for e in
               client.explain_track(first.track_token)["explanations"])  # fmt: skip
    tracks[1].bookmark_song()
    tracks[1].sleep()

    # the thumb is the REST API's thumb: one core, two edges
    api = server.client(verify=False)
    api.login(client.account.username, client.account.password)
    thumbs = api.ok(
        "v1/station/getStationFeedback", {"stationId": station.token, "positive": True}
    )["feedback"]
    assert [f["songTitle"] for f in thumbs] == [first.song_name]
    marks = api.ok("v1/bookmark/getBookmarks", {})
    assert tracks[1].song_name in {b["songTitle"] for b in marks["tracks"]}

    details = client.get_station(station.token)
    assert details.feedback and details.feedback.thumbs_up[0].song_name == first.song_name
    client.rename_station(station.token, "Evening")
    assert "Evening" in {s.name for s in client.get_station_list()}
    client.delete_station(station.token)
    assert [s.is_quickmix for s in client.get_station_list()] == [True]


def test_another_device_playing_is_refused_until_taken_over(
    client,
    tuner: tuple[Server, Path],  # noqa: ANN001
) -> None:
    server, _ = tuner
    genre = next(iter(client.get_genre_stations().values()))[0]
    station = client.create_station(search_token=genre.token)
    client.get_playlist(station.token)
    phone = server.client(verify=False)
    phone.login(client.account.username, client.account.password)
    refused = phone.call("v1/playlist/getFragment", {"stationId": station.token})
    assert refused.json()["errorString"] == "STREAM_VIOLATION"  # the tuner session plays
