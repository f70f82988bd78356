"""Sublime Music (the Debian package, 0.11.16) plays from Airwave's Subsonic edge: the GTK app
itself on a virtual display (Xvfb) with a session bus of its own, signed in with an app password,
started playing over its MPRIS interface the way a media key or a panel applet does. What it did
is checked through the server: the requests it saw (the access log) and the play log
(`airwave export plays`).

Sublime Music keeps its provider in `$XDG_CONFIG_HOME/sublime-music/config.json`; a password
given as `["plaintext", ...]` stays out of the keyring. Its play queue is the state it pickles
per provider under `$XDG_DATA_HOME/sublime-music/<provider>/state.pickle` (written here with the
app's own class, by its own interpreter), so MPRIS `Play` resumes that queue. Its player is libmpv,
which takes the first audio server that answers: a PulseAudio of the test's own with only a
null sink, which plays on the clock (ALSA's null device would swallow a track at once). It
scrobbles a song once mpv's position passes 5 s, so this module's library has 7-second tracks.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from desktop import Desktop
from support import Backend, Server, unique, wait_indexed

BUS = "org.mpris.MediaPlayer2.sublimemusic"
MPRIS = "/org/mpris/MediaPlayer2"
PLAYER = "org.mpris.MediaPlayer2.Player"
PROVIDER = "airwave"
TRACK_SECONDS = 7.0  # past the 5 s after which Sublime Music scrobbles
TOOLS = ("sublime-music", "Xvfb", "dbus-daemon", "gdbus", "pulseaudio")

pytestmark = pytest.mark.skipif(
    not all(shutil.which(tool) for tool in TOOLS),
    reason="sublime-music, Xvfb, dbus-daemon, gdbus and pulseaudio come from Debian "
    "(.ci/run installs them)",
)


@pytest.fixture(scope="module")
def subsonic_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server on a library of one album of three 7-second tracks."""
    from airwave.library import demo

    library = tmp_path_factory.mktemp("sublime-library")
    demo.generate(
        library,
        track_seconds=TRACK_SECONDS,
        genres=["Jazz"],
        artists_per_genre=1,
        albums_per_artist=1,
        tracks_per_album=3,
        compilation=False,
        formats=("mp3",),
        workers=1,
    )
    backend = Backend("sqlite", tmp_path_factory.mktemp("sublime"), None)
    server = Server(backend, ["--library", str(library)]).start()
    try:
        wait_indexed(server)
        yield server
    finally:
        server.stop()


