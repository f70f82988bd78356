"""Tag reading with mutagen: any supported file -> one format-neutral TrackTags record."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from airwave.library.containment import (
    AUDIO_MAX_BYTES,
    IMAGE_MAX_BYTES,
    LYRICS_MAX_BYTES,
    Refused,
    Roots,
    open_file,
    read_bytes,
)

AUDIO_EXTENSIONS = frozenset(
    {
        ".mp3",
        ".flac",
        ".ogg",
        ".oga",
        ".opus",
        ".m4a",
        ".m4b",
        ".mp4",
        ".aac",
        ".wav",
        ".aif",
        ".aiff",
        ".wv",
    }
)
HASH_SPAN = 64 * 1024


@dataclass
class EmbeddedPicture:
    """An embedded picture, described without carrying its bytes."""

    content_hash: str
    width: int
    height: int
    dominant_color: str


@dataclass
class TrackTags:
    path: str
    size: int
    mtime_ns: int
    quick_hash: str
    title: str
    artist: str
    album: str
    album_artist: str | None = None
    track_no: int | None = None
    disc_no: int | None = None
    year: int | None = None
    genres: list[str] = field(default_factory=list)
    compilation: bool = False
    composer: str | None = None
    explicit: bool = False
    rg_track_gain: float | None = None
    rg_track_peak: float | None = None
    rg_album_gain: float | None = None
    mbid_track: str | None = None
    mbid_album: str | None = None
    mbid_artist: str | None = None
    isrc: str | None = None
    lyrics: str | None = None
    lyrics_source: str | None = None
    duration: float = 0.0
    bitrate: int = 0
    sample_rate: int = 0
    channels: int = 0
    codec: str = "unknown"
    picture: EmbeddedPicture | None = None
    folder_cover: EmbeddedPicture | None = None  # the folder's cover image, described by the worker


@dataclass
class ReadError:
    path: str
    size: int
    mtime_ns: int
    message: str


def quick_hash(path: str, size: int, roots: Roots) -> str:
    """Identity of a file's content from its size, head and tail (where tags live)."""
    with open_file(path, roots, AUDIO_MAX_BYTES) as handle:
        return _hash_handle(handle, size)


def _hash_handle(handle: BinaryIO, size: int) -> str:
    digest = hashlib.sha1(str(size).encode())
    handle.seek(0)
    digest.update(handle.read(HASH_SPAN))
    if size > 2 * HASH_SPAN:
        handle.seek(size - HASH_SPAN)
        digest.update(handle.read(HASH_SPAN))
    return digest.hexdigest()


def read(path: str, sidecar_lyrics: str | None, roots: Roots) -> TrackTags | ReadError:
    """Everything the catalogue needs from one file; a ReadError instead of raising.

    The file (and its lyrics sidecar) is read only when it really lies inside one of the roots.
    """
    try:
        handle = open_file(path, roots, AUDIO_MAX_BYTES)
    except Refused as exc:
        return ReadError(path, 0, 0, str(exc))
    except OSError as exc:
        return ReadError(path, 0, 0, f"cannot open: {exc.strerror or exc}")
    with handle:
        stat = os.fstat(handle.fileno())
        if stat.st_size == 0:
            return ReadError(path, 0, stat.st_mtime_ns, "empty file")
        try:
            audio = _open(path, handle)
        except Exception as exc:  # mutagen raises many types for damaged files
            return ReadError(
                path,
                stat.st_size,
                stat.st_mtime_ns,
                f"unreadable: {type(exc).__name__}: {exc}"[:500],
            )
        if audio is None or getattr(audio, "info", None) is None:
            return ReadError(path, stat.st_size, stat.st_mtime_ns, "not a recognised audio file")
        try:
            tags = _normalise(audio)
            lyrics = _lyrics(sidecar_lyrics, roots)
            return _build(path, stat, audio, tags, lyrics, _hash_handle(handle, stat.st_size))
        except Exception as exc:
            return ReadError(
                path, stat.st_size, stat.st_mtime_ns, f"bad tags: {type(exc).__name__}: {exc}"[:500]
            )


