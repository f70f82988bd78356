"""How fast Airwave builds and refreshes a catalogue and starts, beside mpd in the same run.

A library of N tagged files (default 20,000: MP3, FLAC and Ogg Vorbis in
`Artist/Album (Year)/NN Title.ext`, realistic tags, some multi-valued genres, MusicBrainz
track ids, a cover.jpg in some album folders) is generated once per run (or reused with
--library DIR). Every file is then read once so that both tools start from the same warm
page cache. The figures of issue 17, each measured in --rounds rounds (default 3) with
Airwave and mpd taking turns to go first, medians printed with the ratio:

- full scan from process start: `airwave scan --no-analyze --library DIR --data-dir FRESH`
  (the real CLI in a subprocess, SQLite, or with --database a fresh PostgreSQL schema per full
  scan, no other AIRWAVE_* variables; sound analysis is another figure, bench/analysis.py)
  against mpd (Debian package) building its database of the same tree from a throw-away config
  on a unix socket, from process start to database written;
- unchanged rescan by the command (the same command again) against mpd's `update` with nothing
  changed;
- unchanged rescan inside a running server (`airwave serve --library DIR`, one process): a
  Subsonic startScan by an administrator until /healthz shows the scan done, and the
  server's own time for the scan and what follows it (with --baseline-src both codes' servers
  run at once and take turns, round by round);
- start to first 200 on an existing data dir: `airwave serve` (default workers, and
  --workers 1) until GET /healthz answers 200, against mpd starting on its database until it
  answers `status`.

    .venv/bin/python bench/scan.py [--files 20000] [--library DIR] [--rounds 3] [--keep]
                                   [--skip-mpd] [--baseline-src DIR]
                                   [--database sqlite,postgresql]

With --baseline-src, another checkout's code (say main's, `git archive main src | tar -x -C
DIR`) is measured the same way, taking turns with this one's: before and after in one run.

Prints one line per figure and the ratios measured in the same run; never asserts. The machine
has to be otherwise idle: `idle_before`, each figure's `other_cpu_s` (CPU-seconds the rest of
the machine used while it was measured) and the load average before and after show when it was
not.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from benchkit import compile_bytecode, databases, interpreter

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.databases import PostgresSchema  # noqa: E402  (the harness)

# the `airwave` command of the environment running this bench (`.venv` as documented; another
# venv's python runs it in that one, e.g. to compare interpreter builds)
AIRWAVE = Path(sys.executable).parent / "airwave"
POLL_S = 0.010  # how often a running server's scan status is asked for
MARKER = ".airwave-bench-scan"  # written last: the library in this folder is complete
GENERATOR_VERSION = 1
TRACKS_PER_ALBUM = 10
ALBUMS_PER_ARTIST = 4
FORMATS = ("mp3", "flac", "ogg")
TEMPLATE_SECONDS = 0.5
RATE = 44100
COVER_SHARE = 0.3  # albums with a cover.jpg beside the tracks
TARGET_MPD_RATIO = 0.6  # full scan files/s from process start, against mpd's
TARGET_RESCAN_S = 0.5  # unchanged rescan by the command
TARGET_SERVER_RESCAN_S = 0.2  # unchanged rescan inside a running server
TARGET_START_S = 0.4  # start to first 200 on an existing data dir
TARGET_RSS_MB = 200
ADMIN, ADMIN_PASSWORD = "benchadmin", "bench admin password"
_SUMMARY = re.compile(r"(\d+) files in ([\d.]+) s \((\d+) files/s\)")
_TAG_READS = re.compile(r"(\d+) tag reads")


# --------------------------------------------------------------------------- the library

_SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ra",
    "ven",
    "tor",
    "sa",
    "el",
    "dun",
    "fi",
    "bra",
    "no",
    "zel",
    "qua",
    "rin",
    "ø",
    "é",
    "ström",
    "ja",
    "ko",
    "mar",
    "lu",
    "the",
    "ny",
    "os",
    "ber",
    "gi",
    "ä",
    "ul",
    "wen",
)
_WORDS = (
    "night",
    "river",
    "glass",
    "summer",
    "engine",
    "paper",
    "golden",
    "silent",
    "electric",
    "blue",
    "city",
    "ghost",
    "heart",
    "echo",
    "winter",
    "fire",
    "ocean",
    "velvet",
    "satellite",
    "garden",
    "morning",
    "shadow",
    "radio",
    "wild",
    "neon",
    "stone",
    "honey",
    "midnight",
    "crystal",
    "thunder",
    "highway",
    "dream",
    "silver",
    "broken",
    "paradise",
    "starlight",
    "machine",
    "desert",
    "rain",
    "love",
)
_GENRES = (
    "Rock",
    "Pop",
    "Jazz",
    "Electronic",
    "Hip-Hop",
    "Folk",
    "Classical",
    "Metal",
    "Blues",
    "Soul",
    "Reggae",
    "Country",
    "Ambient",
    "Punk",
    "Indie",
    "Funk",
    "R&B",
    "Techno",
    "House",
    "Latin",
)


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


def _phrase(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high))).title()


@dataclass
class AlbumJob:
    folder: str  # relative: Artist/Album (Year)
    fmt: str
    artist: str
    album: str
    year: int
    genres: list[str]
    cover_seed: int | None
    tracks: list[tuple[int, str, str, str]] = field(
        default_factory=list
    )  # (number, title, artist, mbid)


def plan(files: int, seed: int = 1) -> list[AlbumJob]:
    """The whole library, deterministic for (files, seed): ~N/40 artists x 4 albums x 10 tracks."""
    rng = random.Random(seed)
    jobs: list[AlbumJob] = []
    artists_needed = -(-files // (ALBUMS_PER_ARTIST * TRACKS_PER_ALBUM))
    used: set[str] = set()
    remaining = files
    for a in range(artists_needed):
        artist = _name(rng) if rng.random() < 0.5 else f"{_name(rng)} {_name(rng)}"
        if rng.random() < 0.25:
            artist = f"The {_phrase(rng, 1, 2)}"
        while artist.casefold() in used:
            artist = f"{artist} {a}"
        used.add(artist.casefold())
        main_genre = rng.choice(_GENRES)
        for b in range(ALBUMS_PER_ARTIST):
            if remaining <= 0:
                break
            year = rng.randint(1965, 2024)
            album = _phrase(rng, 1, 3)
            genres = [main_genre] if rng.random() < 0.75 else [main_genre, rng.choice(_GENRES)]
            genres = list(dict.fromkeys(genres))
            job = AlbumJob(
                folder=f"{artist}/{album} ({year})",
                fmt=FORMATS[(a * ALBUMS_PER_ARTIST + b) % len(FORMATS)],
                artist=artist,
                album=album,
                year=year,
                genres=genres,
                cover_seed=rng.randrange(1 << 30) if rng.random() < COVER_SHARE else None,
            )
            for n in range(1, min(TRACKS_PER_ALBUM, remaining) + 1):
                title = _phrase(rng, 1, 4)
                track_artist = artist if rng.random() < 0.9 else f"{artist} feat. {_name(rng)}"
                job.tracks.append(
                    (n, title, track_artist, str(uuid.UUID(int=rng.getrandbits(128), version=4)))
                )
            remaining -= len(job.tracks)
            jobs.append(job)
    return jobs


def encode_templates(folder: Path) -> dict[str, bytes]:
    """One short, untagged file per format, encoded with PyAV; every library file is a tagged
    copy."""
    import av
    import numpy as np

    t = np.arange(int(RATE * TEMPLATE_SECONDS)) / RATE
    tone = 0.2 * np.sin(2 * np.pi * 440 * t) + 0.05 * np.sin(2 * np.pi * 660 * t)
    audio = np.ascontiguousarray(np.stack([tone, tone]).astype(np.float32))
    settings = {
        "mp3": ("mp3", "libmp3lame", {}),
        "flac": ("flac", "flac", {}),
        "ogg": ("ogg", "vorbis", {"strict": "experimental"}),
    }
    out: dict[str, bytes] = {}
    for fmt, (container_format, codec, options) in settings.items():
        path = folder / f"template.{fmt}"
        with av.open(str(path), "w", format=container_format) as container:
            stream = container.add_stream(codec, rate=RATE, options=options)
            stream.layout = "stereo"
            if fmt != "flac":
                stream.bit_rate = 128_000
            frame = av.AudioFrame.from_ndarray(audio, format="fltp", layout="stereo")
            frame.sample_rate, frame.pts = RATE, 0
            for packet in stream.encode(frame):
                container.mux(packet)
            for packet in stream.encode(None):
                container.mux(packet)
        out[fmt] = path.read_bytes()
        path.unlink()
    return out


def _tagged(
    template: bytes, fmt: str, job: AlbumJob, number: int, title: str, artist: str, mbid: str
) -> bytes:
    from mutagen import id3
    from mutagen.flac import FLAC
    from mutagen.mp3 import MP3
    from mutagen.oggvorbis import OggVorbis

    buffer = io.BytesIO(template)
    if fmt == "mp3":
        audio = MP3(buffer)
        if audio.tags is None:
            audio.add_tags()
        frames = audio.tags
        frames.clear()  # FFmpeg's muxer writes an encoder frame
        for frame in (
            id3.TIT2(encoding=3, text=[title]),
            id3.TPE1(encoding=3, text=[artist]),
            id3.TALB(encoding=3, text=[job.album]),
            id3.TPE2(encoding=3, text=[job.artist]),
            id3.TRCK(encoding=3, text=[f"{number}/{len(job.tracks)}"]),
            id3.TDRC(encoding=3, text=[str(job.year)]),
            id3.TCON(encoding=3, text=list(job.genres)),
            id3.UFID(owner="http://musicbrainz.org", data=mbid.encode()),
        ):
            frames.add(frame)
        buffer.seek(0)
        audio.save(buffer, v2_version=4)
    else:
        audio = FLAC(buffer) if fmt == "flac" else OggVorbis(buffer)
        if audio.tags is None:
            audio.add_tags()
        comments = audio.tags
        for key in list(comments.keys()):
            del comments[key]
        for key, values in {
            "TITLE": [title],
            "ARTIST": [artist],
            "ALBUM": [job.album],
            "ALBUMARTIST": [job.artist],
            "TRACKNUMBER": [str(number)],
            "TRACKTOTAL": [str(len(job.tracks))],
            "DATE": [str(job.year)],
            "GENRE": list(job.genres),
            "MUSICBRAINZ_TRACKID": [mbid],
        }.items():
            comments[key] = values
        buffer.seek(0)
        audio.save(buffer)
    return buffer.getvalue()


def _cover(seed: int) -> bytes:
    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.new("RGB", (500, 500), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x, y = rng.randrange(400), rng.randrange(400)
        draw.ellipse(
            (x, y, x + rng.randint(40, 200), y + rng.randint(40, 200)),
            fill=tuple(rng.randrange(256) for _ in range(3)),
        )
    out = io.BytesIO()
    image.save(out, "JPEG", quality=85)
    return out.getvalue()


def write_albums(root: str, templates: dict[str, bytes], jobs: list[AlbumJob]) -> int:
    """Worker: write some album folders (tracks via a temp name and rename: a file appears
    whole)."""
    written = 0
    for job in jobs:
        folder = Path(root) / job.folder
        folder.mkdir(parents=True, exist_ok=True)
        for number, title, artist, mbid in job.tracks:
            data = _tagged(templates[job.fmt], job.fmt, job, number, title, artist, mbid)
            path = folder / f"{number:02d} {title}.{job.fmt}"
            partial = path.with_name(f".{path.name}.partial")
            partial.write_bytes(data)
            os.replace(partial, path)
            written += 1
        if job.cover_seed is not None:
            (folder / "cover.jpg").write_bytes(_cover(job.cover_seed))
    return written


def ensure_library(root: Path, files: int, scratch: Path) -> tuple[bool, float]:
    """The library in `root`, generated unless a complete one for the same size is there."""
    marker = root / MARKER
    expected = f"v{GENERATOR_VERSION} files={files}\n"
    if marker.exists() and marker.read_text() == expected:
        return False, 0.0
    started = time.perf_counter()
    if root.exists() and any(root.iterdir()):
        if not marker.exists():
            raise RuntimeError(
                f"{root} is not empty and was not written by this bench; use an empty folder"
            )
        shutil.rmtree(root)  # an earlier bench library of another size
    root.mkdir(parents=True, exist_ok=True)
    templates = encode_templates(scratch)
    jobs = plan(files)
    workers = os.cpu_count() or 1
    chunks = [jobs[i :: workers * 8] for i in range(workers * 8)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        written = sum(
            pool.map(write_albums, [str(root)] * len(chunks), [templates] * len(chunks), chunks)
        )
    if written != files:
        raise RuntimeError(f"generated {written} files, expected {files}")
    marker.write_text(expected)
    os.sync()  # no writeback of the fresh library during the measurements
    return True, time.perf_counter() - started


def warm_cache(root: Path) -> tuple[int, int]:
    """Read every file once: both tools then see the same warm page cache."""
    count = size = 0
    for directory, _dirs, names in os.walk(root):
        for name in names:
            with open(os.path.join(directory, name), "rb") as handle:
                while chunk := handle.read(1 << 20):
                    size += len(chunk)
            count += 1
    return count, size


# --------------------------------------------------------------------------- the machine

_TICK = os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float:
    """CPU-seconds spent by everything on the machine (all cores), from /proc/stat."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / _TICK  # guest time is already counted in user


