"""Demo library: a small, varied music collection synthesised offline, deterministic for a seed.

The same generator makes larger libraries of known sound clusters for measuring stations: every
genre is a cluster, and its artists alternate between two sub-styles that sound apart.
"""

from __future__ import annotations

import base64
import io
import math
import multiprocessing
import os
import random
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from airwave.library import names

if TYPE_CHECKING:
    from PIL.Image import Image

# ---------------------------------------------------------------- public interface


@dataclass(frozen=True)
class DemoSummary:
    """What generate() wrote, and the sound cluster each file was synthesised in.

    `truth` maps every audio file to (genre, sub-style), e.g. ("Jazz", "Jazz/b"): the genre is
    the track's primary genre tag and the style it was synthesised in; the sub-style is "a" for
    the artists in even slots of their genre and "b" for the odd ones (see Style.substyles).
    Compilation tracks carry their artist's cluster.
    """

    root: Path
    artists: int
    albums: int
    tracks: int
    genres: tuple[str, ...]
    files: tuple[Path, ...]  # audio files written
    truth: dict[Path, tuple[str, str]] = field(default_factory=dict, hash=False)


# ---------------------------------------------------------------- musical styles


@dataclass(frozen=True)
class Timbre:
    """A wavetable instrument: harmonic series shape plus envelope (seconds)."""

    harmonics: int
    rolloff: float  # amplitude of harmonic k is k**-rolloff (lower = brighter)
    odd_only: bool = False
    attack: float = 0.01
    decay: float = 0.0  # exponential decay time; 0 = sustained
    release: float = 0.05
    legato: float = 1.0  # fraction of the note's slot that sounds
    vibrato: float = 0.0  # relative depth of a 5.5 Hz vibrato


@dataclass(frozen=True)
class Style:
    """Everything that makes one genre sound like itself: the fields describe its sub-style a."""

    genre: str
    extra_genre: str  # second genre value on some albums
    bpm: tuple[float, float]  # sub-style b has its own range, just above
    tonics: tuple[int, ...]  # MIDI notes of genre-typical keys
    mode: str
    swing: float  # where the off-beat eighth falls within the beat; 0.5 = straight
    progressions: tuple[tuple[int, ...], ...]  # scale degrees, one chord per `chord_bars`
    chord_bars: int
    sevenths: bool
    power_chords: bool
    lead: Timbre
    lead_steps: tuple[int, ...]  # note lengths in sixteenths
    lead_rest: float
    lead_octave: int
    arpeggio: bool
    pad: Timbre
    pad_rhythms: tuple[str, ...]  # 16 steps: x = strike, - = hold, . = silence
    bass: Timbre
    bass_rhythm: str
    walking: bool
    drums: dict[str, str]  # instrument -> 16-step pattern (x loud, o soft)
    drive: float  # tanh distortion of the chords (guitars)
    pump: float  # sidechain ducking of pad/bass on each beat
    reverb: float
    darkness: float  # share of a low-passed copy in the master (0 = bright)
    hiss: float  # vinyl crackle / noise floor level
    dynamics: float  # depth of the slow loudness envelope
    loudness: float  # target level, approximately LUFS
    levels: tuple[float, float, float, float]  # lead, pad, bass, drums
    artists: tuple[str, ...]  # invented names; the seed picks as many as asked for, up to all
    composers: tuple[str, ...]
    words: tuple[tuple[str, ...], tuple[str, ...]]  # adjectives, nouns for titles
    name_forms: tuple[str, ...]  # "{0} {1}"-style patterns for more artist names than `artists` holds
    name_parts: tuple[tuple[str, ...], tuple[str, ...]]  # what fills {0} and {1}
    substyles: tuple[str, str]  # what sub-styles a and b are, in words
    sub_b: dict[str, object]  # the fields sub-style b changes: its own tempo range, timbres, drums ...


_SCALES = {
    "major": (0, 2, 4, 5, 7, 9, 11),
    "minor": (0, 2, 3, 5, 7, 8, 10),
    "dorian": (0, 2, 3, 5, 7, 9, 10),
    "lydian": (0, 2, 4, 6, 7, 9, 11),
}