_MPEG_STARTS = (b"ID3", b"\xff\xf2", b"\xff\xf3", b"\xff\xfa", b"\xff\xfb")


def _open(path: str, handle: BinaryIO) -> Any:
    """The file read by mutagen's class for it. `mutagen.File` scores two dozen formats on the
    file's name and first 128 bytes and takes the best; for the common cases below (the
    extension and the head agree) that is known without asking them all, a third of the tag
    reading's time. Anything else, a misnamed file included, goes through `mutagen.File`.

    mutagen is imported on the first read: a rescan that finds nothing changed reads no tags and
    saves loading it (~12 ms of every `airwave scan`)."""
    import mutagen
    from mutagen.flac import FLAC
    from mutagen.mp3 import MP3
    from mutagen.oggvorbis import OggVorbis

    head = handle.read(128)
    handle.seek(0)
    ext = os.path.splitext(path)[1].lower()  # path: a str, or a Path from some callers
    # each the best score mutagen.File would find: no other format scores as high on such a head
    if ext == ".mp3" and head.startswith(_MPEG_STARTS):
        return MP3(handle)
    if ext == ".flac" and head.startswith(b"fLaC"):
        return FLAC(handle)
    if ext in (".ogg", ".oga") and head.startswith(b"OggS") and b"\x01vorbis" in head:
        return OggVorbis(handle)
    return mutagen.File(handle)


def _lyrics(sidecar: str | None, roots: Roots) -> tuple[str, str] | None:
    """A sidecar's text and kind ('lrc', 'txt'); None when absent, empty or refused."""
    if not sidecar:
        return None
    try:
        data = read_bytes(sidecar, roots, LYRICS_MAX_BYTES)
        text = data.decode("utf-8", errors="replace").strip()
    except OSError:
        return None
    return (text, Path(sidecar).suffix.lstrip(".").lower()) if text else None


# ---------------------------------------------------------------- container -> {key: [values]}

_ID3 = {
    "TIT2": "title",
    "TPE1": "artist",
    "TPE2": "albumartist",
    "TALB": "album",
    "TRCK": "tracknumber",
    "TPOS": "discnumber",
    "TDRC": "date",
    "TYER": "date",
    "TDOR": "originaldate",
    "TCMP": "compilation",
    "TCOM": "composer",
    "TSRC": "isrc",
}
_MP4 = {
    "\xa9nam": "title",
    "\xa9ART": "artist",
    "aART": "albumartist",
    "\xa9alb": "album",
    "\xa9day": "date",
    "\xa9gen": "genre",
    "\xa9wrt": "composer",
    "\xa9lyr": "lyrics",
}


