"""Composition: artists, albums and track plans for a seed, and the sound cluster of each track.

Everything here is decided before any audio exists: names, titles, tags, formats, art modes,
lyrics and the Sound each track is synthesised from (its genre and sub-style: the truth map).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from pathlib import Path

from airwave.library import names
from airwave.library.demo.formats import FORMAT_CYCLE, FORMATS
from airwave.library.demo.styles import STYLES, Style, style_of, substyle_name
from airwave.library.demo.synthesis import Sound
from airwave.library.demo.tagging import TagValues

_NOTE_NAMES = ("C", "C♯", "D", "E♭", "E", "F", "F♯", "G", "A♭", "A", "B♭", "B")
_LYRIC_LINES = (
    "the streetlights hum a second-hand tune",
    "I kept your number in a paper moon",
    "we were loud enough to wake the hill",
    "the radio knows and it never stands still",
    "count the stations till the signal fades",
    "your shadow dancing on the window shades",
    "every mile a little further from the shore",
    "nobody told us what the night was for",
    "static in the wires, gold behind the rain",
    "turn the dial and call my name again",
    "I wrote it down so I would not forget",
    "the coffee's cold, the chorus isn't finished yet",
    "low light, slow heart, an empty avenue",
    "the last train leaves and I'm still here with you",
    "we built a city out of borrowed sound",
    "keep the needle spinning, keep it underground",
)
# five art modes against eight formats: every format meets every mode
_ART_CYCLE = ("cover.jpg", "embedded", "folder.png", "cover.jpg+embedded", "embedded")
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://airwave.invalid/demo-library")
VARIOUS_ARTISTS = "Various Artists"
VARIOUS_ARTISTS_MBID = (
    "89ad4ac3-39f7-470e-963a-56509c546377"  # MusicBrainz's special-purpose artist
)


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
class Album:
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
            title = (
                f"{rng.choice(adjectives)} No. {rng.randint(1, 24)} in {key}: {rng.choice(nouns)}"
            )
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
    head = [
        f"[ar:{tags.artist}]",
        f"[al:{tags.album}]",
        f"[ti:{tags.title}]",
        f"[length:{int(seconds) // 60:02d}:{int(seconds) % 60:02d}]",
    ]
    body = []
    for i, line in enumerate(lines):
        at = seconds * (0.05 + 0.9 * i / len(lines))
        body.append(f"[{int(at) // 60:02d}:{at % 60:05.2f}] {line}")
    return "\n".join(head + body) + "\n"


@dataclass(frozen=True)
class Shape:
    """How much library to plan: which genres, how many artists, albums, tracks; which formats."""

    styles: tuple[int, ...] = tuple(range(len(STYLES)))
    artists: int = 2  # per genre
    albums: int = 2  # per artist
    tracks: int = 6  # per album
    compilation: bool = True
    formats: tuple[str, ...] = FORMAT_CYCLE  # one per album, rotating


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
    """A genre's artist names, sorted: its own if enough, else those plus names from its parts."""
    if count <= len(style.artists):
        candidates = rng.sample(style.artists, count)
    else:
        first, second = (rng.sample(parts, len(parts)) for parts in style.name_parts)
        forms = style.name_forms
        # round r pairs first[i] with second[i + r]: no part comes back before all had a turn
        made = [
            forms[k % len(forms)].format(
                first[k % len(first)], second[(k + k // len(first)) % len(second)]
            )
            for k in range(len(first) * len(second))
        ]
        candidates = [*style.artists, *made]
    chosen: list[str] = []
    for name in candidates:
        key = names.merge_key(
            name
        )  # 'The X' and 'x' would be merged into one artist by the scanner
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


def _album(
    rng: random.Random,
    seed: int,
    root: Path,
    artist: _Artist,
    a: int,
    index: int,
    words: tuple[str, str],
    seconds: float,
    fmt: str,
    tracks: int,
    folders: set[Path],
) -> Album:
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
    while (
        folder in folders
    ):  # only when an artist has more albums than the title words can tell apart
        volume += 1
        folder = root / _safe(artist.name) / _safe(f"{title}, Vol. {volume} ({year})")
    folders.add(folder)
    title = title if volume == 1 else f"{title}, Vol. {volume}"
    genres = (style.genre, style.extra_genre) if a == 1 and artist.slot == 0 else (style.genre,)
    artist_id = _mbid(seed, "artist", artist.name)
    album_id = _mbid(seed, "album", artist.name, title)
    album = Album(
        folder,
        title,
        year,
        artist.style,
        _ART_CYCLE[index % len(_ART_CYCLE)],
        rng.randrange(2**31),
        artist.name,
        [],
        {},
    )
    vocal = style.genre in ("Rock", "Hip-Hop", "Jazz")
    for t, track_title in enumerate(_titles(rng, style, tracks, tonic), 1):
        explicit = (style.genre == "Hip-Hop" and t in ((2, 5) if a == 0 else (4,))) or (
            style.genre == "Rock" and artist.slot == 1 and a == 1 and t == 3
        )
        tags = TagValues(
            title=track_title,
            artist=artist.name,
            album=title,
            albumartist=artist.name,
            track=t,
            tracks=tracks,
            disc=1,
            discs=1,
            year=year,
            genres=genres,
            composer=composer
            if style.genre == "Classical" or (style.genre == "Jazz" and t % 2)
            else None,
            compilation=False,
            mb_track=_mbid(album_id, "track", t),
            mb_album=album_id,
            mb_artist=artist_id,
            mb_albumartist=artist_id,
            isrc=f"ZZAWV{year % 100:02d}{index:03d}{t:02d}" if index % 3 == 1 else None,
            explicit=explicit,
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
        sound = Sound(
            artist.style,
            artist.bpm * rng.uniform(0.97, 1.03),
            tonic,
            artist.brightness * rng.uniform(0.95, 1.05),
            artist.level + rng.uniform(-1.0, 1.0),
            rng.randrange(2**63),
            artist.substyle,
        )
        album.jobs.append(TrackJob(path, fmt, seconds, sound, tags, None, lyrics, index % 3 == 0))
    return album


def _compilation(
    rng: random.Random, seed: int, root: Path, artists: list[_Artist], seconds: float, fmt: str
) -> Album:
    """A Various Artists album: one new track by the first artist of each genre."""
    name = rng.choice(("Late Night Frequencies", "Signals and Stations", "The Demo Hour"))
    title, year = f"{name}, Vol. {rng.randint(1, 4)}", rng.randint(2018, 2024)
    album_id = _mbid(seed, "album", VARIOUS_ARTISTS, title)
    folder = root / VARIOUS_ARTISTS / _safe(f"{title} ({year})")
    album = Album(
        folder, title, year, 3, "cover.jpg+embedded", rng.randrange(2**31), VARIOUS_ARTISTS, [], {}
    )
    contributors = [artist for artist in artists if artist.slot == 0]
    for t, artist in enumerate(contributors, 1):
        style = STYLES[artist.style]
        tags = TagValues(
            title=_titles(rng, style, 1, artist.tonic)[0],
            artist=artist.name,
            album=title,
            albumartist=VARIOUS_ARTISTS,
            track=t,
            tracks=len(contributors),
            disc=1,
            discs=1,
            year=year,
            genres=(style.genre,),
            composer=None,
            compilation=True,
            mb_track=_mbid(album_id, "track", t),
            mb_album=album_id,
            mb_artist=_mbid(seed, "artist", artist.name),
            mb_albumartist=VARIOUS_ARTISTS_MBID,
            isrc=f"ZZAWV{year % 100:02d}999{t:02d}",
            explicit=style.genre == "Hip-Hop",
        )
        sound = Sound(
            artist.style,
            artist.bpm,
            artist.tonic,
            artist.brightness,
            artist.level,
            rng.randrange(2**63),
            artist.substyle,
        )
        path = folder / f"{t:02d} {_safe(tags.title)}{FORMATS[fmt].ext}"
        album.jobs.append(TrackJob(path, fmt, seconds, sound, tags, None, None, True))
    return album


def plan(seed: int, seconds: float, root: Path, shape: Shape = Shape()) -> list[Album]:
    """Names, tags, formats and art assignments for the whole library; no audio yet."""
    rng = random.Random(seed)
    artists: list[_Artist] = []
    albums: list[Album] = []
    taken: set[str] = {names.merge_key(VARIOUS_ARTISTS)}
    folders: set[Path] = set()
    for s in shape.styles:
        style = STYLES[s]
        words = _album_words(rng, style, shape.artists * shape.albums)
        for slot, name in enumerate(_artist_names(rng, style, shape.artists, taken)):
            sound = style_of(s, slot % 2)
            artist = _Artist(
                name,
                s,
                slot,
                rng.uniform(*sound.bpm),
                sound.tonics[(slot + rng.randrange(len(sound.tonics))) % len(sound.tonics)],
                rng.uniform(0.85, 1.15),
                sound.loudness + rng.uniform(-1.5, 1.5),
                rng.randint(1994, 2016),
            )
            artists.append(artist)
            for a in range(shape.albums):
                fmt = shape.formats[len(albums) % len(shape.formats)]
                albums.append(
                    _album(
                        rng,
                        seed,
                        root,
                        artist,
                        a,
                        len(albums),
                        words[(slot * shape.albums + a) % len(words)],
                        seconds,
                        fmt,
                        shape.tracks,
                        folders,
                    )
                )
    if shape.compilation and artists:
        fmt = "mp3" if "mp3" in shape.formats else shape.formats[0]
        albums.append(_compilation(rng, seed, root, artists, seconds, fmt))
    return albums


def truth(jobs: list[TrackJob]) -> dict[Path, tuple[str, str]]:
    """Every planned file's sound cluster: (genre, sub-style label), e.g. ("Jazz", "Jazz/b")."""
    return {
        job.path: (
            STYLES[job.sound.style].genre,
            substyle_name(job.sound.style, job.sound.substyle),
        )
        for job in jobs
    }