class SublimeMusic(Desktop):
    """The app, its X display, session bus and sound server; its log is kept in `log`."""

    def __init__(self, home: Path, url: str, username: str, secret: str, queue: list[str]) -> None:
        self.home = home
        # a unix socket path must stay short: the sound server's lives in a folder of its own
        self.sound_dir = Path(tempfile.mkdtemp(prefix="aw-pulse-"))
        config, data = home / "config", home / "data"
        self._write_config(config / "sublime-music" / "config.json", url, username, secret)
        self._write_queue(data / "sublime-music" / PROVIDER / "state.pickle", queue)
        (home / "tmp").mkdir()

        super().__init__("1280x800x24")
        self.sound = self._start_sound_server()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(config),
            "XDG_DATA_HOME": str(data),
            "XDG_CACHE_HOME": str(home / "cache"),
            "XDG_RUNTIME_DIR": str(self.sound_dir),
            "TMPDIR": str(home / "tmp"),  # it downloads cover art into temporary folders
            "PULSE_SERVER": f"unix:{self.sound}",
            "NO_AT_BRIDGE": "1",  # no accessibility bus to look for
            "LANG": "C.UTF-8",
        }
        self.app = self.run_app(["sublime-music", "-m", "INFO"], env)

    @staticmethod
    def _write_config(path: Path, url: str, username: str, secret: str) -> None:
        """One Subsonic provider, as its "Add music source" dialog saves it, cached on disk."""
        path.parent.mkdir(parents=True)
        provider = {
            "id": PROVIDER,
            "name": "Airwave",
            "ground_truth_adapter_type": "SubsonicAdapter",
            "ground_truth_adapter_config": {
                "server_address": url,
                "username": username,
                "password": ["plaintext", secret],
                "verify_cert": True,
                "sync_enabled": True,
                "salt_auth": True,  # t and s: MD5 of the app password and a salt
            },
            "caching_adapter_type": "FilesystemAdapter",
            "caching_adapter_config": {},
        }
        config = {
            "version": 6,
            "providers": {PROVIDER: provider},
            "current_provider_id": PROVIDER,
            "player_config": {
                "Local Playback": {"Replay Gain": "Disabled"},
                "Chromecast": {
                    "Serve Local Files to Chromecasts on the LAN": False,
                    "LAN Server Port Number": 8282,
                },
            },
            "song_play_notification": False,
            "allow_song_downloads": True,
        }
        path.write_text(json.dumps(config, indent=2))
        path.chmod(0o600)

    @staticmethod
    def _write_queue(path: Path, queue: list[str]) -> None:
        """The play queue a previous session left, pickled by the app's own interpreter."""
        path.parent.mkdir(parents=True)
        script = (
            "import pickle, sys, gi\n"
            "gi.require_version('Gtk', '3.0')\n"
            "import sublime_music.adapters\n"  # first: its modules import each other in a ring
            "from sublime_music.ui.state import UIState\n"
            "state = UIState()\n"
            "state.play_queue = state.old_play_queue = tuple(sys.argv[2:])\n"
            "state.current_song_index = 0\n"
            "with open(sys.argv[1], 'wb') as out:\n"
            "    pickle.dump(state, out)\n"
        )
        launcher = shutil.which("sublime-music")
        assert launcher is not None
        interpreter = Path(launcher).read_text().splitlines()[0].removeprefix("#!").split()[0]
        done = subprocess.run(
            [interpreter, "-c", script, str(path), *queue],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(path.parent)},
        )
        assert done.returncode == 0, done.stderr

    def _start_sound_server(self) -> Path:
        """PulseAudio with a null sink only: no sound card, no desktop's sound server."""
        socket = self.sound_dir / "native"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.sound_dir),
            "XDG_RUNTIME_DIR": str(self.sound_dir),
            "XDG_CONFIG_HOME": str(self.sound_dir),
        }
        command = [
            "pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
            "--disable-shm=yes", "--log-target=stderr",
            "-L", f"module-native-protocol-unix socket={socket} auth-anonymous=1",
            "-L", "module-null-sink sink_name=nowhere",
        ]  # fmt: skip
        sound = self.spawn(command, env=env)
        deadline = time.monotonic() + 20
        while not socket.exists():
            assert sound.poll() is None, "pulseaudio exited"
            assert time.monotonic() < deadline, "pulseaudio never made its socket"
            time.sleep(0.05)
        return socket

    def gdbus(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["gdbus", "call", "--address", self.bus, "--dest", BUS, "--object-path", MPRIS,
             *args],
            capture_output=True, text=True, timeout=20, check=False,
        )  # fmt: skip

    def call(self, method: str) -> str:
        """A Player method over MPRIS, as `gdbus call` prints the reply."""
        done = self.gdbus("--method", f"{PLAYER}.{method}")
        assert done.returncode == 0, f"{method}: {done.stderr}\n{self.text()[-4000:]}"
        return done.stdout

    def status(self) -> str | None:
        """MPRIS PlaybackStatus (Playing, Paused, Stopped); None until the app is on the bus."""
        done = self.gdbus(
            "--method", "org.freedesktop.DBus.Properties.Get", PLAYER, "PlaybackStatus"
        )
        found = re.search(r"<'(\w+)'>", done.stdout) if done.returncode == 0 else None
        return found.group(1) if found else None

    def wait_until(self, what: str, check: Any, timeout: float = 30) -> Any:  # noqa: ANN401
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if result := check():
                return result
            assert self.app.poll() is None, f"sublime-music exited:\n{self.text()[-4000:]}"
            time.sleep(0.1)
        raise AssertionError(f"never {what}:\n{self.text()[-4000:]}")

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.sound_dir, ignore_errors=True)


def _requests(server: Server, listener_id: int | None = None) -> list[dict[str, Any]]:
    """The access log's lines for Subsonic calls (of one listener), oldest first."""
    seen = []
    for line in list(server.errors):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if (
            entry.get("msg") == "request"
            and listener_id in (None, entry.get("listener_id"))
            and (entry.get("path") or "").startswith("/rest/")
        ):
            seen.append(entry)
    return seen