def _normalise(audio: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    tags = audio.tags
    if tags is None:
        return out

    def add(key: str, values: Any) -> None:
        if not isinstance(values, list):
            values = [values]
        out.setdefault(key.lower(), []).extend(v for v in values if v not in (None, ""))

    kind = type(tags).__name__
    if kind == "ID3" or hasattr(tags, "getall"):
        for frame in tags.values():
            fid = frame.FrameID
            if fid in _ID3:
                add(_ID3[fid], [str(t) for t in frame.text])
            elif fid == "TCON":
                add("genre", list(frame.genres))
            elif fid == "TXXX":
                add(frame.desc, [str(t) for t in frame.text])
            elif fid == "UFID" and frame.owner == "http://musicbrainz.org":
                add("musicbrainz_trackid", frame.data.decode("ascii", "replace"))
            elif fid == "USLT":
                add("lyrics", frame.text)
            elif fid == "APIC":
                add("__picture", frame.data)
    elif kind == "MP4Tags":
        for key, values in tags.items():
            if key in _MP4:
                add(_MP4[key], [str(v) for v in values])
            elif key == "trkn" and values:
                add("tracknumber", f"{values[0][0]}/{values[0][1]}")
            elif key == "disk" and values:
                add("discnumber", f"{values[0][0]}/{values[0][1]}")
            elif key == "cpil":
                add("compilation", "1" if values else "0")
            elif key == "rtng" and values:
                add("itunesadvisory", str(values[0]))
            elif key == "covr":
                add("__picture", [bytes(v) for v in values])
            elif key.startswith("----:"):
                add(key.rsplit(":", 1)[-1], [bytes(v).decode("utf-8", "replace") for v in values])
    else:  # Vorbis comments (FLAC, Ogg Vorbis/Opus), APEv2
        for key, value in tags.items() if hasattr(tags, "items") else []:
            values = value if isinstance(value, list) else [value]
            key_l = key.lower()
            if key_l == "metadata_block_picture":
                from mutagen.flac import Picture

                for encoded in values:
                    add("__picture", Picture(base64.b64decode(str(encoded))).data)
            else:
                add(key_l, [str(v) for v in values])
        if getattr(audio, "pictures", None):
            add("__picture", [p.data for p in audio.pictures])
    return out


# ---------------------------------------------------------------- {key: [values]} -> TrackTags

_NUMBER = re.compile(r"^\s*(\d+)")
_YEAR = re.compile(r"(1[0-9]{3}|20[0-9]{2})")
_LEADING_NUMBER = re.compile(r"^\s*(?:\d{1,2}[-.]\s*)?\d{1,3}\s*(?:[-._)]\s*|\s+)")
_DISC_TRACK = re.compile(r"^\s*(?:\d{1,2}[-.])?(\d{1,3})")
_ALBUM_YEAR = re.compile(r"^(.*?)\s*[\(\[](\d{4})[\)\]]\s*$")
_GENRE_SPLIT = re.compile(r"\s*;\s*|\s*\x00\s*")


def _first(tags: dict[str, list[Any]], *keys: str) -> str | None:
    for key in keys:
        for value in tags.get(key, []):
            text = str(value).strip()
            if text:
                return text
    return None


def _int(value: str | None) -> int | None:
    match = _NUMBER.match(value or "")
    return int(match.group(1)) if match and int(match.group(1)) < 100000 else None


def _gain(value: str | None) -> float | None:
    if not value:
        return None
    match = re.match(r"^\s*([+-]?\d+(?:\.\d+)?)", value)
    return float(match.group(1)) if match else None


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "explicit", "4")


def _from_path(path: str) -> tuple[str, str, str, int | None, int | None]:
    """Title, album, artist, track number and year from 'Artist/Album (Year)/NN Title.ext'."""
    p = Path(path)
    stem = p.stem
    numbered = _DISC_TRACK.match(stem) if _LEADING_NUMBER.match(stem) else None
    number = int(numbered.group(1)) if numbered else None
    title = _LEADING_NUMBER.sub("", stem, count=1).strip() or stem
    album_dir = p.parent.name
    year = None
    if match := _ALBUM_YEAR.match(album_dir):
        album_dir, year = match.group(1), int(match.group(2))
    artist_dir = p.parent.parent.name if p.parent.parent != p.parent else ""
    return title, album_dir or "Unknown Album", artist_dir or "Unknown Artist", number, year


def _picture(data: bytes) -> EmbeddedPicture | None:
    from PIL import Image

    try:
        image = Image.open(io.BytesIO(data))
        width, height = image.size
        image.draft("RGB", (64, 64))  # JPEG: decode at reduced scale, fast
        small = image.convert("RGB").resize((16, 16))
    except Exception:
        return None
    return EmbeddedPicture(hashlib.sha1(data).hexdigest(), width, height, dominant_color(small))


def describe_image(path: str, roots: Roots) -> EmbeddedPicture | None:
    """Hash, size and dominant colour of an image file (None if not a readable library image)."""
    try:
        return _picture(read_bytes(path, roots, IMAGE_MAX_BYTES))
    except OSError:
        return None


def dominant_color(image: Any) -> str:
    """The most common colour of an already small RGB image, as 6 hex digits (ignores
    near-greys)."""
    colours = image.quantize(colors=5, method=2).convert("RGB").getcolors(256) or []
    colours.sort(reverse=True)
    for _count, (r, g, b) in colours:
        if max(r, g, b) - min(r, g, b) > 24:
            return f"{r:02x}{g:02x}{b:02x}"
    r, g, b = colours[0][1] if colours else (128, 128, 128)
    return f"{r:02x}{g:02x}{b:02x}"