def process_cpu_s(pid: int) -> float:
    """user + system CPU-seconds of one live process (all its threads)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def tree_cpu_s(pid: int) -> float:
    """user + system CPU-seconds of a live process and its live descendants."""
    total, frontier = 0.0, [pid]
    while frontier:
        current = frontier.pop()
        total += process_cpu_s(current)
        frontier.extend(_children(current))
    return total


def idle_share(seconds: float = 1.0) -> float:
    """Share of the machine's CPU left idle over a short window: is anything else running?"""
    busy, started = machine_busy_s(), time.perf_counter()
    time.sleep(seconds)
    elapsed = time.perf_counter() - started
    return max(0.0, 1 - (machine_busy_s() - busy) / (elapsed * (os.cpu_count() or 1)))


def other_cpu(machine_busy: float, own_cpu: float) -> str:
    """CPU-seconds others took during a measurement: more than a few tenths means a skewed
    figure."""
    return f"other_cpu_s={max(0.0, machine_busy - own_cpu):.1f}"


# --------------------------------------------------------------------------- process-tree memory


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


def _status_kb(pid: int, *fields: str) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key in fields:
                    out[key] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


class TreeMemory:
    """Polls /proc for a process and its descendants: per-process VmHWM, and tree-wide RSS/PSS
    sums."""

    def __init__(self, pid: int, interval: float = 0.1) -> None:
        self.pid, self.interval = pid, interval
        self.parent_hwm_kb = 0
        self.worker_hwm_kb = 0  # the largest descendant's own peak
        self.tree_rss_kb = 0
        self.tree_pss_kb = 0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        seen: set[int] = set()
        while not self._stop.is_set():
            tree, frontier = [], [self.pid]
            while frontier:
                pid = frontier.pop()
                tree.append(pid)
                frontier.extend(_children(pid))
            rss = pss = 0
            for pid in tree:
                status = _status_kb(pid, "VmHWM", "VmRSS")
                rss += status.get("VmRSS", 0)
                pss += _pss_kb(pid)
                if pid == self.pid:
                    self.parent_hwm_kb = max(self.parent_hwm_kb, status.get("VmHWM", 0))
                else:
                    self.worker_hwm_kb = max(self.worker_hwm_kb, status.get("VmHWM", 0))
                seen.add(pid)
            self.tree_rss_kb = max(self.tree_rss_kb, rss)
            self.tree_pss_kb = max(self.tree_pss_kb, pss)
            self.processes = len(seen)
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