def _called(server: Server, listener_id: int, method: str, after: int = 0) -> list[dict[str, Any]]:
    """The listener's calls of one method, from the `after`-th of its calls on."""
    names = (f"/rest/{method}", f"/rest/{method}.view")
    return [e for e in _requests(server, listener_id)[after:] if e["path"] in names]


def _plays(server: Server, listener_id: int) -> list[dict[str, Any]]:
    exported = server.admin("export", "plays", "--since", "2000-01-01", "--format", "json")
    assert exported.returncode == 0, exported.stderr
    return [play for play in json.loads(exported.stdout) if play["listener_id"] == listener_id]


def _wait_for(what: str, check: Any, timeout: float = 10) -> Any:  # noqa: ANN401
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"never saw {what}"
        time.sleep(0.05)
    return result


def test_sublime_music_lists_albums_plays_and_scrobbles(
    subsonic_server: Server, tmp_path: Path
) -> None:
    server = subsonic_server
    username = unique("sublime")
    added = server.admin("user", "add", username, "--tier", "premium", "--password-stdin",
                         input="correct horse battery")  # fmt: skip
    assert added.returncode == 0, added.stderr
    made = server.admin("user", "app-password", username, "--label", "Sublime Music")
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip().splitlines()[-1]

    # the album the queue holds, as another app of the listener's sees it
    auth = {"u": username, "p": secret, "v": "1.16.1", "c": "tests", "f": "json"}
    albums = httpx.get(f"{server.url}/rest/getAlbumList2", params={**auth, "type": "newest"})
    (album,) = albums.json()["subsonic-response"]["albumList2"]["album"]
    found = httpx.get(f"{server.url}/rest/getAlbum", params={**auth, "id": album["id"]})
    songs = found.json()["subsonic-response"]["album"]["song"]
    assert len(songs) == 3
    listener_id = _wait_for(
        "the access log", lambda: [e for e in _requests(server) if e["path"] == "/rest/getAlbum"]
    )[-1]["listener_id"]
    mark = len(_requests(server, listener_id))  # the app's calls come after these

    app = SublimeMusic(tmp_path, server.url, username, secret, [s["id"] for s in songs])
    try:
        # signs in (t and s) and shows the albums page, loaded with getAlbumList2; its ping
        # comes from a forked process that may never get to it (a fork of a threaded app)
        app.wait_until("answered on its bus", app.status)
        app.wait_until("listed albums", lambda: _called(server, listener_id, "getAlbumList2", mark))
        assert app.status() == "Stopped"

        # the play key: the saved queue's first song streams and plays on the clock
        app.call("Play")
        (streamed, *_) = app.wait_until("streamed", lambda: _called(server, listener_id, "stream"))
        assert streamed["status"] in (200, 206) and streamed["bytes"] > 10_000, streamed
        assert app.status() == "Playing"
        # and it fetches the rest of the queue ahead, whole (download)
        app.wait_until("fetched ahead", lambda: len(_called(server, listener_id, "download")) >= 2)

        # the resumed song is not scrobbled (it may have been half played before); when it
        # ends the next one starts afresh, and past its 5th second it is scrobbled (a
        # submission): the play log has that song, played through
        app.wait_until("scrobbled", lambda: _called(server, listener_id, "scrobble"), 40)
        played = app.wait_until("logged the play", lambda: _plays(server, listener_id))
        assert [p["title"] for p in played] == [songs[1]["title"]], played
        assert played[0]["album"] == album["name"]
        assert played[0]["outcome"] == "completed" and played[0]["station_id"] is None

        app.call("Pause")
        app.wait_until("paused", lambda: app.status() == "Paused")
    finally:
        app.close()
        (tmp_path / "sublime-music.log").write_text(app.text())  # for a look after a failure

    seen = _requests(server, listener_id)[mark:]
    assert all(entry["status"] < 400 for entry in seen), seen
    log = app.text()
    for trouble in ("[FAIL] get", "ServerError", "ERROR:root"):
        assert trouble not in log, log[-4000:]