STYLES: tuple[Style, ...] = (
    Style(
        genre="Ambient", extra_genre="Drone", bpm=(60, 72), tonics=(62, 65, 60), mode="lydian", swing=0.5,
        progressions=((0, 4, 5, 3), (0, 1, 0, 4), (0, 3, 0, 5)), chord_bars=2, sevenths=False,
        power_chords=False,
        lead=Timbre(3, 2.5, attack=0.4, release=1.2), lead_steps=(8, 12, 16), lead_rest=0.35,
        lead_octave=12, arpeggio=False,
        pad=Timbre(4, 2.2, attack=1.8, release=1.5), pad_rhythms=("x---------------",),
        bass=Timbre(2, 3.0, attack=1.0, release=1.0), bass_rhythm="x---------------", walking=False,
        drums={}, drive=0.0, pump=0.0, reverb=0.55, darkness=0.7, hiss=0.0, dynamics=0.45,
        loudness=-24.0, levels=(0.35, 0.5, 0.35, 0.0),
        artists=("Glass Harbor", "Lumen Fielding", "Tidewell Archive"),
        composers=(),
        words=(("Slow", "Pale", "Distant", "Quiet", "Hollow", "Drifting", "Soft", "Sunken", "Silver",
                "Weightless", "Faded", "Low"),
               ("Tide", "Fog", "Lantern", "Orbit", "Meadow", "Glacier", "Haze", "Shoreline", "Ember",
                "Horizon", "Cloudbank", "Reservoir")),
        name_forms=("{0} {1}",),
        name_parts=(("Glass", "Lumen", "Stillwater", "Halcyon", "Northlight", "Cirrus", "Fathom", "Vesper", "Kelp",
                     "Saltmarsh", "Aurora", "Hollowell"),
                    ("Harbor", "Choir", "Atlas", "Observatory", "Lagoon", "Canopy", "Monument", "Expanse",
                     "Archive", "Fielding", "Sound Mirror", "Weather Station")),
        substyles=("drone", "shimmer"),
        sub_b=dict(bpm=(72, 80), mode="minor", darkness=0.25, pad=Timbre(7, 1.8, attack=1.8, release=1.5),
                   lead=Timbre(4, 2.2, attack=0.4, release=1.2)),
    ),
    Style(
        genre="Jazz", extra_genre="Fusion", bpm=(126, 152), tonics=(58, 65, 63), mode="dorian", swing=0.64,
        progressions=((1, 4, 0, 0), (0, 3, 6, 2), (0, 5, 1, 4)), chord_bars=1, sevenths=True,
        power_chords=False,
        lead=Timbre(12, 1.35, attack=0.03, release=0.06, legato=0.9), lead_steps=(2, 2, 2, 4, 6),
        lead_rest=0.18, lead_octave=12, arpeggio=False,
        pad=Timbre(9, 1.7, attack=0.004, decay=0.55, release=0.1),
        pad_rhythms=("x.....x.........", "...x......x.....", "..x...x.....x...", "x.......x..x...."),
        bass=Timbre(4, 1.9, attack=0.01, decay=0.6, release=0.05, legato=0.95),
        bass_rhythm="x---x---x---x---", walking=True,
        drums={"ride": "x...x.x.x...x.x.", "hat": "....x.......x...", "kick": "x..........o....",
               "brush": "......o.......o."},
        drive=0.0, pump=0.0, reverb=0.25, darkness=0.25, hiss=0.0, dynamics=0.2,
        loudness=-18.0, levels=(0.5, 0.4, 0.55, 0.45),
        artists=("The Ossie Brandt Trio", "Marguerite Okafor Quartet", "Velvet Ledger"),
        composers=("Ossie Brandt", "Marguerite Okafor", "Tomasz Heller"),
        words=(("Blue", "Late", "Smoky", "Crooked", "Velvet", "Sideways", "Midnight", "Amber", "Lazy",
                "Uptown", "Bent", "Loose"),
               ("Avenue", "Stroll", "Waltz", "Alley", "Suite", "Porch", "Ballad", "Shuffle", "Corner",
                "Riverboat", "Lamplight", "Stairwell")),
        name_forms=("The {0} {1} Trio", "{0} {1} Quartet", "{0} {1}", "The {0} {1} Quintet"),
        name_parts=(("Cecil", "Ines", "Yusef", "Dolores", "Abebe", "Harriet", "Kenji", "Lorcan", "Benedetta",
                     "Augustin", "Nadia", "Clement"),
                    ("Vance", "Marchetti", "Lindqvist", "Dufresne", "Kowalczyk", "Prewitt", "Salgado", "Whitlock",
                     "Okonjo", "Belmonte", "Ashby", "Rourke")),
        substyles=("medium swing", "uptempo bop"),
        sub_b=dict(bpm=(152, 168), mode="major", progressions=((1, 4, 0, 0), (0, 5, 1, 4), (2, 5, 1, 4)),
                   lead=Timbre(18, 1.05, attack=0.02, release=0.04, legato=0.85),
                   lead_steps=(2, 2, 2, 2, 4), lead_rest=0.1, darkness=0.0, levels=(0.6, 0.35, 0.35, 0.6),
                   drums={"ride": "x.x.x.x.x.x.x.x.", "hat": "....x.......x...", "kick": "x.....o.........",
                          "snare": "..o.....o....o.."}),
    ),
    Style(
        genre="Rock", extra_genre="Alternative", bpm=(128, 152), tonics=(64, 57, 62), mode="minor", swing=0.5,
        progressions=((0, 5, 2, 6), (0, 6, 5, 6), (0, 3, 6, 0)), chord_bars=1, sevenths=False,
        power_chords=True,
        lead=Timbre(20, 1.0, attack=0.01, release=0.05, legato=0.95, vibrato=0.004),
        lead_steps=(2, 2, 4, 4, 8), lead_rest=0.25, lead_octave=12, arpeggio=False,
        pad=Timbre(24, 0.95, attack=0.004, decay=0.35, release=0.03, legato=0.92),
        pad_rhythms=("x-x-x-x-x-x-x-x-", "x-x-x-x-x-xxx-x-"),
        bass=Timbre(8, 1.2, attack=0.005, decay=0.4, release=0.03, legato=0.9),
        bass_rhythm="x-x-x-x-x-x-x-x-", walking=False,
        drums={"kick": "x.....x.x.......", "snare": "....x.......x...", "hat": "x.x.x.x.x.x.x.x."},
        drive=4.0, pump=0.0, reverb=0.1, darkness=0.0, hiss=0.0, dynamics=0.08,
        loudness=-10.0, levels=(0.35, 0.55, 0.5, 0.7),
        artists=("Copperjaw", "The Hollow Verge", "Static Meridian"),
        composers=("Rhys Castellan", "Dana Moorcroft"),
        words=(("Broken", "Burning", "Electric", "Rusted", "Loud", "Reckless", "Wired", "Heavy", "Restless",
                "Jagged", "Midnight", "Crooked"),
               ("Engine", "Highway", "Fever", "Static", "Wire", "Radio", "Signal", "Thunder", "Machine",
                "Asphalt", "Spark", "Riot")),
        name_forms=("The {0} {1}", "{0} {1}"),
        name_parts=(("Iron", "Velvet", "Rust", "Paper", "Black", "Cinder", "Wild", "Copper", "Neon", "Gravel",
                     "Hollow", "Concrete"),
                    ("Wolves", "Saints", "Machines", "Kites", "Hounds", "Lanterns", "Vipers", "Pilots", "Ghosts",
                     "Rivals", "Strangers", "Engines")),
        substyles=("hard rock", "post-punk"),
        sub_b=dict(bpm=(152, 170), power_chords=False, pad_rhythms=("xxxxxxxxxxxxxxxx",), drive=2.0, lead_octave=24,
                   levels=(0.45, 0.5, 0.35, 0.8), loudness=-14.0, dynamics=0.25,
                   drums={"kick": "x.......x.......", "snare": "....x.......x...", "hat": "xxxxxxxxxxxxxxxx",
                          "open": "..x...x...x...x."}),
    ),
    Style(
        genre="Electronic", extra_genre="House", bpm=(122, 128), tonics=(57, 65, 62), mode="minor", swing=0.5,
        progressions=((0, 5, 2, 6), (0, 3, 5, 4), (0, 5, 3, 4)), chord_bars=2, sevenths=True,
        power_chords=False,
        lead=Timbre(15, 1.0, odd_only=True, attack=0.003, decay=0.12, release=0.02, legato=0.7),
        lead_steps=(1,), lead_rest=0.1, lead_octave=12, arpeggio=True,
        pad=Timbre(16, 1.1, attack=0.2, release=0.3), pad_rhythms=("x---------------",),
        bass=Timbre(6, 1.6, attack=0.003, decay=0.18, release=0.02, legato=0.8),
        bass_rhythm="..x...x...x...x.", walking=False,
        drums={"kick": "x...x...x...x...", "clap": "....x.......x...", "hat": "oooooooooooooooo",
               "open": "..x...x...x...x."},
        drive=0.0, pump=0.65, reverb=0.15, darkness=0.0, hiss=0.0, dynamics=0.1,
        loudness=-10.0, levels=(0.35, 0.35, 0.55, 0.75),
        artists=("Kilohertz Garden", "Vectra Bloom", "Neon Quarry"),
        composers=(),
        words=(("Neon", "Digital", "Parallel", "Infinite", "Chrome", "Liquid", "Binary", "Ultra", "Hyper",
                "Quantum", "Vector", "Static"),
               ("Circuit", "Grid", "Pulse", "Cascade", "Frequency", "Prism", "Voltage", "Drift", "Arcade",
                "Loop", "Lattice", "Beacon")),
        name_forms=("{0} {1}",),
        name_parts=(("Photon", "Modul", "Syntax", "Ionic", "Polygon", "Cathode", "Flux", "Megawatt", "Pixel",
                     "Oscillo", "Terabyte", "Holo"),
                    ("Theory", "Engine", "Canyon", "Relay", "Bureau", "Parade", "Station", "Harvest", "Reactor",
                     "Temple", "Federation", "Society")),
        substyles=("house", "techno"),
        sub_b=dict(bpm=(130, 138), lead=Timbre(24, 0.9, attack=0.002, decay=0.08, release=0.02, legato=0.6),
                   levels=(0.45, 0.35, 0.4, 0.75),
                   drums={"kick": "x...x...x...x...", "clap": "....x.......x...", "hat": "xxxxxxxxxxxxxxxx",
                          "open": "..x...x...x...x.", "ride": "x.x.x.x.x.x.x.x."}),
    ),
    Style(
        genre="Classical", extra_genre="Chamber Music", bpm=(76, 96), tonics=(60, 67, 62), mode="major",
        swing=0.5, progressions=((0, 3, 4, 0), (0, 5, 3, 4), (0, 4, 5, 2, 3, 0, 3, 4)), chord_bars=1,
        sevenths=False, power_chords=False,
        lead=Timbre(16, 1.3, attack=0.09, release=0.15, vibrato=0.005), lead_steps=(4, 4, 8, 2, 6),
        lead_rest=0.08, lead_octave=12, arpeggio=False,
        pad=Timbre(12, 1.6, attack=0.3, release=0.4), pad_rhythms=("x-------x-------",),
        bass=Timbre(10, 1.5, attack=0.08, release=0.2), bass_rhythm="x-------x-------", walking=False,
        drums={}, drive=0.0, pump=0.0, reverb=0.45, darkness=0.35, hiss=0.0, dynamics=0.7,
        loudness=-21.0, levels=(0.45, 0.45, 0.4, 0.0),
        artists=("Linden Chamber Players", "Émile Varga", "Ensemble Sørvik"),
        composers=("Anselm Rieger", "Kasimira Dvoranová", "Jules Ferrand", "Henrike Albrecht"),
        words=(("Sonatina", "Nocturne", "Prelude", "Étude", "Serenade", "Romance", "Impromptu", "Invention",
                "Bagatelle", "Partita", "Barcarolle", "Fantasia"),
               ("Allegro", "Andante", "Adagio", "Moderato", "Larghetto", "Allegretto", "Vivace",
                "Andantino", "Presto", "Grave", "Lento", "Scherzo")),
        name_forms=("{0} {1}", "Ensemble {1}", "The {1} String Quartet", "{1} Chamber Players"),
        name_parts=(("Agnieszka", "Tobias", "Hélène", "Matthias", "Ingrid", "Lorenzo", "Saskia", "Viktor",
                     "Annelie", "Călin", "Oksana", "Benedikt"),
                    ("Aurich", "Castellani", "Holmqvist", "Delacroix", "Brenner", "Novák", "Ferreira",
                     "Ostrowski", "Valentin", "Lindgren", "Moreau", "Szabó")),
        substyles=("strings", "piano"),
        sub_b=dict(bpm=(98, 116), lead=Timbre(14, 1.3, attack=0.004, decay=0.8, release=0.25),
                   lead_steps=(2, 2, 4, 2, 4), pad=Timbre(10, 1.6, attack=0.004, decay=0.9, release=0.3),
                   pad_rhythms=("x---x---x---x---", "x-x-x-x-x---x---"),
                   bass=Timbre(10, 1.6, attack=0.004, decay=1.2, release=0.3), reverb=0.3, darkness=0.1,
                   dynamics=0.5, loudness=-19.0),
    ),
    Style(
        genre="Hip-Hop", extra_genre="Lo-Fi", bpm=(84, 96), tonics=(60, 67, 65), mode="minor", swing=0.58,
        progressions=((0, 5), (0, 3, 5, 4), (0, 6, 5, 4)), chord_bars=2, sevenths=True, power_chords=False,
        lead=Timbre(4, 2.2, attack=0.005, decay=0.7, release=0.1), lead_steps=(4, 4, 8, 2, 6),
        lead_rest=0.45, lead_octave=12, arpeggio=False,
        pad=Timbre(5, 2.0, attack=0.005, decay=1.2, release=0.2), pad_rhythms=("x-------..x-----", "x-----x---------"),
        bass=Timbre(1, 1.0, attack=0.005, decay=0.9, release=0.05), bass_rhythm="x-----x...x-----", walking=False,
        drums={"kick": "x......x..x.....", "snare": "....x.......x...", "hat": "x.x.x.x.x.x.x.x."},
        drive=0.0, pump=0.0, reverb=0.1, darkness=0.6, hiss=0.04, dynamics=0.08,
        loudness=-12.0, levels=(0.35, 0.4, 0.9, 0.8),
        artists=("MC Parallax", "Quill & Cipher", "Basement Oracle"),
        composers=("D. Achterberg", "L. Nwosu"),
        words=(("Concrete", "Late-Night", "Golden", "Dusty", "Cold", "Basement", "Northside", "Paper",
                "Heavy", "Smooth", "Rooftop", "Fresh"),
               ("Blocks", "Verses", "Tapes", "Cipher", "Skyline", "Crates", "Sessions", "Boulevard",
                "Rhymes", "Corners", "Stoop", "Frequencies")),
        name_forms=("{0} {1}", "MC {0}", "{0} & {1}", "DJ {0}"),
        name_parts=(("Lyric", "Vinyl", "Northside", "Dusty", "Golden", "Cobalt", "Stereo", "Crate", "Velour",
                     "Kid", "Tempo", "Cassette"),
                    ("Prophet", "Syndicate", "Scholar", "Collective", "Poet", "Alchemist", "Architect",
                     "Sermon", "Diplomat", "Mechanic", "Council", "Almanac")),
        substyles=("boom bap", "trap"),
        sub_b=dict(bpm=(96, 104), swing=0.5, darkness=0.2, hiss=0.0,
                   lead=Timbre(8, 1.5, attack=0.003, decay=0.4, release=0.05), lead_octave=24,
                   bass=Timbre(1, 1.0, attack=0.005, decay=1.6, release=0.05),
                   drums={"kick": "x.....x...x..x..", "clap": "....x.......x...", "hat": "xoxoxoxoxoxxxoxo"}),
    ),
)

