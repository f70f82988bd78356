"""Pithos (the Debian package, 1.1.2) plays from Airwave through the tuner interface: the GTK
application itself, on a virtual display (Xvfb), driven over its D-Bus service the way a media
key or a panel applet drives it: pause, thumbs up, skip. What it did is checked through the
REST API and the server's access log afterwards (one core, two edges).

Pithos 1.1.2 keeps its settings, password included, in `$XDG_CONFIG_HOME/pithos.ini` (no
Secret Service); its `force_client` setting (a JSON client like data.py's) carries an `rpcUrl`
pointing at the server, and `last_station_id` the station to resume. It sends its logins and
playlists over https and everything else over plain http to that one host, so the server listens
with TLS on 443 and plain HTTP on 80 (`--plain-port`) on a loopback address of its own; Python's
ssl trusts the trustme CA through `SSL_CERT_FILE`. Its playbin's `autoaudiosink` is kept away
from sound cards and servers (their sinks ranked out) and falls back to a fake sink, which still
plays on the clock: a 2-second track ends after 2 seconds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Account, make_account, needs_low_ports, pithos_client
from desktop import Desktop
from support import Api, Server

HOST = "127.0.0.22"  # this module's own loopback address (pithos's replay has .21)
BUS = "net.kevinmehall.Pithos"  # the service its mpris plugin exports (on by default)
SONG_FIELD = re.compile(r"'(\w+)': <(['\"])(.*?)\2>")
REAL_SINKS = ("pulsesink", "pipewiresink", "alsasink", "openalsink", "jackaudiosink", "osssink")
CLIENT = pithos_client(HOST)  # its rpcUrl pointing at the server


pytestmark = [
    pytest.mark.skipif(
        not all(shutil.which(tool) for tool in ("pithos", "Xvfb", "dbus-daemon", "gdbus")),
        reason="pithos, Xvfb, dbus-daemon and gdbus come from Debian (.ci/run installs them)",
    ),
    needs_low_ports(HOST),
]


class Pithos(Desktop):
    """The app on its own X display and D-Bus session bus; its log (-vv) is kept in `log`."""

    def __init__(self, home: Path, account: Account, station_id: str, ca_file: Path) -> None:
        config = home / "config"
        config.mkdir(parents=True)
        ini = config / "pithos.ini"
        ini.write_text(
            f"username={account.username}\npassword={account.password}\n"
            f"force_client={json.dumps(CLIENT)}\nlast_station_id={station_id}\n"
            "audio_quality=highQuality\nenable_mpris=True\nenable_mediakeys=False\n"
            "notify=False\nenable_screensaverpause=False\nenable_lastfm=False\n"
        )
        ini.chmod(0o600)
        super().__init__("1024x768x24")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(config),
            "XDG_CACHE_HOME": str(home / "cache"),
            "SSL_CERT_FILE": str(ca_file),
            "NO_AT_BRIDGE": "1",  # no accessibility bus to look for
            # no sound card or sound server, even on a desktop: autoaudiosink's fake sink
            "GST_PLUGIN_FEATURE_RANK": ",".join(f"{sink}:NONE" for sink in REAL_SINKS),
            "LANG": "C.UTF-8",
        }
        self.run_app(["pithos", "-vv"], env)

    def wait_for(self, pattern: str, timeout: float = 30, after: int = 0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, "".join(self.log[after:]))
            if found:
                return found
            assert self.children[-1].poll() is None, f"pithos exited:\n{self.text()[-4000:]}"
            time.sleep(0.05)
        raise AssertionError(f"pithos never logged {pattern!r}:\n{self.text()[-4000:]}")

    def call(self, method: str, interface: str = BUS, path: str = "/net/kevinmehall/Pithos") -> str:
        """A method call on its session bus, as `gdbus call` prints the reply."""
        done = subprocess.run(
            ["gdbus", "call", "--address", self.bus, "--dest", BUS, "--object-path", path,
             "--method", f"{interface}.{method}"],
            capture_output=True, text=True, timeout=20, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{method}: {done.stderr}\n{self.text()[-4000:]}"
        return done.stdout

    def is_playing(self) -> bool:
        return self.call("IsPlaying").strip() == "(true,)"

    def current_song(self) -> dict[str, str]:
        """GetCurrentSong's a{sv} as gdbus prints it: ({'title': <'The Tide'>, ...},)."""
        reply = self.call("GetCurrentSong")
        return {key: value for key, _, value in SONG_FIELD.findall(reply)}

    def pause(self, timeout: float = 30) -> None:
        """PlayPause while it plays; between two songs (nothing playing yet) it would play."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_playing():
                self.call("PlayPause")
                time.sleep(0.3)
                if not self.is_playing():
                    return
            time.sleep(0.05)
        raise AssertionError(f"pithos never paused:\n{self.text()[-4000:]}")


def _audio_fetches(server: Server) -> list[dict[str, Any]]:
    """The access log's answers to audio requests (not receipts): only Pithos plays here."""
    fetched = []
    for line in list(server.errors):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        path = entry.get("path") or ""
        if (
            entry.get("msg") == "request"
            and path.startswith("/audio/")
            and not path.startswith("/audio/receipt")
        ):
            fetched.append(entry)
    return fetched


