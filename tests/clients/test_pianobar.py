"""pianobar (the Debian package) plays from Airwave through the tuner interface, driven under tmux
the way a person uses it: pick a station, listen, `+` thumbs up, `e` explains, `n` skips, `c`
creates a station. What it did is checked through the REST API afterwards (one core, two edges).

pianobar sends its logins and playlist calls to `https://rpc_host:rpc_tls_port` and everything
else to `http://rpc_host:80`, and plays only `http://` audio: the server listens with TLS on 443
and plain HTTP on 80 (`--plain-port`) on a loopback address of its own, with a trustme
certificate given to pianobar as `ca_bundle`. Its audio goes to `audio_pipe`, a FIFO this test
drains at real-time speed, so the playback clock runs as it would through a sound card.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import Account, make_account, needs_low_ports
from support import Api, Server

HOST = "127.0.0.20"  # this module's own loopback address
SAMPLE_RATE = 44100
BYTES_PER_SECOND = SAMPLE_RATE * 2 * 2  # 16-bit stereo PCM from libao's raw driver
PARTNER = """\
partner_user = android
partner_password = AC7IBG09A3DTSYM4R41UJWL07VLN8JI7
device = android-generic
encrypt_password = 6#26FRL$ZWD
decrypt_password = R=U!LH$O2B#
"""


pytestmark = [
    pytest.mark.skipif(
        not (shutil.which("pianobar") and shutil.which("tmux")),
        reason="pianobar and tmux come from Debian (.ci/run installs them)",
    ),
    needs_low_ports(HOST),
]


class Pianobar:
    """pianobar in a tmux session; keys go through its control FIFO, the screen is read back."""

    def __init__(self, home: Path, account: Account, ca_file: Path) -> None:
        self.home = home
        self.session = f"pianobar-{os.getpid()}"
        config = home / "xdg" / "pianobar"
        config.mkdir(parents=True)
        self.ctl, self.audio, self.events = home / "ctl", home / "audio", home / "events.log"
        os.mkfifo(self.ctl)
        os.mkfifo(self.audio)
        hook = home / "event.sh"
        # each event is written whole, then closed by an END line, so a reader never sees half
        hook.write_text(
            f'#!/bin/sh\nblock=$(cat)\nprintf "EVENT %s\\n%s\\nEND %s\\n" "$1" "$block" "$1"'
            f" >> {self.events}\n"
        )
        hook.chmod(0o755)
        (config / "config").write_text(
            f"user = {account.username}\npassword = {account.password}\n"
            f"rpc_host = {HOST}\nrpc_tls_port = 443\nca_bundle = {ca_file}\n{PARTNER}"
            f"audio_quality = high\nsample_rate = {SAMPLE_RATE}\n"
            f"fifo = {self.ctl}\naudio_pipe = {self.audio}\nevent_command = {hook}\n"
        )
        self.playing = threading.Event()
        self._stop = False
        self._drain = threading.Thread(target=self._listen, daemon=True)
        self._drain.start()
        env = f"XDG_CONFIG_HOME={home / 'xdg'} HOME={home}"
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", self.session, "-x", "160", "-y", "60",
             f"env {env} pianobar 2> {home / 'stderr.log'}"],
            check=True,
        )  # fmt: skip

    def _listen(self) -> None:
        """The sound card: take PCM at real-time speed, song after song. pianobar opens the pipe
        for each song and closes it at the song's end; when the next song takes longer to start
        than the pipe's buffer takes to drain, the reader sees the end of the file, and must open
        the pipe again, or pianobar's next open would wait for a reader for ever."""
        chunk = BYTES_PER_SECOND // 20
        while not self._stop:
            with open(self.audio, "rb", buffering=0) as pipe:
                while not self._stop:
                    started = time.monotonic()
                    if not pipe.read(chunk):
                        break
                    self.playing.set()
                    time.sleep(max(0.0, 0.05 - (time.monotonic() - started)))

    def press(self, keys: str) -> None:
        with open(self.ctl, "w") as ctl:
            ctl.write(keys)

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.session, "-S", "-200"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout

    def wait_for(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.screen())
            if found:
                return found
            time.sleep(0.05)
        raise AssertionError(f"pianobar never showed {pattern!r}:\n{self.screen()}")

    def event_log(self) -> str:
        return self.events.read_text() if self.events.exists() else ""

    def events_of(self, name: str) -> list[str]:
        """The whole blocks pianobar has sent for this event so far, oldest first."""
        return re.findall(rf"(?ms)^EVENT {name}\n(.*?)^END {name}$", self.event_log())

    def wait_for_event(self, name: str, after: int = 0, timeout: float = 20) -> str:
        """The block of the event's next occurrence past the first `after` ones."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            blocks = self.events_of(name)
            if len(blocks) > after:
                return blocks[after]
            time.sleep(0.05)
        raise AssertionError(f"pianobar never sent {name}:\n{self.event_log()}")

    def close(self) -> None:
        self.press("q")
        time.sleep(0.5)
        self._stop = True
        subprocess.run(["tmux", "kill-session", "-t", self.session], check=False)
        try:  # a reader waiting in open() for the next song wakes, sees the end and stops
            os.close(os.open(self.audio, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # no reader waiting
            pass
        self._drain.join(timeout=5)


def test_pianobar_plays_rates_explains_skips_and_creates(
    tuner: tuple[Server, Path], tmp_path: Path
) -> None:
    server, ca_file = tuner
    account = make_account(server)
    web: Api = server.client(verify=False)  # the web player, signed in as the same listener
    web.login(account.username, account.password)
    artist = web.ok("v3/sod/search", {"query": "glass harbor", "types": ["AR"]})["results"][0]
    web.ok("v1/station/createStation", {"pandoraId": artist})

    bar = Pianobar(tmp_path, account, ca_file)
    try:
        bar.wait_for(r"\(i\) Login\.\.\. Ok\.")
        pick = bar.wait_for(r"(\d+)\) [ qQ]{3,4}Glass Harbor Radio")  # q: in QuickMix
        bar.wait_for(r"\[\?\] Select station:")
        bar.press(pick.group(1) + "\n")
        song = bar.wait_for(r'\|>  "([^"]+)" by "([^"]+)" on "([^"]+)"')
        assert bar.playing.wait(20), "no audio reached the audio pipe"
        # the playback clock runs: "#   -00:01/00:02", remaining below the track's length (which
        # pianobar reads from the audio: known while the server is still transcoding it)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            clock = re.findall(r"#\s+-(\d\d):(\d\d)/(\d\d):(\d\d)", bar.screen())
            if any(0 < int(m) * 60 + int(s) < int(tm) * 60 + int(ts) for m, s, tm, ts in clock):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the playback clock never moved:\n{bar.screen()}")

        bar.press("+")  # thumbs up the song playing now
        bar.wait_for(r"Loving song\.\.\. Ok\.")
        loved = re.findall(r"(?m)^title=(.*)$", bar.wait_for_event("songlove"))[0]
        bar.press("e")  # why this song?
        bar.wait_for(r"because it features")
        starts = len(bar.events_of("songstart"))
        bar.press("n")  # skip
        bar.wait_for_event("songstart", after=starts)

        bar.press("c")  # a new station, made in pianobar
        bar.wait_for(r"Create station from artist or title:")
        bar.press("Kilohertz Garden\n")
        bar.wait_for(r"Select artist:")
        bar.press("0\n")
        bar.wait_for(r"Creating station\.\.\. Ok\.")
        assert "/!\\" not in bar.screen(), bar.screen()
    finally:
        bar.close()

    assert song.group(1)
    stations = web.ok("v1/station/getStations", {})["stations"]
    names = {s["name"]: s["stationId"] for s in stations}
    assert "Kilohertz Garden Radio" in names  # the web player sees pianobar's station
    thumbs = web.ok(
        "v1/station/getStationFeedback",
        {"stationId": names["Glass Harbor Radio"], "positive": True},
    )["feedback"]
    assert loved in {f["songTitle"] for f in thumbs}
