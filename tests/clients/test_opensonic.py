"""py-opensonic (PyPI `py-opensonic`) against Airwave's Subsonic edge: the real client library,
as an app built on it connects (username and app password with token auth; API key), browses,
plays, stars and makes a playlist, on both databases."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import libopensonic
import pytest
from support import Server, backend_params, unique, wait_indexed


@pytest.fixture(params=backend_params(), scope="module")
def backend_kind(request: pytest.FixtureRequest) -> str:
    """Storage matters here (stars, plays, playlists): both databases."""
    return request.param


@pytest.fixture(scope="module")
def airwave(start_server: Callable[..., Server], small_demo_library: Path) -> Server:
    """A server on the demo library, on the module's database (SQLite, then PostgreSQL)."""
    server = start_server("--library", str(small_demo_library))
    wait_indexed(server)
    return server


def _account(airwave: Server) -> tuple[str, str]:
    name = unique("os")
    added = airwave.admin("user", "add", name, "--tier", "premium", "--password-stdin", input="pw")
    assert added.returncode == 0, added.stderr
    made = airwave.admin("user", "app-password", name, "--label", "py-opensonic")
    assert made.returncode == 0, made.stderr
    return name, made.stdout.strip().splitlines()[-1]


def _connect(airwave: Server, **credentials: object) -> libopensonic.Connection:
    url = urlsplit(airwave.url)
    return libopensonic.Connection(
        f"{url.scheme}://{url.hostname}", port=url.port or 80, app_name="tests", **credentials
    )


def _bytes(conn: libopensonic.Connection, response: object) -> bytes:
    """The body of a binary answer, read on the connection's own event loop."""
    return asyncio.run_coroutine_threadsafe(response.read(), conn._loop).result()  # type: ignore[attr-defined]


def test_browse_play_star_and_playlist(airwave: Server) -> None:
    name, secret = _account(airwave)
    conn = _connect(airwave, username=name, password=secret)
    try:
        assert conn.ping() is True
        names = {e.name for e in conn.get_open_subsonic_extensions()}
        assert {"apiKeyAuthentication", "formPost"} <= names
        artists = [a for index in conn.get_artists().index or [] for a in index.artist or []]
        assert artists
        artist = conn.get_artist(artists[0].id)
        album = conn.get_album((artist.album or [])[0].id)
        song = conn.get_song((album.song or [])[0].id)
        assert song.album_id == album.id and song.title
        audio = _bytes(conn, conn.stream(song.id))
        assert len(audio) > 10_000
        cover = _bytes(conn, conn.get_cover_art(album.id, size=130))
        assert cover[:2] == b"\xff\xd8"
        assert conn.star(sids=[song.id], album_ids=[album.id]) is True
        starred = conn.get_starred2()
        assert [s.id for s in starred.song or []] == [song.id]
        assert [a.id for a in starred.album or []] == [album.id]
        assert conn.create_playlist(name="From py-opensonic", song_ids=[song.id]) is True
        (made,) = conn.get_playlists()
        assert made.name == "From py-opensonic" and made.song_count == 1
        assert [s.id for s in conn.get_playlist(made.id).entry or []] == [song.id]
        assert conn.scrobble(song.id) is True
        found = conn.search3(song.title)
        assert song.id in [s.id for s in found.song or []]
    finally:
        conn.cleanup()


def test_api_key_and_legacy_password(airwave: Server) -> None:
    name, secret = _account(airwave)
    # the account password only as p (legacy_auth): its Argon2 hash cannot answer a token
    account = {"username": name, "password": "pw", "legacy_auth": True}
    for credentials in ({"api_key": secret}, account):
        conn = _connect(airwave, **credentials)
        try:
            assert conn.ping() is True
            assert conn.get_album_list2("newest", size=2)
        finally:
            conn.cleanup()
    conn = _connect(airwave, username=name, password="pw")
    try:
        with pytest.raises(libopensonic.errors.CredentialError):
            conn.ping()
    finally:
        conn.cleanup()