def _codec(audio: Any) -> str:
    name = type(audio).__name__
    if name == "MP4":
        codec = getattr(audio.info, "codec", "") or ""
        return "alac" if codec.startswith("alac") else "aac"
    return {
        "MP3": "mp3",
        "EasyMP3": "mp3",
        "FLAC": "flac",
        "OggVorbis": "vorbis",
        "OggOpus": "opus",
        "OggFLAC": "flac",
        "WAVE": "pcm",
        "AIFF": "pcm",
        "WavPack": "wavpack",
        "AAC": "aac",
    }.get(name, name.lower()[:16])


def _build(
    path: str,
    stat: os.stat_result,
    audio: Any,
    tags: dict[str, list[Any]],
    sidecar_lyrics: tuple[str, str] | None,
    content_hash: str,
) -> TrackTags:
    path_title, path_album, path_artist, path_number, path_year = _from_path(path)
    artist = _first(tags, "artist", "artists") or _first(tags, "albumartist") or path_artist
    genres: list[str] = []
    for value in tags.get("genre", []):
        for name in _GENRE_SPLIT.split(str(value)):
            if name.strip() and name.strip() not in genres:
                genres.append(name.strip()[:128])
    year_text = _first(tags, "date", "year", "originaldate")
    year_match = _YEAR.search(year_text or "")
    lyrics, source = None, None
    embedded = _first(tags, "lyrics", "unsyncedlyrics", "unsynced lyrics")
    if embedded:
        lyrics, source = embedded, "embedded"
    elif sidecar_lyrics:
        lyrics, source = sidecar_lyrics
    picture = None
    for data in tags.get("__picture", []):
        picture = _picture(data)
        if picture:
            break
    info = audio.info
    codec = _codec(audio)
    duration = float(getattr(info, "length", 0.0) or 0.0)
    bitrate = int(getattr(info, "bitrate", 0) or 0)
    if not bitrate and duration > 0:  # e.g. Vorbis files without a nominal bitrate
        bitrate = int(stat.st_size * 8 / duration)
    sample_rate = int(getattr(info, "sample_rate", 0) or 0) or (48000 if codec == "opus" else 0)
    isrc = _first(tags, "isrc")
    return TrackTags(
        path=path,
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        quick_hash=content_hash,
        title=(_first(tags, "title") or path_title)[:512],
        artist=artist[:512],
        album=(_first(tags, "album") or path_album)[:512],
        album_artist=(_first(tags, "albumartist", "album artist", "album_artist") or None),
        track_no=_int(_first(tags, "tracknumber", "track")) or path_number,
        disc_no=_int(_first(tags, "discnumber", "disc")),
        year=int(year_match.group(1)) if year_match else path_year,
        genres=genres,
        compilation=_truthy(_first(tags, "compilation", "itunescompilation")),
        composer=(_first(tags, "composer") or None),
        explicit=_truthy(_first(tags, "itunesadvisory", "explicit")),
        rg_track_gain=_gain(_first(tags, "replaygain_track_gain")),
        rg_track_peak=_gain(_first(tags, "replaygain_track_peak")),
        rg_album_gain=_gain(_first(tags, "replaygain_album_gain")),
        mbid_track=(
            _first(
                tags, "musicbrainz_trackid", "musicbrainz track id", "musicbrainz_releasetrackid"
            )
            or ""
        )[:36]
        or None,
        mbid_album=(_first(tags, "musicbrainz_albumid", "musicbrainz album id") or "")[:36] or None,
        mbid_artist=(_first(tags, "musicbrainz_artistid", "musicbrainz artist id") or "")[:36]
        or None,
        isrc=isrc[:16] if isrc else None,
        lyrics=lyrics,
        lyrics_source=source,
        duration=duration,
        bitrate=bitrate,
        sample_rate=sample_rate,
        channels=int(getattr(info, "channels", 0) or 0),
        codec=codec,
        picture=picture,
    )
