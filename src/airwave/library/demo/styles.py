"""The demo library's genres: what makes each sound like itself, and its two sub-styles."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache


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
    name_forms: tuple[
        str, ...
    ]  # "{0} {1}"-style patterns for more artist names than `artists` holds
    name_parts: tuple[tuple[str, ...], tuple[str, ...]]  # what fills {0} and {1}
    substyles: tuple[str, str]  # what sub-styles a and b are, in words
    sub_b: dict[
        str, object
    ]  # the fields sub-style b changes: its own tempo range, timbres, drums ...


SCALES = {
    "major": (0, 2, 4, 5, 7, 9, 11),
    "minor": (0, 2, 3, 5, 7, 8, 10),
    "dorian": (0, 2, 3, 5, 7, 9, 10),
    "lydian": (0, 2, 4, 6, 7, 9, 11),
}

# a dense table reads better here than one value per line
# fmt: off
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
# fmt: on

SUBSTYLES = ("a", "b")


@cache
def style_of(style: int, substyle: int = 0) -> Style:
    """The style a track is synthesised in: the genre's, with sub-style b's changes applied."""
    base = STYLES[style]
    return replace(base, **base.sub_b) if substyle else base  # type: ignore[arg-type]


def substyle_name(style: int, substyle: int) -> str:
    """The label tests and benchmarks use for a sound cluster, e.g. 'Jazz/b'."""
    return f"{STYLES[style].genre}/{SUBSTYLES[substyle]}"