# --------------------------------------------------------------------------- airwave


@dataclass
class AirwaveRun:
    seconds: float  # wall time of the whole command (interpreter start to exit)
    scan_seconds: float  # the scanner's own figure (walk + read + write; no start-up or migrations)
    files: int
    tag_reads: int
    cpu_seconds: float  # user + system, the whole process tree
    machine_busy: (
        float  # CPU-seconds used on the whole machine meanwhile (this bench's poller included)
    )
    max_rss_mb: float  # wait4: the largest single process of the tree
    memory: TreeMemory
    output: str


_SOURCE: list[Path | None] = [None]  # the Airwave source measured now: None = this checkout
# data dirs whose database is a PostgreSQL schema (--database postgresql): made at the full scan
_SCHEMAS: dict[Path, PostgresSchema] = {}


def airwave_env(data_dir: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRWAVE_")}
    if _SOURCE[0] is not None:  # --baseline-src: the same commands on another checkout's code
        env["PYTHONPATH"] = str(_SOURCE[0] / "src")
    schema = _SCHEMAS.get(data_dir) if data_dir is not None else None
    if schema is not None:
        env["AIRWAVE_DATABASE_URL"] = schema.url
    return env


def use_source(source: Path | None) -> None:
    _SOURCE[0] = source


def run_airwave(library: Path, data_dir: Path) -> AirwaveRun:
    """`airwave scan --no-analyze`: the catalogue alone, as issue 17's figure is defined."""
    cmd = [
        *(str(AIRWAVE), "scan", "--no-analyze"),
        *("--library", str(library), "--data-dir", str(data_dir)),
    ]
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        busy = machine_busy_s()
        started = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            stdout=out_file,
            stderr=err_file,
            env=airwave_env(data_dir),
            stdin=subprocess.DEVNULL,
        )
        memory = TreeMemory(proc.pid)
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            memory.stop()
        seconds = time.perf_counter() - started
        busy = machine_busy_s() - busy
        proc.returncode = os.waitstatus_to_exitcode(status)
        out_file.seek(0)
        err_file.seek(0)
        output = out_file.read().decode(errors="replace")
        errors = err_file.read().decode(errors="replace")
    summary, reads = _SUMMARY.search(output), _TAG_READS.search(output)
    if proc.returncode != 0 or summary is None or reads is None:
        raise RuntimeError(
            f"airwave scan failed (exit {proc.returncode}):\n{output}\n{errors[-3000:]}"
        )
    return AirwaveRun(
        seconds,
        float(summary.group(2)),
        int(summary.group(1)),
        int(reads.group(1)),
        usage.ru_utime + usage.ru_stime,
        busy,
        usage.ru_maxrss / 1024,
        memory,
        output.strip(),
    )