SUBSTYLES = ("a", "b")


@cache
def style_of(style: int, substyle: int = 0) -> Style:
    """The style a track is synthesised in: the genre's, with sub-style b's changes applied."""
    base = STYLES[style]
    return replace(base, **base.sub_b) if substyle else base  # type: ignore[arg-type]


def substyle_name(style: int, substyle: int) -> str:
    """The label tests and benchmarks use for a sound cluster, e.g. 'Jazz/b'."""
    return f"{STYLES[style].genre}/{SUBSTYLES[substyle]}"


_NOTE_NAMES = ("C", "C♯", "D", "E♭", "E", "F", "F♯", "G", "A♭", "A", "B♭", "B")
_LYRIC_LINES = (
    "the streetlights hum a second-hand tune", "I kept your number in a paper moon",
    "we were loud enough to wake the hill", "the radio knows and it never stands still",
    "count the stations till the signal fades", "your shadow dancing on the window shades",
    "every mile a little further from the shore", "nobody told us what the night was for",
    "static in the wires, gold behind the rain", "turn the dial and call my name again",
    "I wrote it down so I would not forget", "the coffee's cold, the chorus isn't finished yet",
    "low light, slow heart, an empty avenue", "the last train leaves and I'm still here with you",
    "we built a city out of borrowed sound", "keep the needle spinning, keep it underground",
)

# ---------------------------------------------------------------- formats

@dataclass(frozen=True)
class AudioFormat:
    """One output format: container, encoder and its settings."""

    ext: str
    container: str
    codec: str
    rate: int
    bit_rate: int | None
    options: tuple[tuple[str, str], ...] = ()
    quality: int | None = None  # encoder's own VBR scale (FFmpeg global_quality), instead of a bit rate


FORMATS: dict[str, AudioFormat] = {
    "mp3": AudioFormat(".mp3", "mp3", "libmp3lame", 44100, 192_000, (("compression_level", "7"),)),
    "flac": AudioFormat(".flac", "flac", "flac", 44100, None),
    "m4a": AudioFormat(".m4a", "ipod", "aac", 44100, 160_000, (("aac_coder", "fast"),)),
    # FFmpeg's native Vorbis encoder: the default is ~260 kbit/s; quality 3 is ~150 and 25% faster
    "ogg": AudioFormat(".ogg", "ogg", "vorbis", 44100, None, (("strict", "experimental"),), quality=3),
    "opus": AudioFormat(".opus", "ogg", "libopus", 48000, 128_000, (("compression_level", "5"),)),  # 48 kHz only
}
# One format per album, rotating. The MP3 and Vorbis encoders take 0.4 s of CPU per 24 s track,
# AAC 0.18, Opus 0.12, FLAC 0.04: the cheap ones come up more often to keep generation quick.
_FORMAT_CYCLE = ("flac", "mp3", "m4a", "ogg", "flac", "m4a", "opus", "flac")
# five art modes against eight formats: every format meets every mode
_ART_CYCLE = ("cover.jpg", "embedded", "folder.png", "cover.jpg+embedded", "embedded")
_COST = {"mp3": 10, "ogg": 9, "m4a": 4, "opus": 3, "flac": 1}  # relative encode time, for scheduling
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://airwave.invalid/demo-library")
VARIOUS_ARTISTS = "Various Artists"
VARIOUS_ARTISTS_MBID = "89ad4ac3-39f7-470e-963a-56509c546377"  # MusicBrainz's special-purpose artist

# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class Sound:
    """What one track's synthesiser is told: the genre plus this artist's and track's variation."""

    style: int
    bpm: float
    tonic: int
    brightness: float  # scales harmonic count and rolloff around the genre's timbre
    loudness: float
    seed: int
    substyle: int = 0  # index into SUBSTYLES


@dataclass(frozen=True)
class TagValues:
    """The tags written into one file."""

    title: str
    artist: str
    album: str
    albumartist: str
    track: int
    tracks: int
    disc: int
    discs: int
    year: int
    genres: tuple[str, ...]
    composer: str | None
    compilation: bool
    mb_track: str
    mb_album: str
    mb_artist: str
    mb_albumartist: str
    isrc: str | None
    explicit: bool


@dataclass(frozen=True)
class TrackJob:
    """Everything a worker process needs to write one audio file."""

    path: Path
    fmt: str
    seconds: float
    sound: Sound
    tags: TagValues
    art: bytes | None  # embedded JPEG
    lyrics: str | None  # embedded lyrics
    replaygain: bool


@dataclass
class _Album:
    folder: Path
    title: str
    year: int
    style: int
    art_mode: str
    art_seed: int
    artist: str
    jobs: list[TrackJob]
    sidecars: dict[Path, str]  # .lrc / .txt lyric files


def _mbid(*parts: object) -> str:
    return str(uuid.uuid5(_NAMESPACE, "/".join(str(p) for p in parts)))


def _safe(name: str) -> str:
    """A path component from a title: no separators or characters Windows forbids."""
    text = name.replace(": ", " - ")
    for ch in '/\\:*?"<>|':
        text = text.replace(ch, "_")
    return text.strip().strip(".") or "_"


def _key_name(tonic: int, mode: str) -> str:
    return f"{_NOTE_NAMES[tonic % 12]} {'major' if mode in ('major', 'lydian') else 'minor'}"


def _titles(rng: random.Random, style: Style, count: int, tonic: int) -> list[str]:
    adjectives, nouns = style.words
    titles: list[str] = []
    while len(titles) < count:
        if style.genre == "Classical":
            key = _key_name(tonic + rng.choice((0, 7, 5)), "major")
            title = f"{rng.choice(adjectives)} No. {rng.randint(1, 24)} in {key}: {rng.choice(nouns)}"
        else:
            form = rng.random()
            if form < 0.5:
                title = f"{rng.choice(adjectives)} {rng.choice(nouns)}"
            elif form < 0.75:
                title = f"The {rng.choice(nouns)}"
            else:
                first, second = rng.sample(nouns, 2)
                title = f"{first} of the {rng.choice(adjectives)} {second}"
        if title not in titles:
            titles.append(title)
    return titles


def _lyrics(rng: random.Random) -> list[str]:
    return rng.sample(_LYRIC_LINES, 6)


def _lrc(lines: list[str], tags: TagValues, seconds: float) -> str:
    head = [f"[ar:{tags.artist}]", f"[al:{tags.album}]", f"[ti:{tags.title}]",
            f"[length:{int(seconds) // 60:02d}:{int(seconds) % 60:02d}]"]
    body = []
    for i, line in enumerate(lines):
        at = seconds * (0.05 + 0.9 * i / len(lines))
        body.append(f"[{int(at) // 60:02d}:{at % 60:05.2f}] {line}")
    return "\n".join(head + body) + "\n"


