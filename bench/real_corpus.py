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
import json
import re
import shutil
import subprocess
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
    # retro game synth: 1990s adventure / puzzle game scores made on synthesisers (sequenced,
    # General-MIDI-like instruments), not orchestras and not dance electronica
    Source("drascula-music", "*/drascula/audio/*.ogg", "retro-synth", "Alcachofa Soft", "Drascula"),
    Source(
        "planetblupi-music-ogg",
        "*/planetblupi/music/*.ogg",
        "retro-synth",
        "EPSITEC",
        "Planet Blupi",
    ),
)


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
    if labels_file.exists() and library.is_dir():
        labels = json.loads(labels_file.read_text())
        if all((library / p).exists() for p in labels):
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
            name = re.sub(r"[^A-Za-z0-9]+", "_", title).strip("_") + path.suffix.lower()
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