# --------------------------------------------------------------------------- mpd


MPD_CONF = """\
music_directory    "{music}"
db_file            "{tmp}/database"
log_file           "{tmp}/log"
pid_file           "{tmp}/pid"
state_file         "{tmp}/state"
playlist_directory "{tmp}/playlists"
bind_to_address    "{tmp}/socket"
auto_update        "no"
zeroconf_enabled   "no"
audio_output {{
    type "null"
    name "null"
}}
"""


class MpdClient:
    """Just enough of the mpd protocol: one command, the key/value lines of its answer."""

    def __init__(self, path: str, pid: int, deadline: float) -> None:
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.perf_counter() > deadline or not _running(pid):
                    raise RuntimeError("mpd did not open its socket") from None
                time.sleep(0.005)
        self.file = self.sock.makefile("rb")
        greeting = self.file.readline()
        if not greeting.startswith(b"OK MPD"):
            raise RuntimeError(f"unexpected mpd greeting {greeting!r}")

    def command(self, line: str, deadline: float | None = None) -> dict[str, str]:
        """Send one command; an answer later than `deadline` (perf_counter) is an error."""
        self.sock.settimeout(max(0.001, deadline - time.perf_counter()) if deadline else None)
        try:
            return self._command(line)
        except TimeoutError:
            raise RuntimeError(f"mpd did not answer {line!r} in time") from None

    def _command(self, line: str) -> dict[str, str]:
        self.sock.sendall(line.encode() + b"\n")
        answer: dict[str, str] = {}
        while True:
            raw = self.file.readline()
            if not raw:
                raise RuntimeError("mpd closed the connection")
            if raw == b"OK\n":
                return answer
            if raw.startswith(b"ACK"):
                raise RuntimeError(f"mpd: {raw.decode(errors='replace').strip()}")
            key, _, value = raw.decode(errors="replace").rstrip("\n").partition(": ")
            answer[key] = value

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def _running(pid: int) -> bool:
    """Alive and not a zombie, without reaping it (the caller reaps with wait4 for its rusage)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def wait_update(client: MpdClient, deadline: float) -> dict[str, str]:
    """Block in `idle update` (no polling to compete with the update) until no update is running."""
    while True:
        status = client.command("status")
        if "updating_db" not in status:
            return status
        client.command("idle update", deadline)


@dataclass
class MpdRun:
    full_seconds: float
    songs: int
    rescan_seconds: float
    full_other_cpu: str
    rescan_other_cpu: str
    max_rss_mb: float
    version: str


def run_mpd(
    mpd: str, library: Path, tmp: Path, timeout: float, cpus: set[int] | None = None
) -> MpdRun:
    """mpd from an empty database: full build, then an unchanged `update`; optionally pinned to
    `cpus`."""
    tmp.mkdir()
    (tmp / "playlists").mkdir()
    conf = tmp / "mpd.conf"
    conf.write_text(MPD_CONF.format(music=library, tmp=tmp))
    version = subprocess.run(
        [mpd, "--version"], capture_output=True, text=True
    ).stdout.splitlines()[0]
    with (tmp / "stderr").open("wb") as stderr:
        busy = machine_busy_s()
        started = time.perf_counter()
        pin = (
            (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        )  # before mpd starts its threads
        proc = subprocess.Popen(
            [mpd, "--no-daemon", str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            preexec_fn=pin,
        )
    client: MpdClient | None = None
    try:
        deadline = started + timeout
        client = MpdClient(str(tmp / "socket"), proc.pid, deadline)
        # With no db_file mpd queues a full update before it serves clients; `stats` confirms it ran
        # (idle events are kept per client from its connection on, so none is missed in between).
        while True:
            wait_update(client, deadline)
            stats = client.command("stats")
            if int(stats.get("db_update", "0")) > 0:
                break
            client.command("idle update", deadline)
        full = time.perf_counter() - started
        mpd_cpu = process_cpu_s(proc.pid)
        full_other = other_cpu(machine_busy_s() - busy, mpd_cpu)
        songs = int(stats.get("songs", "0"))
        busy = machine_busy_s()
        started = time.perf_counter()
        client.command("update")
        wait_update(client, time.perf_counter() + timeout)
        rescan = time.perf_counter() - started
        rescan_other = other_cpu(machine_busy_s() - busy, process_cpu_s(proc.pid) - mpd_cpu)
    except BaseException:
        log = (tmp / "log").read_text(errors="replace")[-2000:] if (tmp / "log").exists() else ""
        _stop(proc)
        if isinstance(proc.returncode, int) and proc.returncode not in (0, -signal.SIGTERM):
            raise RuntimeError(f"mpd exited with {proc.returncode}; log:\n{log}") from None
        raise
    finally:
        if client is not None:
            client.close()
    usage = _stop(proc)
    return MpdRun(
        full,
        songs,
        rescan,
        full_other,
        rescan_other,
        usage.ru_maxrss / 1024 if usage else 0.0,
        version,
    )


def _stop(proc: subprocess.Popen):  # noqa: ANN202 - resource.struct_rusage | None
    """SIGTERM (mpd saves and exits cleanly), SIGKILL after 15 s; the child's resource usage."""
    if proc.returncode is not None:
        return None
    try:
        os.kill(
            proc.pid, signal.SIGTERM
        )  # not Popen.send_signal: it would reap the child before wait4
    except ProcessLookupError:
        pass
    for _ in range(300):
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage


