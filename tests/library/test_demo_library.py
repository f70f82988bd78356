"""Demo library: counts, formats, decodable audio, tags, art, lyrics, genres that sound apart, and
larger libraries of known sound clusters (genres and their two sub-styles) for measuring
stations."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import av
import mutagen
import numpy as np
import pytest
from mutagen.flac import Picture
from PIL import Image

from airwave.library import demo, names

SECONDS = 4.0
AUDIO = {".mp3", ".flac", ".m4a", ".ogg", ".opus"}
CODECS = {".mp3": "mp3", ".flac": "flac", ".m4a": "aac", ".ogg": "vorbis", ".opus": "opus"}
ANALYSIS_RATE = 22050


@pytest.fixture(scope="module")
def library(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[demo.DemoSummary, list[tuple[int, int]]]:
    calls: list[tuple[int, int]] = []
    summary = demo.generate(
        tmp_path_factory.mktemp("demo"),
        track_seconds=SECONDS,
        progress=lambda done, total: calls.append((done, total)),
    )
    return summary, calls


@pytest.fixture(scope="module")
def summary(library: tuple[demo.DemoSummary, list[tuple[int, int]]]) -> demo.DemoSummary:
    return library[0]


@pytest.fixture(scope="module")
def tags(summary: demo.DemoSummary) -> dict[Path, mutagen.FileType]:
    return {path: mutagen.File(path) for path in summary.files}


@pytest.fixture(scope="module")
def easy(summary: demo.DemoSummary) -> dict[Path, mutagen.FileType]:
    return {path: mutagen.File(path, easy=True) for path in summary.files}


def decode(path: Path) -> tuple[np.ndarray, int, int, str]:
    """(mono float32 at ANALYSIS_RATE, native rate, channels, codec name) of one file."""
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        rate, channels, codec = stream.rate, stream.channels, stream.codec_context.name
        resampler = av.AudioResampler(format="flt", layout="mono", rate=ANALYSIS_RATE)
        chunks = [
            out.to_ndarray().reshape(-1)
            for frame in container.decode(stream)
            for out in resampler.resample(frame)
        ]
        chunks += [out.to_ndarray().reshape(-1) for out in resampler.resample(None)]
    return np.concatenate(chunks), rate, channels, codec


@pytest.fixture(scope="module")
def decoded(summary: demo.DemoSummary) -> dict[Path, tuple[np.ndarray, int, int, str]]:
    return {path: decode(path) for path in summary.files}


def primary_genre(file: mutagen.FileType) -> str:
    return str(file["genre"][0])


# ---------------------------------------------------------------- shape of the library


def test_counts(summary: demo.DemoSummary, easy: dict[Path, mutagen.FileType]) -> None:
    assert summary.artists >= 12
    assert summary.albums >= 25  # 12 artists x 2, plus the compilation
    assert summary.tracks == len(summary.files) >= 144 + 1
    assert len(summary.genres) >= 6
    primary = {primary_genre(file) for file in easy.values()}
    assert len(primary) >= 6
    artists_per_genre = defaultdict(set)
    for file in easy.values():
        artists_per_genre[primary_genre(file)].add(str(file["artist"][0]))
    assert all(len(artists) >= 2 for artists in artists_per_genre.values())


def test_files_on_disk_match_summary(summary: demo.DemoSummary) -> None:
    on_disk = {p for p in summary.root.rglob("*") if p.suffix in AUDIO}
    assert on_disk == set(summary.files)
    assert not list(summary.root.rglob("*.part"))


def test_layout(summary: demo.DemoSummary, easy: dict[Path, mutagen.FileType]) -> None:
    for path, file in easy.items():
        relative = path.relative_to(summary.root)
        assert len(relative.parts) == 3
        assert re.fullmatch(r".+ \(\d{4}\)", relative.parts[1])
        assert re.fullmatch(r"\d\d .+", relative.parts[2])
        if relative.parts[0] != "Various Artists":
            assert relative.parts[0] == str(file["albumartist"][0])


def test_progress_reaches_total(library: tuple[demo.DemoSummary, list[tuple[int, int]]]) -> None:
    summary, calls = library
    done = [d for d, _ in calls]
    assert done == sorted(done)
    assert calls[-1] == (summary.tracks, summary.tracks)
    assert {total for _, total in calls} == {summary.tracks}


def test_every_format_present_many_times(summary: demo.DemoSummary) -> None:
    counts = Counter(path.suffix for path in summary.files)
    assert set(counts) == AUDIO
    assert all(count >= 12 for count in counts.values()), counts


# ---------------------------------------------------------------- audio


def test_every_file_decodes_to_the_requested_length(
    decoded: dict[Path, tuple[np.ndarray, int, int, str]],
) -> None:
    for path, (mono, rate, channels, codec) in decoded.items():
        assert codec.startswith(CODECS[path.suffix]), (path, codec)  # the MP3 decoder is "mp3float"
        assert channels == 2, path
        assert rate == (48000 if path.suffix == ".opus" else 44100), path
        assert abs(len(mono) / ANALYSIS_RATE - SECONDS) < 0.1, (path, len(mono) / ANALYSIS_RATE)
        assert np.sqrt(np.mean(mono**2)) > 0.005, path  # not silence


def features(mono: np.ndarray) -> tuple[float, float, float]:
    """Spectral centroid (Hz), pulse clarity (0..1) and level (dBFS) of a mono signal."""
    frame, hop = 1024, 256
    count = (len(mono) - frame) // hop
    index = np.arange(frame)[None, :] + hop * np.arange(count)[:, None]
    magnitude = np.abs(np.fft.rfft(mono[index] * np.hanning(frame), axis=1))
    freqs = np.fft.rfftfreq(frame, 1 / ANALYSIS_RATE)
    centroid = float((magnitude * freqs).sum() / magnitude.sum())
    flux = np.maximum(np.diff(np.log1p(100 * magnitude / magnitude.max()), axis=0), 0).sum(axis=1)
    fps = ANALYSIS_RATE / hop
    width = int(0.5 * fps)
    detrended = flux - np.convolve(flux, np.ones(width) / width, "same")
    ac = np.correlate(detrended, detrended, "full")[len(detrended) - 1 :]
    lags = np.arange(len(ac))
    bpm = 60 * fps / np.maximum(lags, 1)
    clarity = float((ac[(bpm >= 60) & (bpm <= 200)] / ac[0]).max())
    level = float(20 * np.log10(np.sqrt(np.mean(mono**2))))
    return centroid, clarity, level


def test_genres_differ_acoustically(
    decoded: dict[Path, tuple[np.ndarray, int, int, str]], easy: dict[Path, mutagen.FileType]
) -> None:
    by_genre: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for path, (mono, *_rest) in decoded.items():
        by_genre[primary_genre(easy[path])].append(features(mono))
    mean = {genre: np.mean(values, axis=0) for genre, values in by_genre.items()}
    ambient, electronic, rock, hiphop = (
        mean["Ambient"],
        mean["Electronic"],
        mean["Rock"],
        mean["Hip-Hop"],
    )
    assert electronic[0] > 2.5 * ambient[0]  # brightness
    assert rock[0] > 2.0 * ambient[0]
    assert hiphop[0] < 0.6 * electronic[0]  # dark beats vs bright ones
    assert electronic[1] > ambient[1] + 0.25  # a clear beat vs none
    assert rock[2] > ambient[2] + 6  # loudness
    # and the tracks of one genre resemble each other more than another genre's
    centroids = {genre: [v[0] for v in values] for genre, values in by_genre.items()}
    assert max(centroids["Ambient"]) < min(centroids["Electronic"])


def test_synthesis_is_deterministic_and_varies_with_the_seed() -> None:
    sound = demo.Sound(style=1, bpm=132.0, tonic=58, brightness=1.0, loudness=-18.0, seed=42)
    first = demo.synthesize(sound, 2.0)
    assert first.shape == (2, 88200) and first.dtype == np.float32
    assert np.array_equal(first, demo.synthesize(sound, 2.0))
    other = demo.synthesize(demo.Sound(1, 132.0, 58, 1.0, -18.0, seed=43), 2.0)
    assert not np.array_equal(first, other)
    assert abs(demo.loudness(first) - -18.0) < 1.5


# ---------------------------------------------------------------- tags


def test_core_tags_readable(easy: dict[Path, mutagen.FileType]) -> None:
    for path, file in easy.items():
        for key in ("title", "artist", "album", "albumartist", "tracknumber", "genre", "date"):
            assert file.get(key), (path, key)
        assert int(str(file["tracknumber"][0]).split("/")[0]) == int(path.name[:2])


def test_track_totals(tags: dict[Path, mutagen.FileType]) -> None:
    for path, file in tags.items():
        if path.suffix == ".mp3":
            assert re.fullmatch(r"\d+/\d+", str(file["TRCK"]))
        elif path.suffix == ".m4a":
            assert file["trkn"][0][1] >= 6
        else:
            assert int(file["tracktotal"][0]) >= 6


def mbids(path: Path, file: mutagen.FileType) -> tuple[str, str, str]:
    if path.suffix == ".mp3":
        return (
            file["UFID:http://musicbrainz.org"].data.decode(),
            str(file["TXXX:MusicBrainz Album Id"]),
            str(file["TXXX:MusicBrainz Artist Id"]),
        )
    if path.suffix == ".m4a":
        return tuple(
            bytes(file[f"----:com.apple.iTunes:MusicBrainz {k} Id"][0]).decode()
            for k in ("Track", "Album", "Artist")
        )  # type: ignore[return-value]
    return tuple(file[f"musicbrainz_{k}id"][0] for k in ("track", "album", "artist"))  # type: ignore[return-value]


def test_musicbrainz_ids(
    tags: dict[Path, mutagen.FileType], easy: dict[Path, mutagen.FileType]
) -> None:
    track_ids, album_ids, artist_of = set(), defaultdict(set), defaultdict(set)
    for path, file in tags.items():
        track, album, artist = mbids(path, file)
        for value in (track, album, artist):
            uuid.UUID(value)
        track_ids.add(track)
        album_ids[path.parent].add(album)
        artist_of[str(easy[path]["artist"][0])].add(artist)
    assert len(track_ids) == len(tags)
    assert all(len(ids) == 1 for ids in album_ids.values())
    assert all(len(ids) == 1 for ids in artist_of.values())


def test_multi_valued_genre(easy: dict[Path, mutagen.FileType]) -> None:
    multi = {path.suffix for path, file in easy.items() if len(file["genre"]) > 1}
    assert len(multi) >= 2  # in more than one container format
    assert any(list(file["genre"]) == ["Jazz", "Fusion"] for file in easy.values())


def test_compilation(
    summary: demo.DemoSummary,
    tags: dict[Path, mutagen.FileType],
    easy: dict[Path, mutagen.FileType],
) -> None:
    various = [
        p for p in summary.files if p.relative_to(summary.root).parts[0] == "Various Artists"
    ]
    assert len(various) >= 5
    assert {str(easy[p]["albumartist"][0]) for p in various} == {"Various Artists"}
    assert len({str(easy[p]["artist"][0]) for p in various}) >= 4
    for path in various:
        file = tags[path]
        if path.suffix == ".mp3":
            flagged = str(file["TCMP"]) == "1"
        elif path.suffix == ".m4a":
            flagged = file["cpil"] is True
        else:
            flagged = file["compilation"] == ["1"]
        assert flagged, path
    others = [p for p in summary.files if p not in various]
    assert not any(
        "TCMP" in tags[p] or "cpil" in tags[p] or "compilation" in tags[p] for p in others
    )


def test_composer_replaygain_isrc_explicit(
    tags: dict[Path, mutagen.FileType], easy: dict[Path, mutagen.FileType]
) -> None:
    def has(path: Path, id3: str, mp4: str, vorbis: str) -> bool:
        file = tags[path]
        key = {".mp3": id3, ".m4a": mp4}.get(path.suffix, vorbis)
        return key in file

    composers = [p for p in tags if easy[p].get("composer")]
    gains = [
        p
        for p in tags
        if has(
            p,
            "TXXX:REPLAYGAIN_TRACK_GAIN",
            "----:com.apple.iTunes:replaygain_track_gain",
            "replaygain_track_gain",
        )
    ]
    peaks = [
        p
        for p in tags
        if has(
            p,
            "TXXX:REPLAYGAIN_TRACK_PEAK",
            "----:com.apple.iTunes:replaygain_track_peak",
            "replaygain_track_peak",
        )
    ]
    isrcs = [p for p in tags if has(p, "TSRC", "----:com.apple.iTunes:ISRC", "isrc")]
    explicit = [p for p in tags if has(p, "TXXX:ITUNESADVISORY", "rtng", "itunesadvisory")]
    for group in (composers, gains, isrcs, explicit):
        assert 0 < len(group) < len(tags)
    assert set(gains) == set(peaks)
    assert len({p.suffix for p in gains}) >= 3
    assert 2 <= len(explicit) <= 12
    assert any(p.suffix == ".m4a" and tags[p]["rtng"] == [1] for p in explicit)
    for path in gains:
        file = tags[path]
        text = (
            str(file["TXXX:REPLAYGAIN_TRACK_GAIN"])
            if path.suffix == ".mp3"
            else bytes(file["----:com.apple.iTunes:replaygain_track_gain"][0]).decode()
            if path.suffix == ".m4a"
            else file["replaygain_track_gain"][0]
        )
        assert re.fullmatch(r"[+-]\d+\.\d\d dB", text)
        if path.suffix == ".opus":
            assert re.fullmatch(r"-?\d+", tags[path]["r128_track_gain"][0])
    for path in isrcs:
        value = {
            ".mp3": lambda f: str(f["TSRC"]),
            ".m4a": lambda f: bytes(f["----:com.apple.iTunes:ISRC"][0]).decode(),
        }.get(path.suffix, lambda f: f["isrc"][0])(tags[path])
        assert re.fullmatch(r"[A-Z]{2}[A-Z0-9]{3}\d{7}", value)


# ---------------------------------------------------------------- art and lyrics


def embedded_art(path: Path, file: mutagen.FileType) -> bytes | None:
    if path.suffix == ".mp3":
        frames = file.tags.getall("APIC")
        return frames[0].data if frames else None
    if path.suffix == ".m4a":
        return bytes(file["covr"][0]) if "covr" in file else None
    if path.suffix == ".flac":
        return file.pictures[0].data if file.pictures else None
    if "metadata_block_picture" in file:
        return Picture(base64.b64decode(file["metadata_block_picture"][0])).data
    return None


def test_art_files_and_embedded_art(
    summary: demo.DemoSummary, tags: dict[Path, mutagen.FileType]
) -> None:
    covers = list(summary.root.rglob("cover.jpg"))
    folders = list(summary.root.rglob("folder.png"))
    artist_images = list(summary.root.rglob("artist.jpg"))
    assert covers and folders and len(artist_images) >= 2
    for image_path in covers + folders + artist_images:
        with Image.open(image_path) as image:
            assert image.size[0] >= 500 and image.size[0] == image.size[1]
    embedded = {path: data for path, file in tags.items() if (data := embedded_art(path, file))}
    assert {path.suffix for path in embedded} == AUDIO
    for data in list(embedded.values())[:10]:
        with Image.open(io.BytesIO(data)) as image:
            assert image.format == "JPEG" and image.size[0] >= 300
    albums = {path.parent for path in summary.files}
    only_embedded = [
        a for a in albums if not (a / "cover.jpg").exists() and not (a / "folder.png").exists()
    ]
    assert only_embedded and all(any(p.parent == a for p in embedded) for a in only_embedded)
    assert all(
        (a / "cover.jpg").exists() or (a / "folder.png").exists() or a in only_embedded
        for a in albums
    )
    # covers differ from album to album
    digests = {hashlib.sha1(p.read_bytes()).hexdigest() for p in covers}
    assert len(digests) == len(covers)


def embedded_lyrics(path: Path, file: mutagen.FileType) -> str | None:
    if path.suffix == ".mp3":
        frames = file.tags.getall("USLT")
        return frames[0].text if frames else None
    if path.suffix == ".m4a":
        return file["\xa9lyr"][0] if "\xa9lyr" in file else None
    return file["lyrics"][0] if "lyrics" in file else None


def test_lyrics(summary: demo.DemoSummary, tags: dict[Path, mutagen.FileType]) -> None:
    embedded = {path: text for path, file in tags.items() if (text := embedded_lyrics(path, file))}
    assert len(embedded) >= 3 and len({p.suffix for p in embedded}) >= 3
    assert all(len(text.splitlines()) >= 4 for text in embedded.values())
    lrc = list(summary.root.rglob("*.lrc"))
    assert lrc
    for path in lrc:
        assert any(path.with_suffix(ext).exists() for ext in AUDIO), path
        timed = [
            line
            for line in path.read_text(encoding="utf-8").splitlines()
            if re.fullmatch(r"\[\d\d:\d\d\.\d\d\] .+", line)
        ]
        assert len(timed) >= 4
        stamps = [int(line[1:3]) * 60 + float(line[4:9]) for line in timed]
        assert stamps == sorted(stamps) and stamps[-1] < SECONDS
    txt = list(summary.root.rglob("*.txt"))
    assert len(txt) == 1 and any(txt[0].with_suffix(ext).exists() for ext in AUDIO)


# ---------------------------------------------------------------- determinism


def test_same_seed_same_library(tmp_path: Path) -> None:
    """A seed makes the same library whatever the number of worker processes (a smaller library
    than the module's: two genres of short tracks, every format)."""
    shape = {"genres": ["Jazz", "Rock"], "tracks_per_album": 2, "track_seconds": 1.0}
    first = demo.generate(tmp_path / "one", workers=2, **shape)  # type: ignore[arg-type]
    again = demo.generate(tmp_path / "two", workers=1, **shape)  # type: ignore[arg-type]
    assert [p.relative_to(again.root) for p in again.files] == [
        p.relative_to(first.root) for p in first.files
    ]
    assert again.genres == first.genres
    assert {p.suffix for p in first.files} >= {".flac", ".mp3"}
    for one, two in zip(first.files, again.files):
        if one.suffix == ".flac":  # lossless: the very same samples and tags
            assert list(mutagen.File(one).tags) == list(mutagen.File(two).tags)
            assert np.array_equal(decode(one)[0], decode(two)[0])
        elif one.suffix == ".mp3":
            assert {k: str(v) for k, v in mutagen.File(one).tags.items()} == {
                k: str(v) for k, v in mutagen.File(two).tags.items()
            }
    different = demo.generate(tmp_path / "other", seed=8, **shape)  # type: ignore[arg-type]
    assert {p.name for p in different.files} != {p.name for p in first.files}


# ---------------------------------------------------------------- libraries of known sound clusters


def test_truth_names_every_file_and_its_cluster(
    summary: demo.DemoSummary, easy: dict[Path, mutagen.FileType]
) -> None:
    assert set(summary.truth) == set(summary.files)
    substyles_of = defaultdict(set)
    for path, (genre, substyle) in summary.truth.items():
        assert primary_genre(easy[path]) == genre
        assert substyle in (f"{genre}/a", f"{genre}/b")
        substyles_of[str(easy[path]["artist"][0])].add(substyle)
    assert all(
        len(styles) == 1 for styles in substyles_of.values()
    )  # an artist keeps to one sub-style
    assert {s for styles in substyles_of.values() for s in styles} == {
        f"{style.genre}/{sub}" for style in demo.STYLES for sub in demo.SUBSTYLES
    }


def test_shape_keywords_give_the_requested_library(tmp_path: Path) -> None:
    summary = demo.generate(
        tmp_path,
        genres=("Electronic", "Jazz"),
        artists_per_genre=5,
        albums_per_artist=2,
        tracks_per_album=3,
        compilation=False,
        formats=("flac",),
        track_seconds=0.3,
    )
    assert (summary.artists, summary.albums, summary.tracks) == (10, 20, 60)
    assert {path.suffix for path in summary.files} == {".flac"}
    assert {genre for genre, _ in summary.truth.values()} == {"Electronic", "Jazz"}
    artist_of = {path: path.relative_to(summary.root).parts[0] for path in summary.files}
    assert "Various Artists" not in artist_of.values()
    albums = Counter(path.parent for path in summary.files)
    assert set(albums.values()) == {3}
    assert Counter(
        artist_of[next(p for p in summary.files if p.parent == album)] for album in albums
    ) == {artist: 2 for artist in set(artist_of.values())}
    # five artists per genre need names beyond each style's own three; the sub-styles alternate
    per_substyle = Counter(summary.truth[path][1] for path in summary.files)
    assert per_substyle == {"Electronic/a": 18, "Electronic/b": 12, "Jazz/a": 18, "Jazz/b": 12}
    file = mutagen.File(summary.files[0], easy=True)
    assert file["tracktotal"] == ["3"] and file["genre"][0] in ("Electronic", "Jazz")


def test_artist_names_stay_unique_in_large_libraries(tmp_path: Path) -> None:
    summary = demo.generate(
        tmp_path,
        artists_per_genre=14,
        albums_per_artist=1,
        tracks_per_album=1,
        formats=("flac",),
        track_seconds=0.2,
    )
    folders = {path.relative_to(summary.root).parts[0] for path in summary.files} - {
        "Various Artists"
    }
    assert summary.artists == len(folders) == 6 * 14
    assert len({names.merge_key(folder) for folder in folders}) == len(
        folders
    )  # not merged by the scanner
    compilation = [
        p for p in summary.files if p.relative_to(summary.root).parts[0] == "Various Artists"
    ]
    assert len(compilation) == 6 and {p.suffix for p in compilation} == {".flac"}
    per_genre = Counter(genre for genre, _ in summary.truth.values())
    assert set(per_genre.values()) == {14 + 1}


def test_format_rotation_can_be_restricted(tmp_path: Path) -> None:
    summary = demo.generate(
        tmp_path,
        genres=("Rock",),
        artists_per_genre=3,
        albums_per_artist=2,
        tracks_per_album=1,
        formats=("opus", "flac"),
        track_seconds=0.3,
    )
    assert {path.suffix for path in summary.files} == {".flac", ".opus"}
    with pytest.raises(ValueError, match="unknown formats"):
        demo.generate(tmp_path / "x", formats=("wav",))
    with pytest.raises(ValueError, match="unknown genres"):
        demo.generate(tmp_path / "x", genres=("Polka",))
    with pytest.raises(ValueError):
        demo.generate(tmp_path / "x", artists_per_genre=0)


def test_cluster_library_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    def make(where: Path, seed: int, workers: int | None) -> demo.DemoSummary:
        return demo.generate(
            where,
            seed=seed,
            genres=("Hip-Hop", "Classical"),
            artists_per_genre=4,
            albums_per_artist=1,
            tracks_per_album=2,
            formats=("flac",),
            track_seconds=0.5,
            workers=workers,
        )

    first, second = make(tmp_path / "one", 11, None), make(tmp_path / "two", 11, 1)
    relative = {p.relative_to(first.root): v for p, v in first.truth.items()}
    assert relative == {p.relative_to(second.root): v for p, v in second.truth.items()}
    for one, two in zip(first.files, second.files):
        assert np.array_equal(decode(one)[0], decode(two)[0])
        assert dict(mutagen.File(one).tags) == dict(mutagen.File(two).tags)
    other = make(tmp_path / "three", 12, None)
    assert {p.parent.parent.name for p in other.files} != {
        p.parent.parent.name for p in first.files
    }


def test_substyle_b_is_faster_and_brighter_than_a_in_every_genre() -> None:
    for index, style in enumerate(demo.STYLES):
        a, b = demo.style_of(index, 0), demo.style_of(index, 1)
        assert (a.genre, a.bpm) == (style.genre, style.bpm)
        assert b.genre == style.genre and b.bpm[0] >= a.bpm[1] - 1e-9, style.genre
        centroids = []
        for substyle, sound_style in enumerate((a, b)):
            sounds = [
                demo.Sound(
                    index,
                    sum(sound_style.bpm) / 2,
                    sound_style.tonics[seed],
                    1.0,
                    sound_style.loudness,
                    seed=seed,
                    substyle=substyle,
                )
                for seed in range(2)
            ]
            centroids.append(
                np.mean(
                    [
                        features(demo.synthesize(s, 3.0, ANALYSIS_RATE).mean(axis=0))[0]
                        for s in sounds
                    ]
                )
            )
        assert centroids[1] > 1.1 * centroids[0], (style.genre, centroids)
