"""A real-music evaluation corpus: free game soundtracks from Debian, in clearly different styles.

Each source package is fetched with `apt-get download` (never installed), unpacked with
`dpkg-deb -x`, and its music files copied into a library whose tags are stripped to artist, album
and title, so a station can only tell the styles apart by how they sound (and by who made them).
Every file's style label, artist and licence (from the package's /usr/share/doc/*/copyright) go
into labels.json beside the library. Everything is cached under ~/.cache/airwave-bench/real-corpus
(or --cache); a second run only checks.

The styles are assigned per package and path from the credits (a metal band, a tracker musician,
an orchestral soundtrack) and from what the package descriptions and file names say; see
bench/README.md for the table and why.

    .venv/bin/python bench/real_corpus.py [--cache DIR]

Prints one line per style and a total; never asserts.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import re
import shutil
import subprocess
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

CACHE = Path.home() / ".cache" / "airwave-bench" / "real-corpus"
MIN_SECONDS = 30.0  # jingles and stings are not songs
AUDIO = (".ogg", ".opus", ".mp3", ".flac")


@dataclass(frozen=True)
class Source:
    """Music files of one package (a glob on the installed path) with their style and credits."""

    package: str
    pattern: str
    style: str
    artist: str
    album: str


def _files(
    package: str, directory: str, stems: tuple[str, ...], style: str, artist: str, album: str
) -> tuple[Source, ...]:
    """Named .ogg files of one directory, one composer: for packages that mix styles."""
    return tuple(Source(package, f"{directory}/{stem}.ogg", style, artist, album) for stem in stems)


UFOAI = "*/0music.pk3.d/music"  # the music archive of ufoai-music, unpacked by fetch()
NAEV = "*/naev/dat/snd/music"

# package + path pattern -> style, artist (first match wins per file)
SOURCES: tuple[Source, ...] = (
    # metal: Muldjord and Sectoid wrote their Frets on Fire songs as metal; Obsidian Shell is a
    # Hungarian metal band (credited in marsshooter-data's copyright)
    Source("fretsonfire-songs-muldjord", "*/songs/muldjord/*/song.ogg", "metal", "Muldjord", "FoF"),
    Source("fretsonfire-songs-sectoid", "*/songs/sectoid/*/song.ogg", "metal", "Sectoid", "FoF"),
    Source("marsshooter-data", "*/marsshooter/audio/*.ogg", "metal", "Obsidian Shell", "M.A.R.S."),
    # orchestral: fantasy strategy / RPG soundtracks for orchestra (strings, brass, choir)
    Source(
        "wesnoth-1.16-music",
        "*/core/music/*.ogg",
        "orchestral",
        "Wesnoth composers",
        "Battle for Wesnoth",
    ),
    Source(
        "flare-game", "*/fantasycore/music/*.ogg", "orchestral", "Flare composers", "Flare Fantasy"
    ),
    # electronic: tracker-made (Psycle, Renoise) electronica, 1999 techno soundtrack and its
    # community remakes, space-shooter electronica
    Source(
        "singularity-music",
        "*/singularity/music/*.ogg",
        "electronic",
        "Max McCracken",
        "Singularity",
    ),
    Source(
        "warzone2100-music",
        "*/original_soundtrack/*.opus",
        "electronic",
        "Martin Severn",
        "Warzone 2100 OST",
    ),
    Source(
        "warzone2100-music",
        "*/legacy_soundtrack/*.opus",
        "electronic",
        "LupusMechanicus",
        "Warzone 2100 Legacy",
    ),
    Source(
        "warzone2100-music",
        "*/aftermath_soundtrack/*.opus",
        "electronic",
        "LupusMechanicus",
        "Warzone 2100 Aftermath",
    ),
    Source(
        "starfighter-data",
        "*/starfighter/music/*.ogg",
        "electronic",
        "Starfighter musicians",
        "Starfighter",
    ),
    # Two packages mix styles: Naev and UFO: Alien Invasion. Their copyright files (or, for
    # Psymong, the file names) credit each piece to its composer, and the independent ear of
    # bench/README.md gave each piece its style (LEFT_OUT below says how). Taken from them: every
    # credited piece of 30 s or more that the ear hears as one style (electronic: only from UFO:
    # Alien Invasion, or electronic would be half the corpus).
    # ambient: quiet, slow, beatless pieces
    *_files(
        "ufoai-music",
        UFOAI,
        (
            *("PsymongN3", "PsymongN4", "PsymongN5", "PsymongO2", "PsymongO3", "PsymongO5"),
            *("PsymongO6", "PsymongR1", "PsymongR2", "PsymongR5"),
        ),
        "ambient",
        "Psymong",
        "UFO: Alien Invasion",
    ),
    *_files(
        "ufoai-music",
        UFOAI,
        ("Crystan-Battlescape03", "Crystan-Geosphere03", "Crystan-IntroSad", "Crystan-LooseGame"),
        "ambient",
        "Crystan",
        "UFO: Alien Invasion",
    ),
    *_files(
        "ufoai-music",
        UFOAI,
        ("karlmacklin_geoscape",),
        "ambient",
        "Karl Macklin",
        "UFO: Alien Invasion",
    ),
    *_files(
        "ufoai-music", UFOAI, ("van_theme",), "ambient", "Manuel Marino", "UFO: Alien Invasion"
    ),
    *_files(
        "naev-data",
        NAEV,
        (
            *("ambient1", "ambient2", "ambient2_5", "intrigue", "nebu_battle1", "sirius1"),
            "tension",
        ),
        "ambient",
        "Nikola Whallon",
        "Naev",
    ),
    *_files("naev-data", NAEV, ("cosmostation",), "ambient", "Vega Strike", "Naev"),
    *_files("naev-data", NAEV, ("terminal",), "ambient", "Askyel", "Naev"),
    # metal (hard rock and metal: "rock", "guitar" or "loud" for the ear)
    *_files(
        "ufoai-music",
        UFOAI,
        ("David01", "David03", "David05"),
        "metal",
        "David Reeves",
        "UFO: Alien Invasion",
    ),
    *_files(
        "ufoai-music", UFOAI, ("van_mission2",), "metal", "Manuel Marino", "UFO: Alien Invasion"
    ),
    *_files(
        "ufoai-music",
        UFOAI,
        ("MarineAlienRaid",),
        "metal",
        "Marine Baklund",
        "UFO: Alien Invasion",
    ),
    *_files("naev-data", NAEV, ("combat3",), "metal", "Askyel", "Naev"),
    # electronic ("techno", "beat" or "dance" for the ear)
    *_files(
        "ufoai-music",
        UFOAI,
        (
            *("Crystan-Battlescape01", "Crystan-Battlescape02", "Crystan-Battlescape04"),
            *("Crystan-Battlescape05", "Crystan-Battlescape06", "Crystan-Credits"),
            *("Crystan-Geosphere02", "Crystan-Geosphere04", "Crystan-Tutorial"),
        ),
        "electronic",
        "Crystan",
        "UFO: Alien Invasion",
    ),
    *_files(
        "ufoai-music",
        UFOAI,
        (
            *("Marine01", "Marine02", "MarineBacktheAttack", "MarineIndustrial"),
            *("MarineStrikingIntoTheUnknown", "MarineUrbanWarfare"),
        ),
        "electronic",
        "Marine Baklund",
        "UFO: Alien Invasion",
    ),
    *_files(
        "ufoai-music",
        UFOAI,
        ("PsymongO1", "PsymongO4", "PsymongR3", "PsymongR4"),
        "electronic",
        "Psymong",
        "UFO: Alien Invasion",
    ),
    *_files(
        "ufoai-music",
        UFOAI,
        ("van_mission", "van_mission4"),
        "electronic",
        "Manuel Marino",
        "UFO: Alien Invasion",
    ),
    *_files(
        "ufoai-music", UFOAI, ("David04",), "electronic", "David Reeves", "UFO: Alien Invasion"
    ),
    *_files("ufoai-music", UFOAI, ("azrael1",), "electronic", "azrael1322", "UFO: Alien Invasion"),
    # orchestral
    *_files("naev-data", NAEV, ("ambient4", "dvaered1"), "orchestral", "Askyel", "Naev"),
    *_files("naev-data", NAEV, ("intro",), "orchestral", "Nikola Whallon", "Naev"),
    *_files("naev-data", NAEV, ("agriculture",), "orchestral", "Vega Strike", "Naev"),
    *_files(
        "ufoai-music",
        UFOAI,
        ("Crystan-WinGame",),
        "orchestral",
        "Crystan",
        "UFO: Alien Invasion",
    ),
)

# Files of the single-style packages above that the independent ear of bench/README.md does not
# hear in their package's style: none of its three strongest tags names that style (the
# vocabulary: metal "rock", "metal", "guitar", "loud"; orchestral "classical", "strings",
# "violin", "cello", "choir", "piano", "flute"; electronic "techno", "beat", "dance"; ambient
# "ambient", "quiet", "new age", "soft"). By library name, without the suffix.
LEFT_OUT: dict[str, frozenset[str]] = {
    "flare-game": frozenset(
        {"Cave_Theme", "Dungeon_Theme", "Forest_Theme", "Title_Theme", "Unrest_Theme"}
        | {"Wind_Ambient"}
    ),  # quiet, ambient, slow
    "fretsonfire-songs-muldjord": frozenset({"Mutilated_Mime"}),  # techno, fast, electronic
    "marsshooter-data": frozenset({"08_Second_Birth"}),  # techno, electronic, fast
    "singularity-music": frozenset(
        {"Advanced_Simulacra", "Awakening", "Chimes_They_Fade", "March_Thee_To_Dis"}
    ),  # slow, piano, ambient ...
    "starfighter-data": frozenset({"Death", "Rise_Of_Spirit", "Walking_Among_Androids"}),
    "warzone2100-music": frozenset({"Track1"}),  # ambient, drums, electronic
    "wesnoth-1.16-music": frozenset(
        {"Frantic", "Frantic_Old", "Heroes_Rite", "Loyalists", "Northerners", "Underground"}
    ),  # ambient, slow ... or fast, techno, drums
}


def fetch(package: str, cache: Path) -> Path:
    """The package unpacked under cache/unpacked/<package> (downloaded first when absent)."""
    target = cache / "unpacked" / package
    if target.is_dir():
        return target
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{package}_*.deb"))
    if not found:
        subprocess.run(["apt-get", "download", package], cwd=debs, check=True)
        found = sorted(debs.glob(f"{package}_*.deb"))
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(found[-1]), str(partial)], check=True)
    for archive in sorted(partial.rglob("*.pk3")):  # a game's data archive: a zip file
        with zipfile.ZipFile(archive) as pack:
            pack.extractall(archive.with_name(archive.name + ".d"))
    partial.rename(target)
    return target


_KNOWN_LICENCES = (
    (
        r"creative\s+commons\s+attribution[\s-]+share[\s-]*alike[^\n]*?3\.0|by-sa/3\.0",
        "CC-BY-SA-3.0",
    ),
    (r"creative\s+commons\s+attribution[\s-]+share[\s-]*alike", "CC-BY-SA"),
    (
        r"share[\s-]*alike[\s\S]*creative\s+commons|creative\s+commons[\s\S]*share[\s-]*alike",
        "CC-BY-SA",
    ),
    (r"GNU General Public License[^\n]*version 2|GPL-2", "GPL-2"),
    (r"GNU General Public License[^\n]*version 3|GPL-3", "GPL-3"),
    (r"permission is hereby granted, free of charge", "Expat"),
)


def _suffix_matches(installed: str, pattern: str) -> bool:
    """A DEP-5 pattern (a source path) against an installed path: the pattern's last two or more
    components, or a bare `*`."""
    if pattern == "*":
        return True
    parts = pattern.strip("./").split("/")
    if len(parts) == 1:
        return fnmatch.fnmatch(installed.rsplit("/", 1)[-1], parts[0]) and "*" not in parts[0]
    return any(
        fnmatch.fnmatch(installed, "*/" + "/".join(parts[k:])) for k in range(len(parts) - 1)
    )


def licence_of(root: Path, installed: str) -> str:
    """The licence of one file from its package's copyright: in DEP-5 form the last stanza whose
    Files pattern matches wins; in free form, the first licence the text names."""
    copyrights = sorted(root.glob("usr/share/doc/*/copyright"))
    if not copyrights:
        return "unknown (no copyright file)"
    text = copyrights[0].read_text(errors="replace")
    stanzas = [s for s in re.split(r"\n\s*\n", text) if s.startswith("Files:")]
    best = None
    for stanza in stanzas:
        files = re.match(r"Files:(.*?)(?=\n\S|$)", stanza, re.S)
        licence = re.search(r"(?m)^License:[ \t]*(\S.*)$", stanza)
        if files and licence and any(_suffix_matches(installed, p) for p in files[1].split()):
            best = licence[1].strip()
    if best:
        return best
    for pattern, name in _KNOWN_LICENCES:
        if re.search(pattern, text, re.I):
            return f"{name} (free-form copyright)"
    return "unknown"


def duration(path: Path) -> float:
    import mutagen

    info = mutagen.File(path)
    return float(info.info.length) if info is not None and info.info else 0.0


def retag(path: Path, artist: str, album: str, title: str) -> None:
    """Every tag removed, then only artist, album and title written."""
    import mutagen

    audio = mutagen.File(path, easy=True)
    if audio is None:
        raise ValueError(f"not an audio file mutagen knows: {path}")
    if audio.tags is not None:
        audio.delete()
    audio = mutagen.File(path, easy=True)
    if audio.tags is None:
        audio.add_tags()
    audio["artist"], audio["album"], audio["title"] = artist, album, title
    audio.save()


def title_of(path: Path) -> str:
    name = path.parent.name if path.stem in ("song", "guitar") else path.stem
    return re.sub(r"[_-]+", " ", name).strip().title()


def build(cache: Path = CACHE) -> tuple[Path, dict[str, dict[str, str]]]:
    """The library (cache/library) and its labels (relative path -> style, artist, album,
    package, licence)."""
    library = cache / "library"
    labels_file = cache / "labels.json"
    made_by = cache / "library.sources"  # the table the library was made from
    recipe = hashlib.sha256(repr((SOURCES, sorted(LEFT_OUT.items()))).encode()).hexdigest()
    if labels_file.exists() and library.is_dir() and made_by.exists():
        labels = json.loads(labels_file.read_text())
        if made_by.read_text() == recipe and all((library / p).exists() for p in labels):
            return library, labels
    shutil.rmtree(library, ignore_errors=True)
    labels: dict[str, dict[str, str]] = {}
    taken: set[Path] = set()
    for source in SOURCES:
        root = fetch(source.package, cache)
        for path in sorted(root.rglob("*")):
            installed = "/" + str(path.relative_to(root))
            if (
                path in taken
                or path.suffix.lower() not in AUDIO
                or not fnmatch.fnmatch(installed, source.pattern)
                or duration(path) < MIN_SECONDS
            ):
                continue
            taken.add(path)
            title = title_of(path)
            stem = re.sub(r"[^A-Za-z0-9]+", "_", title).strip("_")
            if stem in LEFT_OUT.get(source.package, ()):
                continue
            name = stem + path.suffix.lower()
            relative = f"{source.package}/{name}"
            while relative in labels:  # two files of one title
                relative = relative.replace(path.suffix.lower(), "_" + path.suffix.lower())
            out = library / relative
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
            retag(out, source.artist, source.album, title)
            labels[relative] = {
                "style": source.style,
                "artist": source.artist,
                "album": source.album,
                "package": source.package,
                "source_path": installed,
                "licence": licence_of(root, installed),
            }
    labels_file.write_text(json.dumps(labels, indent=1, sort_keys=True))
    made_by.write_text(recipe)
    return library, labels


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args()
    library, labels = build(args.cache)
    styles = Counter(v["style"] for v in labels.values())
    for style, count in sorted(styles.items()):
        packages = sorted({v["package"] for v in labels.values() if v["style"] == style})
        artists = sorted({v["artist"] for v in labels.values() if v["style"] == style})
        print(f"style {style} tracks={count} packages={','.join(packages)} artists={len(artists)}")
    licences = Counter(v["licence"] for v in labels.values())
    print(f"corpus tracks={len(labels)} styles={len(styles)} library={library}")
    print("licences " + " ".join(f"{k!r}={n}" for k, n in licences.most_common()))


if __name__ == "__main__":
    main()