def _wait_for_audio(server: Server, seen: int, timeout: float = 20) -> None:
    """Until more than `seen` audio requests were answered, the last with audio."""
    deadline = time.monotonic() + timeout
    while True:
        fetched = _audio_fetches(server)
        if len(fetched) > seen:
            last = fetched[-1]
            assert last["status"] in (200, 206) and last["bytes"] > 0, last
            return
        assert time.monotonic() < deadline, server.log_tail()
        time.sleep(0.1)


def test_pithos_plays_pauses_loves_and_skips(tuner: tuple[Server, Path], tmp_path: Path) -> None:
    server, ca_file = tuner
    account = make_account(server)
    web: Api = server.client(verify=False)  # the web player, signed in as the same listener
    web.login(account.username, account.password)
    artist = web.ok("v3/sod/search", {"query": "glass harbor", "types": ["AR"]})["results"][0]
    station_id = web.ok("v1/station/createStation", {"pandoraId": artist})["stationId"]

    app = Pithos(tmp_path, account, station_id, ca_file)
    try:
        # signs in over TLS, lists the stations, resumes the saved one and plays it through
        app.wait_for(r"Pandora connected")
        app.wait_for(rf"Restoring saved station: id = {station_id}\b")
        app.wait_for(r"Buffer 100%\. Song starting")
        # the demo tracks last 2 s: one ends (EOS after the clock ran) and the next starts
        app.wait_for(r"INFO - \S+ - EOS")
        app.wait_for(r"Starting song: index = 1\b")
        _wait_for_audio(server, 0)
        app.wait_for(r"Downloaded album art for 0\b")  # over https, trusting the CA

        # the play/pause key: paused, the song stays current while it is rated
        app.pause()
        song = app.current_song()
        assert song["artist"] and song["title"], song

        mark = len(app.log)
        app.call("LoveCurrentSong")  # thumbs up, sent over plain http
        app.wait_for(r"method=station\.addFeedback", after=mark)
        app.wait_for(r'\{"stat":"ok","result":\{[^\n]*"feedbackId"', after=mark)
        thumbs: list[Any] = []
        deadline = time.monotonic() + 20
        while song["title"] not in {f["songTitle"] for f in thumbs}:
            assert time.monotonic() < deadline, (song, thumbs, app.text()[-4000:])
            time.sleep(0.1)
            thumbs = web.ok(
                "v1/station/getStationFeedback", {"stationId": station_id, "positive": True}
            )["feedback"]
        assert app.is_playing() is False and app.current_song() == song  # still paused on it

        # skip: the next song is fetched and plays
        fetched = len(_audio_fetches(server))
        mark = len(app.log)
        app.call("SkipSong")
        app.wait_for(r"Starting song: index = \d+", after=mark)
        app.wait_for(r"Buffer 100%\. Song starting", after=mark)
        _wait_for_audio(server, fetched)
    finally:
        app.close()

    log = app.text()
    troubles = ("Traceback", "fault code", "HTTP error", "Network error", "Gstreamer error")
    for trouble in (*troubles, "Invalid image url"):
        assert trouble not in log, log[-4000:]