def find_or_install_mpd() -> tuple[str | None, str]:
    found = shutil.which("mpd") or (os.path.exists("/usr/bin/mpd") and "/usr/bin/mpd") or None
    if found:
        return found, "installed"
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return None, "not installed (apt-get install mpd needs root)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "mpd"]
    if subprocess.run(install, capture_output=True, env=env).returncode != 0:
        subprocess.run(["apt-get", "update"], capture_output=True, env=env)
        result = subprocess.run(install, capture_output=True, text=True, env=env)
        if result.returncode != 0:
            return None, f"apt-get install mpd failed: {result.stderr.strip().splitlines()[-1:]}"
    # The package starts a system mpd where an init system runs; this bench uses its own instance
    # only.
    return shutil.which("mpd") or "/usr/bin/mpd", "installed now with apt-get"


# --------------------------------------------------------------------------- starts and servers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_status(port: int, path: str) -> int | None:
    """The status of one HTTP/1.0 GET, or None while nothing listens yet."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            head = sock.makefile("rb").readline()
    except OSError:
        return None
    parts = head.split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def http_json(port: int, path: str) -> dict:
    import json

    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = sock.makefile("rb").read()
    return json.loads(data.partition(b"\r\n\r\n")[2] or b"{}")


def start_airwave(data_dir: Path, port: int, *args: str, env: dict[str, str] | None = None):  # noqa: ANN201
    return subprocess.Popen(
        [str(AIRWAVE), "serve", "--data-dir", str(data_dir), "--port", str(port), *args],
        env={**airwave_env(data_dir), **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_airwave(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # no drain
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def airwave_first_200(data_dir: Path, timeout: float, *args: str) -> tuple[float, str]:
    """Seconds from `airwave serve` (an existing data dir, no library) to GET /healthz 200; the
    CPU-seconds its processes used until then, and the rest of the machine meanwhile."""
    port = free_port()
    busy = machine_busy_s()
    started = time.perf_counter()
    proc = start_airwave(data_dir, port, *args)
    try:
        while (status := http_status(port, "/healthz")) != 200:
            if proc.poll() is not None:
                raise RuntimeError(f"airwave serve exited with {proc.returncode}")
            if time.perf_counter() - started > timeout:
                raise RuntimeError(f"airwave serve answered no 200 within {timeout:g} s ({status})")
            time.sleep(0.002)
        seconds = time.perf_counter() - started
        cpu = tree_cpu_s(proc.pid)
        other = other_cpu(machine_busy_s() - busy, cpu)
    finally:
        stop_airwave(proc)
    return seconds, f"cpu_s={cpu:.2f} {other}"


def mpd_first_answer(mpd: str, tmp: Path, timeout: float) -> tuple[float, str]:
    """Seconds from starting mpd on the database it built to its answer to `status`."""
    (tmp / "socket").unlink(missing_ok=True)
    busy = machine_busy_s()
    started = time.perf_counter()
    proc = subprocess.Popen(
        [mpd, "--no-daemon", str(tmp / "mpd.conf")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client: MpdClient | None = None
    try:
        client = MpdClient(str(tmp / "socket"), proc.pid, started + timeout)
        client.command("status", started + timeout)
        seconds = time.perf_counter() - started
        cpu = process_cpu_s(proc.pid)
        other = other_cpu(machine_busy_s() - busy, cpu)
    finally:
        if client is not None:
            client.close()
        _stop(proc)
    return seconds, f"cpu_s={cpu:.2f} {other}"


@dataclass
class ServerRescans:
    start_scan_s: float  # the scan at the server's start (unchanged library), its own clock
    external_s: list[float]  # startScan sent -> /healthz shows it done, polled every POLL_S
    total_s: list[float]  # the server's own clock: scan and what follows (playlists, similarity)
    scanner_s: list[float]  # the server's own clock: the scanner alone
    tag_reads: int


class ServerRescanner:
    """One running server holding the library, asked for unchanged rescans one at a time: the
    servers of every code being measured run at once and take turns, round by round."""

    def __init__(self, library: Path, data_dir: Path, timeout: float) -> None:
        user = subprocess.run(
            [str(AIRWAVE), "user", "add", ADMIN, "--admin", "--password-stdin"]
            + ["--data-dir", str(data_dir)],
            input=ADMIN_PASSWORD + "\n",
            capture_output=True,
            text=True,
            env=airwave_env(data_dir),
        )
        if user.returncode != 0 and "exists" not in user.stderr + user.stdout:
            raise RuntimeError(f"airwave user add failed: {user.stderr.strip()}")
        self.port = free_port()
        self.timeout = timeout
        env = {
            "AIRWAVE_ANALYZE_AUDIO": "false",
            "AIRWAVE_WORKERS": "1",
            "AIRWAVE_ACCESS_LOG": "false",
        }
        self.proc = start_airwave(data_dir, self.port, "--library", str(library), env=env)
        self.scans = 1
        try:
            first = self._wait_scans(1, time.perf_counter() + timeout)
        except BaseException:
            self.stop()
            raise
        self.out = ServerRescans(self._total(first["last"]), [], [], [], 0)

    @staticmethod
    def _total(last: dict) -> float:
        # total_seconds: published since the lease change; older servers: the scanner's own
        return last.get("total_seconds", float("nan"))

    def _wait_scans(self, count: int, deadline: float, patience: float | None = None) -> dict:
        given_up = time.perf_counter() + patience if patience else float("inf")
        while True:
            if time.perf_counter() > given_up:
                raise TimeoutError
            if http_status(self.port, "/livez") == 200:
                status = http_json(self.port, "/healthz").get("library", {})
                if status.get("scans", 0) >= count and status.get("state") == "idle":
                    return status
            if self.proc.poll() is not None:
                raise RuntimeError(f"airwave serve exited with {self.proc.returncode}")
            if time.perf_counter() > deadline:
                raise RuntimeError("the server's scan did not end in time")
            # every 10 ms: at 2 ms (two requests each time) the bench sent the server up
            # to 1,000 requests a second while it scanned, and the scan's clock counted it
            time.sleep(POLL_S)

    def rescan(self) -> None:
        """One unchanged rescan, asked for with startScan, until /healthz shows it done."""
        from urllib.parse import urlencode

        query = urlencode(
            {"u": ADMIN, "p": ADMIN_PASSWORD, "v": "1.16.1", "c": "bench", "f": "json"}
        )
        self.scans += 1
        deadline = time.perf_counter() + self.timeout
        started = time.perf_counter()
        while True:
            answer = http_json(self.port, f"/rest/startScan?{query}")
            if answer.get("subsonic-response", {}).get("status") != "ok":
                raise RuntimeError(f"startScan failed: {answer}")
            try:  # an older server shows idle between its scan and what follows it, so
                # a request sent then finds a scan on its way and starts none: ask again
                status = self._wait_scans(self.scans, deadline, patience=5.0)
                break
            except TimeoutError:
                continue
        self.out.external_s.append(time.perf_counter() - started)
        self.out.total_s.append(self._total(status["last"]))
        self.out.scanner_s.append(status["last"]["seconds"])
        self.out.tag_reads += status["last"].get("tag_reads", 0)

    def stop(self) -> None:
        stop_airwave(self.proc)


# --------------------------------------------------------------------------- main


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def figures(values: list[float], fmt: str = ".3f") -> str:
    return "[" + " ".join(format(v, fmt) for v in values) + "]"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Full scan files/s, unchanged rescans (command and server), start to first "
        "200 and peak RSS of Airwave on a generated library, beside mpd in the same run.",
    )
    parser.add_argument("--files", type=int, default=20_000, help="library size (default 20000)")
    parser.add_argument(
        "--library",
        type=Path,
        help="library folder to reuse (generated there when absent or of another size; kept)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each figure (default 3)")
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary folder (library, data dirs, mpd)"
    )
    parser.add_argument("--skip-mpd", action="store_true", help="measure Airwave only")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="another Airwave checkout (e.g. `git archive main src | tar -x -C DIR`): its code "
        "measured the same way, taking turns with this one's (PYTHONPATH=DIR/src)",
    )
    parser.add_argument(
        "--database",
        default="sqlite",
        help="comma-separated: sqlite, postgresql (AIRWAVE_TEST_POSTGRES_URL or the local test "
        "database; a fresh schema per full scan) or both (default sqlite)",
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds allowed per measured step"
    )
    args = parser.parse_args()
    args.database = databases(parser, args.database)
    if not 1 <= args.files <= 1_000_000:
        parser.error("--files must be between 1 and 1000000")
    if not 1 <= args.rounds <= 50:
        parser.error("--rounds must be between 1 and 50")
    return args


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def measure(args: argparse.Namespace, library: Path, tmp: Path) -> None:
    mpd: str | None = None
    if not args.skip_mpd:
        mpd, how = find_or_install_mpd()
        if mpd is None:
            print(f"mpd unavailable: {how}; no ratio", flush=True)
        else:
            version = subprocess.run([mpd, "--version"], capture_output=True, text=True)
            print(f"mpd {version.stdout.splitlines()[0]} ({how})", flush=True)
    # this checkout's code, and with --baseline-src another's, on each database, taking turns
    codes: dict[str, Path | None] = {"airwave": None}
    if args.baseline_src:
        codes["baseline"] = args.baseline_src.absolute()
    for source in codes.values():
        compile_bytecode((source or ROOT) / "src")
    sources: dict[str, Path | None] = {}
    on_postgres: set[str] = set()
    for db in args.database:
        for code, source in codes.items():
            who = code if db == "sqlite" else f"{code}-postgresql"
            sources[who] = source
            if db == "postgresql":
                on_postgres.add(who)

    # -- full scan and the command's unchanged rescan, taking turns with mpd
    fulls: dict[str, list[AirwaveRun]] = {k: [] for k in sources}
    rescans: dict[str, list[AirwaveRun]] = {k: [] for k in sources}
    mpds: list[MpdRun] = []
    for r in range(args.rounds):
        order = [*sources, "mpd"]
        for who in order if r % 2 == 0 else list(reversed(order)):
            warm_cache(library)
            if who in sources:
                use_source(sources[who])
                data = tmp / f"{who}-data-{r}"
                if who in on_postgres:  # a fresh schema, as a fresh data dir on SQLite
                    _SCHEMAS[data] = PostgresSchema()
                full = run_airwave(library, data)
                again = run_airwave(library, data)
                fulls[who].append(full)
                rescans[who].append(again)
                m = full.memory
                print(
                    f"round {r + 1} {who} full seconds={full.seconds:.2f} "
                    f"files_per_s={full.files / full.seconds:.0f} "
                    f"scanner_seconds={full.scan_seconds:.2f} "
                    f"startup_and_after_s={full.seconds - full.scan_seconds:.2f} "
                    f"peak_rss_mb={m.parent_hwm_kb / 1024:.0f} "
                    f"tree_peak_rss_mb={m.tree_rss_kb / 1024:.0f} "
                    f"cpu_s={full.cpu_seconds:.1f} "
                    f"{other_cpu(full.machine_busy, full.cpu_seconds)}; "
                    f"rescan seconds={again.seconds:.3f} scanner_seconds={again.scan_seconds:.3f} "
                    f"cpu_s={again.cpu_seconds:.2f} tag_reads={again.tag_reads} "
                    f"{other_cpu(again.machine_busy, again.cpu_seconds)}",
                    flush=True,
                )
            elif mpd is not None:
                run = run_mpd(mpd, library, tmp / f"mpd-{r}", args.timeout)
                mpds.append(run)
                mismatch = "" if run.songs == args.files else f" WARNING songs!={args.files}"
                print(
                    f"round {r + 1} mpd full seconds={run.full_seconds:.2f} "
                    f"files_per_s={run.songs / run.full_seconds:.0f} "
                    f"peak_rss_mb={run.max_rss_mb:.0f} {run.full_other_cpu}; "
                    f"rescan seconds={run.rescan_seconds:.3f} {run.rescan_other_cpu}{mismatch}",
                    flush=True,
                )
    use_source(None)
    mpd_rate = median([m.songs / m.full_seconds for m in mpds]) if mpds else float("nan")
    mpd_rescan = median([m.rescan_seconds for m in mpds]) if mpds else float("nan")
    if mpds:
        print(
            f"mpd full median_seconds={median([m.full_seconds for m in mpds]):.2f} "
            f"median_files_per_s={mpd_rate:.0f} rescan_unchanged median_seconds={mpd_rescan:.3f}",
            flush=True,
        )
    for who in sources:
        print(f"  {who} said: {fulls[who][0].output}", flush=True)
        rate = median([f.files / f.seconds for f in fulls[who]])
        print(
            f"{who} scan full (airwave scan --no-analyze, from process start) "
            f"files={fulls[who][0].files} "
            f"median_seconds={median([f.seconds for f in fulls[who]]):.2f} "
            f"median_files_per_s={rate:.0f} "
            f"scanner_files_per_s={median([f.files / f.scan_seconds for f in fulls[who]]):.0f} "
            f"cpu_s={median([f.cpu_seconds for f in fulls[who]]):.1f} "
            f"peak_rss_mb={median([f.memory.parent_hwm_kb / 1024 for f in fulls[who]]):.0f} "
            f"(target <{TARGET_RSS_MB}) rounds={figures([f.seconds for f in fulls[who]], '.2f')}",
            flush=True,
        )
        again = median([a.seconds for a in rescans[who]])
        print(
            f"{who} scan rescan_unchanged (the command) median_seconds={again:.3f} "
            f"scanner_seconds={median([a.scan_seconds for a in rescans[who]]):.3f} "
            f"cpu_s={median([a.cpu_seconds for a in rescans[who]]):.2f} "
            f"tag_reads={sum(a.tag_reads for a in rescans[who])} target<{TARGET_RESCAN_S:g} "
            f"rounds={figures([a.seconds for a in rescans[who]])}",
            flush=True,
        )
        if mpds:
            print(
                f"ratio {who} full_scan airwave/mpd={rate / mpd_rate:.3f} (files/s from process "
                f"start, medians of {args.rounds} interleaved rounds) target>={TARGET_MPD_RATIO}; "
                f"rescan_unchanged airwave_command/mpd={again / mpd_rescan:.2f} (seconds)",
                flush=True,
            )

    # -- unchanged rescans inside a running server: every code's server at once, taking turns
    servers: dict[str, ServerRescanner] = {}
    try:
        for who, source in sources.items():
            use_source(source)
            servers[who] = ServerRescanner(library, tmp / f"{who}-data-0", args.timeout)
        use_source(None)
        order = list(servers)
        for r in range(args.rounds):
            for who in order if r % 2 == 0 else list(reversed(order)):
                servers[who].rescan()
    finally:
        for server in servers.values():
            server.stop()
    for who, server in servers.items():
        rescan = server.out
        print(
            f"{who} scan rescan_unchanged (inside a running server, startScan, servers taking "
            f"turns) median_seconds={median(rescan.total_s):.3f} (the server's clock: scan, "
            f"playlists, similarity check) scanner_seconds={median(rescan.scanner_s):.3f} "
            f"request_to_done_s={median(rescan.external_s):.3f} (startScan sent, with its "
            f"password check, until /healthz shows it done) at_start_s={rescan.start_scan_s:.3f} "
            f"tag_reads={rescan.tag_reads} target<{TARGET_SERVER_RESCAN_S:g} "
            f"rounds={figures(rescan.scanner_s)} (scanner)",
            flush=True,
        )
    use_source(None)

    # -- start to first 200, taking turns with mpd's start
    kinds = [(who, w) for who in sources for w in ("default", "workers1")]
    kinds += [("mpd", "")] if mpds else []
    starts: dict[tuple[str, str], list[float]] = {k: [] for k in kinds}
    cpus: dict[tuple[str, str], list[float]] = {k: [] for k in kinds}
    others: dict[tuple[str, str], list[str]] = {k: [] for k in kinds}
    for who, source in sources.items():  # not counted: the first start after the scans
        use_source(source)
        airwave_first_200(tmp / f"{who}-data-0", args.timeout)
    for r in range(args.rounds + 2):
        for who, workers in kinds if r % 2 == 0 else list(reversed(kinds)):
            if who == "mpd":
                assert mpd is not None
                seconds, other = mpd_first_answer(mpd, tmp / "mpd-0", args.timeout)
            else:
                use_source(sources[who])
                extra = ("--workers", "1") if workers == "workers1" else ()
                seconds, other = airwave_first_200(tmp / f"{who}-data-0", args.timeout, *extra)
            starts[who, workers].append(seconds)
            cpus[who, workers].append(float(other.split()[0].split("=")[1]))
            others[who, workers].append(other.split()[1].split("=")[1])
    use_source(None)
    mpd_start = median(starts["mpd", ""]) if mpds else float("nan")
    for who, workers in kinds:
        label = {
            "default": f"airwave serve, default workers={os.cpu_count()}",
            "workers1": "airwave serve --workers 1",
            "": "mpd on its database, until it answers `status`",
        }[workers]
        ratio = "" if who == "mpd" else f" ratio/mpd={median(starts[who, workers]) / mpd_start:.2f}"
        print(
            f"{who} start first_200 ({label}, existing data dir of {args.files} tracks) "
            f"median_seconds={median(starts[who, workers]):.3f} target<{TARGET_START_S:g} "
            f"rounds={figures(starts[who, workers])} "
            f"cpu_s_until_200={median(cpus[who, workers]):.2f} "
            f"other_cpu_s={','.join(others[who, workers])}{ratio}",
            flush=True,
        )


def main() -> None:
    args = parse_args()
    signal.signal(signal.SIGTERM, _interrupt)
    load_start = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="airwave-bench-scan-"))
    library = (args.library or tmp / "library").absolute()
    try:
        generated, gen_seconds = ensure_library(library, args.files, tmp)
        how = f"generated in {gen_seconds:.1f} s (not a figure)" if generated else "reused"
        count, size = warm_cache(library)
        covers = sum(1 for _ in library.glob("*/*/cover.jpg"))
        idle = idle_share()
        print(
            f"config library={library} files={args.files} formats=mp3,flac,ogg(vorbis) "
            f"covers={covers} bytes_total={size} ({how}) cache=warm (all {count} files read "
            f"before each measurement) cpus={os.cpu_count()} idle_before={idle:.0%} "
            f"airwave_db={','.join(args.database)} scan_workers=default bytecode=compiled "
            f"rounds={args.rounds} {interpreter()} "
            f"loadavg_1m_start={load_start:.2f}",
            flush=True,
        )
        if idle < 0.9:
            print(
                f"warning: the machine was only {idle:.0%} idle before measuring; other work "
                "skews every figure (see other_cpu_s)",
                flush=True,
            )
        measure(args, library, tmp)
        print(
            f"machine loadavg_1m_start={load_start:.2f} loadavg_1m_end={os.getloadavg()[0]:.2f} "
            f"idle_after={idle_share():.0%}",
            flush=True,
        )
    except KeyboardInterrupt:
        print("interrupted; cleaning up", file=sys.stderr)
        sys.exit(130)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    finally:
        for schema in _SCHEMAS.values():
            if not args.keep:
                schema.drop()
        if args.keep:
            print(
                f"kept {tmp}"
                + (f" (reuse the library with --library {library})" if not args.library else ""),
                file=sys.stderr,
            )
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