@dataclass(frozen=True)
class _Shape:
    """How much library to plan: which genres, how many artists, albums and tracks, in which formats."""

    styles: tuple[int, ...] = tuple(range(len(STYLES)))
    artists: int = 2  # per genre
    albums: int = 2  # per artist
    tracks: int = 6  # per album
    compilation: bool = True
    formats: tuple[str, ...] = _FORMAT_CYCLE  # one per album, rotating


@dataclass(frozen=True)
class _Artist:
    name: str
    style: int
    slot: int  # position within the genre
    bpm: float
    tonic: int
    brightness: float
    level: float
    first_year: int

    @property
    def substyle(self) -> int:
        """Even slots play sub-style a, odd ones b: every genre gets both, in equal numbers."""
        return self.slot % 2


def _artist_names(rng: random.Random, style: Style, count: int, taken: set[str]) -> list[str]:
    """A genre's artist names, sorted: its own if enough, else those plus names made from its name parts."""
    if count <= len(style.artists):
        candidates = rng.sample(style.artists, count)
    else:
        first, second = (rng.sample(parts, len(parts)) for parts in style.name_parts)
        forms = style.name_forms
        # round r pairs first[i] with second[i + r]: no name part comes back before all have had a turn
        made = [forms[k % len(forms)].format(first[k % len(first)], second[(k + k // len(first)) % len(second)])
                for k in range(len(first) * len(second))]
        candidates = [*style.artists, *made]
    chosen: list[str] = []
    for name in candidates:
        key = names.merge_key(name)  # 'The X' and 'x' would be merged into one artist by the scanner
        if key not in taken:
            taken.add(key)
            chosen.append(name)
            if len(chosen) == count:
                return sorted(chosen)
    raise ValueError(f"{style.genre} can name at most {len(chosen)} artists")


def _album_words(rng: random.Random, style: Style, count: int) -> list[tuple[str, str]]:
    """(adjective, noun) for each album of a genre, all different while the word lists allow."""
    adjectives, nouns = style.words
    k = min(count, len(adjectives), len(nouns))
    pairs = list(zip(rng.sample(adjectives, k), rng.sample(nouns, k)))
    if count > k:
        used = set(pairs)
        rest = [(a, n) for a in adjectives for n in nouns if (a, n) not in used]
        rng.shuffle(rest)
        pairs += rest[: count - k]
    return pairs


def _album(rng: random.Random, seed: int, root: Path, artist: _Artist, a: int, index: int,
           words: tuple[str, str], seconds: float, fmt: str, tracks: int, folders: set[Path]) -> _Album:
    """One artist's album, with the features that rotate across the library."""
    style = style_of(artist.style, artist.substyle)
    year = min(artist.first_year + a * rng.randint(2, 6), 2024)
    tonic = artist.tonic if a == 0 else style.tonics[rng.randrange(len(style.tonics))]
    composer = rng.choice(style.composers) if style.composers else None
    adjective, noun = words
    if style.genre == "Classical":
        other = rng.choice([w for w in style.words[0] if w != adjective])
        title = f"{composer.split()[-1] if composer else artist.name}: {adjective}s and {other}s"
    else:
        title = f"{adjective} {noun}"
    folder, volume = root / _safe(artist.name) / _safe(f"{title} ({year})"), 1
    while folder in folders:  # only when an artist has more albums than the title words can tell apart
        volume += 1
        folder = root / _safe(artist.name) / _safe(f"{title}, Vol. {volume} ({year})")
    folders.add(folder)
    title = title if volume == 1 else f"{title}, Vol. {volume}"
    genres = (style.genre, style.extra_genre) if a == 1 and artist.slot == 0 else (style.genre,)
    artist_id = _mbid(seed, "artist", artist.name)
    album_id = _mbid(seed, "album", artist.name, title)
    album = _Album(folder, title, year, artist.style, _ART_CYCLE[index % len(_ART_CYCLE)],
                   rng.randrange(2**31), artist.name, [], {})
    vocal = style.genre in ("Rock", "Hip-Hop", "Jazz")
    for t, track_title in enumerate(_titles(rng, style, tracks, tonic), 1):
        explicit = (style.genre == "Hip-Hop" and t in ((2, 5) if a == 0 else (4,))) or (
            style.genre == "Rock" and artist.slot == 1 and a == 1 and t == 3)
        tags = TagValues(
            title=track_title, artist=artist.name, album=title, albumartist=artist.name, track=t, tracks=tracks,
            disc=1, discs=1, year=year, genres=genres,
            composer=composer if style.genre == "Classical" or (style.genre == "Jazz" and t % 2) else None,
            compilation=False, mb_track=_mbid(album_id, "track", t), mb_album=album_id,
            mb_artist=artist_id, mb_albumartist=artist_id,
            isrc=f"ZZAWV{year % 100:02d}{index:03d}{t:02d}" if index % 3 == 1 else None, explicit=explicit,
        )
        path = folder / f"{t:02d} {_safe(track_title)}{FORMATS[fmt].ext}"
        lyrics = None
        if vocal and t == 1:
            lyrics = "\n".join(_lyrics(rng))
        elif vocal and a == 0 and t == 3:
            if style.genre == "Jazz" and artist.slot == 0:
                album.sidecars[path.with_suffix(".txt")] = "\n".join(_lyrics(rng)) + "\n"
            else:
                album.sidecars[path.with_suffix(".lrc")] = _lrc(_lyrics(rng), tags, seconds)
        sound = Sound(artist.style, artist.bpm * rng.uniform(0.97, 1.03), tonic,
                      artist.brightness * rng.uniform(0.95, 1.05), artist.level + rng.uniform(-1.0, 1.0),
                      rng.randrange(2**63), artist.substyle)
        album.jobs.append(TrackJob(path, fmt, seconds, sound, tags, None, lyrics, index % 3 == 0))
    return album


def _compilation(rng: random.Random, seed: int, root: Path, artists: list[_Artist], seconds: float,
                 fmt: str) -> _Album:
    """A Various Artists album: one new track by the first artist of each genre."""
    name = rng.choice(("Late Night Frequencies", "Signals and Stations", "The Demo Hour"))
    title, year = f"{name}, Vol. {rng.randint(1, 4)}", rng.randint(2018, 2024)
    album_id = _mbid(seed, "album", VARIOUS_ARTISTS, title)
    folder = root / VARIOUS_ARTISTS / _safe(f"{title} ({year})")
    album = _Album(folder, title, year, 3, "cover.jpg+embedded", rng.randrange(2**31), VARIOUS_ARTISTS, [], {})
    contributors = [artist for artist in artists if artist.slot == 0]
    for t, artist in enumerate(contributors, 1):
        style = STYLES[artist.style]
        tags = TagValues(
            title=_titles(rng, style, 1, artist.tonic)[0], artist=artist.name, album=title,
            albumartist=VARIOUS_ARTISTS, track=t, tracks=len(contributors), disc=1, discs=1, year=year,
            genres=(style.genre,), composer=None, compilation=True, mb_track=_mbid(album_id, "track", t),
            mb_album=album_id, mb_artist=_mbid(seed, "artist", artist.name), mb_albumartist=VARIOUS_ARTISTS_MBID,
            isrc=f"ZZAWV{year % 100:02d}999{t:02d}", explicit=style.genre == "Hip-Hop",
        )
        sound = Sound(artist.style, artist.bpm, artist.tonic, artist.brightness, artist.level, rng.randrange(2**63),
                      artist.substyle)
        path = folder / f"{t:02d} {_safe(tags.title)}{FORMATS[fmt].ext}"
        album.jobs.append(TrackJob(path, fmt, seconds, sound, tags, None, None, True))
    return album


def _plan(seed: int, seconds: float, root: Path, shape: _Shape = _Shape()) -> list[_Album]:
    """Names, tags, formats and art assignments for the whole library; no audio yet."""
    rng = random.Random(seed)
    artists: list[_Artist] = []
    albums: list[_Album] = []
    taken: set[str] = {names.merge_key(VARIOUS_ARTISTS)}
    folders: set[Path] = set()
    for s in shape.styles:
        style = STYLES[s]
        words = _album_words(rng, style, shape.artists * shape.albums)
        for slot, name in enumerate(_artist_names(rng, style, shape.artists, taken)):
            sound = style_of(s, slot % 2)
            artist = _Artist(name, s, slot, rng.uniform(*sound.bpm),
                             sound.tonics[(slot + rng.randrange(len(sound.tonics))) % len(sound.tonics)],
                             rng.uniform(0.85, 1.15), sound.loudness + rng.uniform(-1.5, 1.5),
                             rng.randint(1994, 2016))
            artists.append(artist)
            for a in range(shape.albums):
                fmt = shape.formats[len(albums) % len(shape.formats)]
                albums.append(_album(rng, seed, root, artist, a, len(albums),
                                     words[(slot * shape.albums + a) % len(words)], seconds, fmt, shape.tracks,
                                     folders))
    if shape.compilation and artists:
        fmt = "mp3" if "mp3" in shape.formats else shape.formats[0]
        albums.append(_compilation(rng, seed, root, artists, seconds, fmt))
    return albums


# ---------------------------------------------------------------- synthesis

_TABLE = 2048


def _wavetable(timbre: Timbre, brightness: float) -> np.ndarray:
    """One period of the timbre's waveform; brightness adds harmonics and flattens their rolloff."""
    count = max(1, round(timbre.harmonics * brightness))
    k = np.arange(1, count + 1)
    amp = k ** -(timbre.rolloff / brightness)
    if timbre.odd_only:
        amp[k % 2 == 0] = 0.0
    phase = np.arange(_TABLE) * (2 * np.pi / _TABLE)
    table = (amp[:, None] * np.sin(k[:, None] * phase[None, :])).sum(axis=0)
    return (table / np.abs(table).max()).astype(np.float32)


def _hz(midi: np.ndarray | float) -> np.ndarray:
    return 440.0 * 2.0 ** ((np.asarray(midi, dtype=np.float64) - 69.0) / 12.0)


@dataclass
class _Line:
    """A part as contiguous segments covering its whole span; rests are segments of zero amplitude."""

    starts: np.ndarray  # sample of each segment's start
    lengths: np.ndarray
    amps: np.ndarray
    pitches: np.ndarray  # (voices, segments) MIDI notes


def _line(notes: list[tuple[int, int, tuple[float, ...], float]], onsets: np.ndarray, n: int, voices: int) -> _Line:
    """Notes (start step, end step, pitches, velocity) on the sixteenth grid -> segments covering [0, n)."""
    starts, amps, pitches = [0], [0.0], [notes[0][2] if notes else (60.0,) * voices]
    for a, b, chord, velocity in notes:
        start, end = int(onsets[min(a, len(onsets) - 1)]), int(min(onsets[min(b, len(onsets) - 1)], n))
        if start >= n or end <= start:
            continue
        if start > starts[-1]:
            starts.append(start)
            amps.append(velocity)
            pitches.append(chord)
        else:  # the rest before this note has no length: the note takes its place
            amps[-1], pitches[-1] = velocity, chord
        starts.append(end)
        amps.append(0.0)
        pitches.append(chord)
    starts_a = np.asarray(starts, dtype=np.int64)
    keep = np.append(np.diff(starts_a) > 0, starts_a[-1] < n)
    starts_a = starts_a[keep]
    lengths = np.diff(np.append(starts_a, n))
    return _Line(starts_a, lengths, np.asarray(amps, dtype=np.float32)[keep],
                 np.asarray(pitches, dtype=np.float64)[keep].T)


def _render_line(line: _Line, timbre: Timbre, table: np.ndarray, rate: int) -> np.ndarray:
    """(voices, n) float32 audio of one part read from its wavetable under a per-note envelope."""
    n = int(line.lengths.sum())
    out = np.zeros((line.pitches.shape[0], n), dtype=np.float32)
    notes: dict[tuple[int, tuple[float, ...]], np.ndarray] = {}  # repeated notes are rendered once
    for start, length, amp, pitches in zip(line.starts.tolist(), line.lengths.tolist(), line.amps.tolist(),
                                           line.pitches.T.tolist()):
        if amp == 0.0:
            continue
        key = (length, tuple(pitches))
        note = notes.get(key)
        if note is None:
            pos = np.arange(length, dtype=np.float32)
            env = np.minimum(pos * np.float32(1.0 / (timbre.attack * rate)), np.float32(1.0))
            if timbre.decay:
                env *= np.exp(pos * np.float32(-1.0 / (timbre.decay * rate)))
            gate = np.float32(length * timbre.legato)
            env *= np.clip((gate - pos) * np.float32(1.0 / (timbre.release * rate)), 0.0, 1.0)
            increments = _hz(pitches) * (_TABLE / rate)
            if timbre.vibrato:
                wobble = 1.0 + timbre.vibrato * np.sin(np.arange(length) * (2 * np.pi * 5.5 / rate))
                phase = np.cumsum(increments[:, None] * wobble[None, :], axis=1)
            elif length * increments.max() < 2**23:  # float32 still counts whole table steps exactly
                phase = pos[None, :] * increments.astype(np.float32)[:, None]
            else:
                phase = np.arange(length)[None, :] * increments[:, None]
            note = table[phase.astype(np.int64) & (_TABLE - 1)] * env
            notes[key] = note
        out[:, start:start + length] = note * np.float32(amp)
    return out


def _drum_kit(rate: int, rng: np.random.Generator, genre: str) -> dict[str, np.ndarray]:
    """Short one-shot samples, synthesised per track."""

    def time(seconds: float) -> np.ndarray:
        return np.arange(int(seconds * rate)) / rate

    t = time(0.6 if genre == "Hip-Hop" else 0.35)
    kick_decay = 0.35 if genre == "Hip-Hop" else 0.12
    freq = 48 + 110 * np.exp(-t / 0.035)
    kick = np.sin(2 * np.pi * np.cumsum(freq) / rate) * np.exp(-t / kick_decay)
    t = time(0.25)
    noise = rng.standard_normal(t.size)
    snare = 0.35 * np.diff(noise, prepend=0) * np.exp(-t / 0.09) + 0.5 * np.sin(2 * np.pi * 185 * t) * np.exp(-t / 0.04)
    brush = 0.4 * noise * np.exp(-t / 0.07)
    t = time(0.3)
    hiss = np.diff(rng.standard_normal(t.size + 1)) / 2
    hat = hiss * np.exp(-t / 0.018)
    open_hat = hiss * np.exp(-t / 0.12)
    t = time(0.2)
    burst = sum(np.exp(-np.clip(t - d, 0, None) / 0.012) * (t >= d) for d in (0.0, 0.011, 0.023))
    clap = np.diff(rng.standard_normal(t.size + 1)) / 2 * (burst + np.exp(-t / 0.06))
    t = time(0.6)
    ride = sum(np.sin(2 * np.pi * f * t) for f in (3150.0, 4212.0, 5304.0, 6891.0, 7422.0)) / 5
    ride = (0.6 * ride + 0.3 * np.diff(rng.standard_normal(t.size + 1)) / 2) * np.exp(-t / 0.45) * 0.6
    kit = {"kick": kick, "snare": snare, "brush": brush, "hat": hat, "open": open_hat, "clap": clap, "ride": ride}
    return {name: sample.astype(np.float32) for name, sample in kit.items()}


_DRUM_PAN = {"kick": 0.0, "snare": 0.05, "brush": 0.1, "hat": 0.35, "open": 0.35, "clap": -0.05, "ride": -0.4}
_DRUM_GAIN = {"kick": 1.0, "snare": 0.7, "brush": 0.5, "hat": 0.25, "open": 0.2, "clap": 0.6, "ride": 0.3}


def _pan(mono: np.ndarray, position: float) -> np.ndarray:
    angle = (position + 1) * math.pi / 4
    return np.stack((mono * math.cos(angle), mono * math.sin(angle)))


def _lowpass(x: np.ndarray, width: int) -> np.ndarray:
    """Moving average along the last axis: a cheap, gentle low-pass."""
    c = np.cumsum(x, axis=-1, dtype=np.float64)
    out = np.empty_like(x)
    out[..., width:] = (c[..., width:] - c[..., :-width]) / width
    out[..., :width] = c[..., :width] / np.arange(1, width + 1)
    return out


def synthesize(sound: Sound, seconds: float, rate: int = 44100) -> np.ndarray:
    """(2, n) float32 audio in the sound's genre and sub-style: tempo, key, timbre, brightness and level."""
    style = style_of(sound.style, sound.substyle)
    rng = np.random.default_rng(sound.seed)
    n = max(1, int(round(seconds * rate)))
    scale = _SCALES[style.mode]
    bar_samples = int(round(240.0 / sound.bpm * rate))
    fractions = np.array([0.0, style.swing / 2, style.swing, style.swing + (1 - style.swing) / 2])
    within = np.round((np.arange(16) // 4 + fractions[np.arange(16) % 4]) / 4 * bar_samples)
    bars = n // bar_samples + 2
    onsets = (np.arange(bars)[:, None] * bar_samples + within[None, :]).ravel()
    onsets = np.append(onsets, bars * bar_samples).astype(np.int64)
    lead_level, pad_level, bass_level, drum_level = style.levels

    def pitch(degree: int, octave: int = 0) -> float:
        return float(sound.tonic + octave + scale[degree % 7] + 12 * (degree // 7))

    progression = style.progressions[int(rng.integers(len(style.progressions)))]
    chord_steps = 16 * style.chord_bars

    def chord_at(step: int) -> int:
        return progression[(step // chord_steps) % len(progression)]

    def chord_tones(degree: int) -> tuple[float, ...]:
        if style.power_chords:
            root = pitch(degree, -12)
            return (root, root + 7, root + 12, root + 19)
        return tuple(pitch(degree + i) for i in (0, 2, 4, 6 if style.sevenths else 7))

    def strikes(rhythm: str, bar: int) -> list[tuple[int, int]]:
        found = []
        for i, mark in enumerate(rhythm):
            if mark == "x":
                end = i + 1
                while end < 16 and rhythm[end] == "-":
                    end += 1
                found.append((bar * 16 + i, bar * 16 + end))
        return found

    # The backing (chords, bass, drums, noise) repeats with the chord progression: render one
    # cycle and tile it. Only the melody runs through the whole track.
    cycle_bars = min(len(progression) * style.chord_bars, bars)
    loop_n = min(n, cycle_bars * bar_samples)
    tiled = loop_n < n  # tails of notes and echoes wrap round to the loop's start only if it repeats
    loop = np.zeros((2, loop_n), dtype=np.float32)

    pad_notes = []
    for b in range(cycle_bars):
        rhythm = style.pad_rhythms[int(rng.integers(len(style.pad_rhythms)))]
        for start, end in strikes(rhythm, b):
            pad_notes.append((start, end, chord_tones(chord_at(start)), float(rng.uniform(0.8, 1.0))))
    pad = _render_line(_line(pad_notes, onsets, loop_n, 4), style.pad, _wavetable(style.pad, sound.brightness), rate)
    if style.drive:
        mixed = pad.sum(axis=0)
        pad_mix = np.stack((np.tanh(style.drive * mixed), np.tanh(style.drive * np.roll(mixed, rate // 100))))
        pad_mix *= np.float32(pad_level / 2)
    else:
        pad_mix = (_pan(pad[0] + pad[2], -0.4) + _pan(pad[1] + pad[3], 0.4)) * np.float32(pad_level / 4)

    bass_notes = []
    for b in range(cycle_bars):
        for start, end in strikes(style.bass_rhythm, b):
            degree = chord_at(start)
            if style.walking and start % 16:
                degree += int(rng.choice((2, 4, 1, -1, 5)))
            bass_notes.append((start, end, (pitch(degree, -24),), float(rng.uniform(0.85, 1.0))))
    bass = _render_line(_line(bass_notes, onsets, loop_n, 1), style.bass, _wavetable(style.bass, sound.brightness), rate)[0]
    backing = pad_mix + bass * np.float32(bass_level * math.sqrt(0.5))
    if style.pump:
        beat = np.arange(loop_n) % (bar_samples // 4)
        backing *= (1.0 - style.pump * np.exp(beat * (-1.0 / (0.09 * rate)))).astype(np.float32)
    if style.reverb:  # a few decaying echoes, different per side, wrapping round the loop
        for side, taps in enumerate(((0.031, 0.067, 0.113, 0.171), (0.041, 0.079, 0.131, 0.197))):
            for k, delay in enumerate(taps):
                d = int(delay * rate) % loop_n if tiled else min(int(delay * rate), loop_n)
                source = pad_mix[1 - side if k % 2 else side]
                gain = np.float32(style.reverb * 0.7**k)
                backing[side, d:] += source[: loop_n - d] * gain
                if tiled:
                    backing[side, :d] += source[loop_n - d:] * gain
    loop += backing

    if style.drums:
        kit = _drum_kit(rate, rng, style.genre)
        jitter = 0.004 * rate if style.swing > 0.5 else 0.0
        for name, pattern in style.drums.items():
            sample = kit[name][:loop_n]
            angle = (_DRUM_PAN[name] + 1) * math.pi / 4
            gains = np.array([math.cos(angle), math.sin(angle)], dtype=np.float32)
            for b in range(cycle_bars):
                for i, mark in enumerate(pattern):
                    if mark == ".":
                        continue
                    start = int(onsets[b * 16 + i] + (rng.normal(0, jitter) if jitter else 0))
                    if tiled:
                        start %= loop_n
                    elif not 0 <= start < loop_n:
                        continue
                    velocity = (1.0 if mark == "x" else 0.45) * rng.uniform(0.85, 1.0) * drum_level * _DRUM_GAIN[name]
                    hit = (gains * np.float32(velocity))[:, None] * sample[None, :]
                    head = min(sample.size, loop_n - start)
                    loop[:, start:start + head] += hit[:, :head]
                    if tiled:
                        loop[:, : sample.size - head] += hit[:, head:]
    if style.darkness:
        loop = (1 - style.darkness) * loop + style.darkness * _lowpass(loop, max(2, rate // 2200))
    if style.hiss:  # vinyl: a dull noise bed (held samples) and sparse clicks
        bed = np.repeat(rng.standard_normal(loop_n // 4 + 1).astype(np.float32), 4)[:loop_n] * np.float32(0.08)
        clicks = rng.integers(0, loop_n, int(12 * loop_n / rate))
        bed[clicks] += rng.uniform(-1, 1, clicks.size).astype(np.float32)
        loop += np.float32(style.hiss) * bed[None, :]

    lead_notes = []
    step, degree = 0, 7
    while step < bars * 16:
        length = int(rng.choice(style.lead_steps))
        if style.arpeggio:
            tones = chord_tones(chord_at(step))
            note = tones[(step // length) % 3] + 12 * ((step // (3 * length)) % 2) + style.lead_octave
        else:
            degree = int(np.clip(degree + rng.choice((-2, -1, -1, 0, 1, 1, 2, 3, -3)), 3, 13))
            if step % chord_steps == 0:  # land on a chord tone when the harmony changes
                degree = chord_at(step) + 7
            note = pitch(degree, style.lead_octave - 12)
        if rng.random() >= style.lead_rest:
            lead_notes.append((step, step + length, (note,), float(rng.uniform(0.7, 1.0))))
        step += length
    lead = _render_line(_line(lead_notes, onsets, n, 1), style.lead, _wavetable(style.lead, sound.brightness), rate)[0]
    if style.drive:
        lead = np.tanh(2.0 * lead)
    lead *= np.float32(lead_level)  # its darkness is in its timbre: the master filter runs on the loop only

    out = np.tile(loop, (1, -(-n // loop_n)))[:, :n] if loop_n < n else loop
    out[0] += lead * np.float32(0.65)
    out[1] += lead * np.float32(0.76)
    if style.reverb:  # the melody's room: two echoes, one per side
        for side, delay in enumerate((0.089, 0.127)):
            d = int(delay * rate)
            if d < n:
                out[side, d:] += lead[:-d] * np.float32(style.reverb * 0.6)

    # slow dynamics (swells, or an arch for classical pieces) and short fades at both ends
    t = np.arange(n, dtype=np.float32) * np.float32(1.0 / rate)
    envelope = np.minimum(t * np.float32(50.0), (np.float32(seconds) - t) * np.float32(1.0 / min(1.5, seconds / 6)))
    np.clip(envelope, 0.0, 1.0, out=envelope)
    if style.dynamics:
        if style.genre == "Classical":
            shape = np.sin(t * np.float32(np.pi / max(seconds, 1e-3)))
            shape *= np.sqrt(shape)
        else:
            shape = 0.5 - 0.5 * np.cos(t * np.float32(2 * np.pi / 9.0) + np.float32(rng.uniform(0, 2 * np.pi)))
        envelope *= (1.0 - style.dynamics) + style.dynamics * shape
    out *= envelope
    power = sum(float(np.dot(channel, channel)) for channel in out) / n
    if power > 0:
        out *= np.float32(10 ** (sound.loudness / 20) / math.sqrt(power))
    if float(np.abs(out).max()) > 0.9:  # soft-limit the loud genres
        out = np.tanh(out * np.float32(1 / 0.97)) * np.float32(0.97)
    return out.astype(np.float32, copy=False)


def loudness(audio: np.ndarray) -> float:
    """Unweighted programme loudness, close to LUFS for these signals (0 = full-scale stereo sine)."""
    power = float(np.mean(audio.astype(np.float64) ** 2, axis=1).sum())
    return 10 * math.log10(max(power, 1e-12))


# ---------------------------------------------------------------- cover art


def _palette(rng: random.Random) -> list[tuple[int, int, int]]:
    import colorsys

    hue = rng.random()
    colours = []
    for shift, sat, val in ((0.0, 0.55, 0.35), (0.08, 0.7, 0.85), (0.5, 0.6, 0.95), (0.58, 0.3, 0.2)):
        r, g, b = colorsys.hsv_to_rgb((hue + shift * rng.uniform(0.7, 1.3)) % 1.0, sat, val)
        colours.append((int(r * 255), int(g * 255), int(b * 255)))
    return colours


def cover_art(seed: int, title: str, subtitle: str, genre: str, size: int = 600) -> Image:
    """A distinct generated image: gradient, genre-flavoured shapes, the title."""
    from anyascii import anyascii
    from PIL import Image as PILImage
    from PIL import ImageDraw, ImageFont

    rng = random.Random(seed)
    c0, c1, c2, c3 = _palette(rng)
    angle = rng.uniform(0, 2 * math.pi)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    ramp = np.clip(0.5 + (x - 0.5) * math.cos(angle) + (y - 0.5) * math.sin(angle), 0, 1)[..., None]
    pixels = np.asarray(c0, np.float32) * (1 - ramp) + np.asarray(c1, np.float32) * ramp
    image = PILImage.fromarray(pixels.astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image, "RGBA")
    accent = (*c2, 170)
    if genre in ("Ambient", "Jazz"):
        for _ in range(rng.randint(3, 7)):
            cx, cy, r = rng.uniform(0, size), rng.uniform(0, size * 0.7), rng.uniform(size * 0.05, size * 0.35)
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=(*rng.choice((c2, c3)), rng.randint(60, 170)))
    elif genre == "Electronic":
        gap = rng.randint(24, 60)
        for i in range(0, size, gap):
            draw.line((i, 0, i, size), fill=(*c2, 110), width=2)
            draw.line((0, i, size, i), fill=(*c2, 110), width=2)
        draw.regular_polygon((size / 2, size * 0.4, size * 0.22), rng.randint(3, 8), rotation=rng.uniform(0, 90), fill=accent)
    elif genre == "Rock":
        for _ in range(rng.randint(4, 8)):
            points = [(rng.uniform(0, size), rng.uniform(0, size * 0.8)) for _ in range(3)]
            draw.polygon(points, fill=(*rng.choice((c2, c3)), rng.randint(90, 200)))
    elif genre == "Classical":
        m = size * rng.uniform(0.04, 0.09)
        draw.rectangle((m, m, size - m, size - m), outline=(*c2, 220), width=rng.randint(3, 8))
        cx, cy, r = size * rng.uniform(0.35, 0.65), size * rng.uniform(0.3, 0.45), size * rng.uniform(0.1, 0.22)
        for ring in range(rng.randint(1, 4)):
            draw.ellipse((cx - r, cy - r, cx + r, cy + r), outline=(*rng.choice((c2, c3)), 200), width=3)
            r *= 0.72
    else:
        for i in range(rng.randint(4, 9)):
            top = rng.uniform(0, size * 0.75)
            draw.rectangle((0, top, size, top + rng.uniform(8, 40)), fill=(*rng.choice((c2, c3)), 150))
    try:
        big, small = ImageFont.load_default(size=size // 14), ImageFont.load_default(size=size // 24)
    except TypeError:  # Pillow without FreeType: bitmap font only
        big = small = ImageFont.load_default()
    # the bundled font covers ASCII only: 'Dvoranová' is drawn as 'Dvoranova'
    title, subtitle = anyascii(title), anyascii(subtitle)
    words, lines = title.split(), [""]
    for word in words:
        trial = f"{lines[-1]} {word}".strip()
        if lines[-1] and draw.textlength(trial, font=big) > size * 0.86:
            lines.append(word)
        else:
            lines[-1] = trial
    top = size * 0.93 - (len(lines) + 1) * size / 13
    for i, line in enumerate(lines):
        draw.text((size * 0.07 + 2, top + i * size / 13 + 2), line, font=big, fill=(0, 0, 0, 140))
        draw.text((size * 0.07, top + i * size / 13), line, font=big, fill=(250, 250, 250, 255))
    draw.text((size * 0.07, top + len(lines) * size / 13 + 6), subtitle, font=small, fill=(235, 235, 235, 230))
    return image


def _jpeg(image: Image, quality: int = 85) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality, optimize=True)
    return buffer.getvalue()


# ---------------------------------------------------------------- encoding and tagging


def encode(audio: np.ndarray, rate: int, path: Path, fmt: AudioFormat) -> None:
    """Write (2, n) float audio to `path` with PyAV."""
    import av

    with av.open(str(path), "w", format=fmt.container) as container:
        stream = container.add_stream(fmt.codec, rate=rate, options=dict(fmt.options))
        stream.layout = "stereo"
        if fmt.bit_rate:
            stream.bit_rate = fmt.bit_rate
        if fmt.quality is not None:
            stream.codec_context.flags |= int(av.codec.context.Flags.qscale)
            stream.codec_context.global_quality = fmt.quality
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(audio, dtype=np.float32), format="fltp", layout="stereo")
        frame.sample_rate = rate
        frame.pts = 0
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)


def _gain_text(gain: float) -> str:
    return f"{gain:+.2f} dB"


def write_tags(path: Path, fmt: str, tags: TagValues, art: bytes | None, lyrics: str | None,
               gain: tuple[float, float] | None) -> None:
    """Tags in each container's own dialect (ID3v2.4, Vorbis comments, iTunes atoms)."""
    if fmt == "mp3":
        _tag_id3(path, tags, art, lyrics, gain)
    elif fmt == "m4a":
        _tag_mp4(path, tags, art, lyrics, gain)
    else:
        _tag_vorbis(path, fmt, tags, art, lyrics, gain)


def _tag_id3(path: Path, tags: TagValues, art: bytes | None, lyrics: str | None, gain: tuple[float, float] | None) -> None:
    from mutagen import id3
    from mutagen.mp3 import MP3

    audio = MP3(path)
    if audio.tags is None:
        audio.add_tags()
    frames = audio.tags
    frames.clear()
    text = {"TIT2": tags.title, "TPE1": tags.artist, "TALB": tags.album, "TPE2": tags.albumartist,
            "TRCK": f"{tags.track}/{tags.tracks}", "TPOS": f"{tags.disc}/{tags.discs}", "TDRC": str(tags.year)}
    for frame_id, value in text.items():
        frames.add(getattr(id3, frame_id)(encoding=3, text=[value]))
    frames.add(id3.TCON(encoding=3, text=list(tags.genres)))
    if tags.composer:
        frames.add(id3.TCOM(encoding=3, text=[tags.composer]))
    if tags.compilation:
        frames.add(id3.TCMP(encoding=3, text=["1"]))
    if tags.isrc:
        frames.add(id3.TSRC(encoding=3, text=[tags.isrc]))
    frames.add(id3.UFID(owner="http://musicbrainz.org", data=tags.mb_track.encode()))
    extra = {"MusicBrainz Album Id": tags.mb_album, "MusicBrainz Artist Id": tags.mb_artist,
             "MusicBrainz Album Artist Id": tags.mb_albumartist}
    if gain:
        extra |= {"REPLAYGAIN_TRACK_GAIN": _gain_text(gain[0]), "REPLAYGAIN_TRACK_PEAK": f"{gain[1]:.6f}"}
    if tags.explicit:
        extra["ITUNESADVISORY"] = "1"
    for desc, value in extra.items():
        frames.add(id3.TXXX(encoding=3, desc=desc, text=[value]))
    if lyrics:
        frames.add(id3.USLT(encoding=3, lang="eng", desc="", text=lyrics))
    if art:
        frames.add(id3.APIC(encoding=3, mime="image/jpeg", type=3, desc="Cover", data=art))
    audio.save(v2_version=4)


def _tag_mp4(path: Path, tags: TagValues, art: bytes | None, lyrics: str | None, gain: tuple[float, float] | None) -> None:
    from mutagen.mp4 import MP4, MP4Cover, MP4FreeForm

    audio = MP4(path)
    if audio.tags is None:
        audio.add_tags()
    atoms = audio.tags
    for key in list(atoms.keys()):
        del atoms[key]
    atoms.update({"\xa9nam": [tags.title], "\xa9ART": [tags.artist], "\xa9alb": [tags.album],
                  "aART": [tags.albumartist], "trkn": [(tags.track, tags.tracks)], "disk": [(tags.disc, tags.discs)],
                  "\xa9day": [str(tags.year)], "\xa9gen": list(tags.genres)})
    if tags.composer:
        atoms["\xa9wrt"] = [tags.composer]
    if tags.compilation:
        atoms["cpil"] = True
    if tags.explicit:
        atoms["rtng"] = [1]
    if lyrics:
        atoms["\xa9lyr"] = [lyrics]
    if art:
        atoms["covr"] = [MP4Cover(art, imageformat=MP4Cover.FORMAT_JPEG)]
    free = {"MusicBrainz Track Id": tags.mb_track, "MusicBrainz Album Id": tags.mb_album,
            "MusicBrainz Artist Id": tags.mb_artist, "MusicBrainz Album Artist Id": tags.mb_albumartist}
    if tags.isrc:
        free["ISRC"] = tags.isrc
    if gain:
        free |= {"replaygain_track_gain": _gain_text(gain[0]), "replaygain_track_peak": f"{gain[1]:.6f}"}
    for name, value in free.items():
        atoms[f"----:com.apple.iTunes:{name}"] = [MP4FreeForm(value.encode())]
    audio.save()


def _tag_vorbis(path: Path, fmt: str, tags: TagValues, art: bytes | None, lyrics: str | None,
                gain: tuple[float, float] | None) -> None:
    from mutagen.flac import FLAC, Picture
    from mutagen.oggopus import OggOpus
    from mutagen.oggvorbis import OggVorbis

    audio = {"flac": FLAC, "ogg": OggVorbis, "opus": OggOpus}[fmt](path)
    if audio.tags is None:
        audio.add_tags()
    comments = audio.tags
    for key in list(comments.keys()):
        del comments[key]
    fields: dict[str, list[str]] = {
        "TITLE": [tags.title], "ARTIST": [tags.artist], "ALBUM": [tags.album], "ALBUMARTIST": [tags.albumartist],
        "TRACKNUMBER": [str(tags.track)], "TRACKTOTAL": [str(tags.tracks)], "DISCNUMBER": [str(tags.disc)],
        "DISCTOTAL": [str(tags.discs)], "DATE": [str(tags.year)], "GENRE": list(tags.genres),
        "MUSICBRAINZ_TRACKID": [tags.mb_track], "MUSICBRAINZ_ALBUMID": [tags.mb_album],
        "MUSICBRAINZ_ARTISTID": [tags.mb_artist], "MUSICBRAINZ_ALBUMARTISTID": [tags.mb_albumartist],
    }
    if tags.composer:
        fields["COMPOSER"] = [tags.composer]
    if tags.compilation:
        fields["COMPILATION"] = ["1"]
    if tags.isrc:
        fields["ISRC"] = [tags.isrc]
    if tags.explicit:
        fields["ITUNESADVISORY"] = ["1"]
    if lyrics:
        fields["LYRICS"] = [lyrics]
    if gain:
        fields["REPLAYGAIN_TRACK_GAIN"] = [_gain_text(gain[0])]
        fields["REPLAYGAIN_TRACK_PEAK"] = [f"{gain[1]:.6f}"]
        if fmt == "opus":  # RFC 7845: Q7.8 dB relative to -23 LUFS
            fields["R128_TRACK_GAIN"] = [str(round((gain[0] - 5.0) * 256))]
    for key, values in fields.items():
        comments[key] = values
    if art:
        picture = Picture()
        picture.type, picture.mime, picture.desc, picture.data = 3, "image/jpeg", "Cover", art
        from PIL import Image as PILImage

        with PILImage.open(io.BytesIO(art)) as image:
            picture.width, picture.height = image.size
        picture.depth = 24
        if fmt == "flac":
            audio.clear_pictures()
            audio.add_picture(picture)
        else:
            comments["METADATA_BLOCK_PICTURE"] = [base64.b64encode(picture.write()).decode("ascii")]
    audio.save()


def render_track(job: TrackJob) -> Path:
    """Synthesise, encode and tag one track; the file appears whole or not at all."""
    fmt = FORMATS[job.fmt]
    audio = synthesize(job.sound, job.seconds, fmt.rate)
    gain = None
    if job.replaygain:
        gain = (-18.0 - loudness(audio), float(np.abs(audio).max()))
    partial = job.path.with_name(job.path.name + ".part")
    try:
        encode(audio, fmt.rate, partial, fmt)
        write_tags(partial, job.fmt, job.tags, job.art, job.lyrics, gain)
        os.replace(partial, job.path)
    finally:
        partial.unlink(missing_ok=True)
    return job.path


# ---------------------------------------------------------------- the whole library


def _write_art(albums: list[_Album]) -> None:
    """Album covers beside the files or embedded, lyric sidecars, and a picture for a few artists."""
    pictured = _pictured_artists(albums)
    for album in albums:
        album.folder.mkdir(parents=True, exist_ok=True)
        genre = STYLES[album.style].genre if album.artist != VARIOUS_ARTISTS else "Electronic"
        image = cover_art(album.art_seed, album.title, album.artist, genre)
        if album.art_mode.startswith("cover.jpg"):
            (album.folder / "cover.jpg").write_bytes(_jpeg(image))
        elif album.art_mode == "folder.png":
            image.save(album.folder / "folder.png", "PNG")
        if album.art_mode.endswith("embedded"):
            embedded = _jpeg(image.resize((500, 500)), quality=80)
            album.jobs = [TrackJob(j.path, j.fmt, j.seconds, j.sound, j.tags, embedded, j.lyrics, j.replaygain)
                          for j in album.jobs]
        for path, text in album.sidecars.items():
            path.write_text(text, encoding="utf-8")
        if album.artist in pictured:
            pictured.discard(album.artist)
            image = cover_art(album.art_seed ^ 0x5A5A, album.artist, STYLES[album.style].genre, "Jazz")
            (album.folder.parent / "artist.jpg").write_bytes(_jpeg(image))


def _pictured_artists(albums: list[_Album]) -> set[str]:
    """The first artist of every other genre gets an artist.jpg."""
    firsts: dict[int, str] = {}
    for album in albums:
        if album.artist != VARIOUS_ARTISTS:
            firsts.setdefault(album.style, album.artist)
    return {artist for style, artist in firsts.items() if style % 2 == 0}


def _pool_context() -> multiprocessing.context.BaseContext:
    """fork: fastest, needs no importable __main__; forkserver once other threads make fork unsafe."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _by_cost(jobs: list[TrackJob]) -> list[TrackJob]:
    """Costliest encodes first, so the pool does not end waiting on one slow straggler."""
    return sorted(jobs, key=lambda job: -_COST[job.fmt])


def generate(out_dir: Path, *, seed: int = 7, track_seconds: float = 16.0,
             progress: Callable[[int, int], None] | None = None, workers: int | None = None,
             genres: Sequence[str] | None = None, artists_per_genre: int = 2, albums_per_artist: int = 2,
             tracks_per_album: int = 6, compilation: bool = True,
             formats: Sequence[str] | None = None) -> DemoSummary:
    """Write the demo library into out_dir (created if needed); deterministic for a seed.

    The defaults make the browsable demo library. The other keywords make libraries of known
    sound clusters for measuring stations: `genres` picks styles by genre name, `formats`
    restricts the format rotation (("flac",) is the quickest to write), and every genre's
    artists alternate between its two sub-styles (DemoSummary.truth).
    """
    if track_seconds <= 0:
        raise ValueError("track_seconds must be positive")
    if min(artists_per_genre, albums_per_artist, tracks_per_album) < 1:
        raise ValueError("artists_per_genre, albums_per_artist and tracks_per_album must be at least 1")
    known = [style.genre for style in STYLES]
    if genres is not None and (unknown := set(genres) - set(known)):
        raise ValueError(f"unknown genres {sorted(unknown)}; the styles are {known}")
    if formats is not None and (unknown := set(formats) - set(FORMATS)):
        raise ValueError(f"unknown formats {sorted(unknown)}; choose from {sorted(FORMATS)}")
    if formats is not None and not formats:
        raise ValueError("formats must name at least one format")
    shape = _Shape(
        styles=tuple(s for s, genre in enumerate(known) if genres is None or genre in genres),
        artists=artists_per_genre, albums=albums_per_artist, tracks=tracks_per_album, compilation=compilation,
        # the rotation restricted, keeping its weighting: the cheap encoders come up more often
        formats=_FORMAT_CYCLE if formats is None else tuple(f for f in _FORMAT_CYCLE if f in formats),
    )
    root = Path(out_dir)
    albums = _plan(seed, track_seconds, root, shape)
    for album in albums:
        album.folder.mkdir(parents=True, exist_ok=True)
    total = sum(len(album.jobs) for album in albums)
    count = max(1, min(workers or os.cpu_count() or 1, total))
    if progress:
        progress(0, total)
    if count == 1:
        _write_art(albums)
        for done, job in enumerate((job for album in albums for job in album.jobs), 1):
            render_track(job)
            if progress:
                progress(done, total)
    else:
        with ProcessPoolExecutor(max_workers=count, mp_context=_pool_context()) as pool:
            # tracks without embedded art start while this process draws the covers
            plain = [job for album in albums if not album.art_mode.endswith("embedded") for job in album.jobs]
            futures: list[Future[Path]] = [pool.submit(render_track, job) for job in _by_cost(plain)]
            try:
                _write_art(albums)
                pictured = [job for album in albums if album.art_mode.endswith("embedded") for job in album.jobs]
                futures += [pool.submit(render_track, job) for job in _by_cost(pictured)]
                for done, future in enumerate(as_completed(futures), 1):
                    future.result()
                    if progress:
                        progress(done, total)
            except BaseException:
                for future in futures:
                    future.cancel()
                raise
    jobs = [job for album in albums for job in album.jobs]
    tagged = sorted({genre for job in jobs for genre in job.tags.genres})
    artists = {job.tags.artist for job in jobs}
    truth = {job.path: (STYLES[job.sound.style].genre, substyle_name(job.sound.style, job.sound.substyle))
             for job in jobs}
    return DemoSummary(root=root, artists=len(artists), albums=len(albums), tracks=total,
                       genres=tuple(tagged), files=tuple(job.path for job in jobs), truth=truth)
