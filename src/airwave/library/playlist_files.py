"""Playlist files: M3U/M3U8 and XSPF, read into entries and written from tracks.

Reading never fails on one bad line: each entry keeps its line number, and what the file says
about it (a path or URL, a MusicBrainz id, artist, title, album, duration), so the caller can
match it against the catalogue and report, by line, what it could not match.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urlparse
from xml.etree.ElementTree import Element, SubElement, tostring

from defusedxml import ElementTree as SafeTree
from defusedxml.common import DefusedXmlException

FORMATS = ("m3u8", "xspf")
MAX_BYTES = 5 * 1024 * 1024
XSPF_NS = "http://xspf.org/ns/0/"


class PlaylistFileError(ValueError):
    """The file as a whole cannot be read (not this format, too large, not text)."""


@dataclass(frozen=True)
class Entry:
    line: int  # 1-based line of the entry (XSPF: its <track>'s position)
    location: str | None = None  # a path (absolute, or relative to the file) or a URL
    mbid: str | None = None
    artist: str | None = None
    title: str | None = None
    album: str | None = None
    seconds: float | None = None

    def describe(self) -> str:
        named = " - ".join(p for p in (self.artist, self.title) if p)
        return named or self.location or f"entry {self.line}"


@dataclass(frozen=True)
class Written:
    """One track as a playlist file shows it."""

    path: str | None
    artist: str
    title: str
    album: str
    seconds: float
    mbid: str | None


def detect(name: str, content: str) -> str:
    """The format of a file from its name, else from its first characters."""
    suffix = Path(name).suffix.lower()
    if suffix in (".m3u", ".m3u8"):
        return "m3u8"
    if suffix == ".xspf":
        return "xspf"
    return "xspf" if content.lstrip().startswith("<") else "m3u8"


def read(content: str, fmt: str) -> tuple[str | None, list[Entry]]:
    """(the playlist's own title if the file has one, its entries)."""
    if len(content.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise PlaylistFileError(f"a playlist file may be at most {MAX_BYTES // 1024 // 1024} MB")
    if fmt == "xspf":
        return _read_xspf(content)
    if fmt == "m3u8":
        return _read_m3u(content)
    raise PlaylistFileError(f"unknown playlist format {fmt!r}; formats: {', '.join(FORMATS)}")


def _read_m3u(content: str) -> tuple[str | None, list[Entry]]:
    entries: list[Entry] = []
    title: str | None = None
    info: tuple[float | None, str | None, str | None] | None = None
    for number, raw in enumerate(content.lstrip("\ufeff").splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#EXTINF:"):
            seconds_text, _, label = line[len("#EXTINF:") :].partition(",")
            seconds_text = seconds_text.split()[0] if seconds_text.split() else ""
            try:
                seconds: float | None = float(seconds_text)
            except ValueError:
                seconds = None
            artist, sep, song = label.partition(" - ")
            info = (
                seconds if seconds is not None and seconds >= 0 else None,
                artist.strip() if sep else None,
                (song if sep else label).strip() or None,
            )
            continue
        if line.startswith("#PLAYLIST:"):
            title = line[len("#PLAYLIST:") :].strip() or None
            continue
        if line.startswith("#"):
            continue
        seconds, artist, name = info or (None, None, None)
        entries.append(Entry(number, location=line, artist=artist, title=name, seconds=seconds))
        info = None
    return title, entries


def _text(element: Element, tag: str) -> str | None:
    found = element.find(f"{{{XSPF_NS}}}{tag}")
    if found is None:
        found = element.find(tag)
    text = (found.text or "").strip() if found is not None else ""
    return text or None


def _read_xspf(content: str) -> tuple[str | None, list[Entry]]:
    try:
        root = SafeTree.fromstring(content)
    except (SafeTree.ParseError, DefusedXmlException) as exc:
        raise PlaylistFileError(f"not a readable XSPF file: {exc}") from None
    if root.tag.rpartition("}")[2] != "playlist":
        raise PlaylistFileError("not an XSPF file: its root element is not <playlist>")
    tracks = root.findall(f".//{{{XSPF_NS}}}track") or root.findall(".//track")
    entries = []
    for number, track in enumerate(tracks, start=1):
        mbid = None
        for element in list(track):
            if element.tag.rpartition("}")[2] == "identifier" and element.text:
                value = element.text.strip()
                if "musicbrainz.org/recording/" in value or _looks_like_mbid(value):
                    mbid = value.rstrip("/").rpartition("/")[2]
        duration = _text(track, "duration")
        seconds = float(duration) / 1000 if duration and duration.isdigit() else None
        entries.append(
            Entry(
                number,
                location=_text(track, "location"),
                mbid=mbid,
                artist=_text(track, "creator"),
                title=_text(track, "title"),
                album=_text(track, "album"),
                seconds=seconds,
            )
        )
    return _text(root, "title"), entries


def _looks_like_mbid(value: str) -> bool:
    parts = value.split("-")
    return [len(p) for p in parts] == [8, 4, 4, 4, 12] and all(
        c in "0123456789abcdefABCDEF" for p in parts for c in p
    )


def local_path(location: str, base: Path | None) -> str | None:
    """The absolute file path a location names (file:// URLs too), or None for other URLs."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return os.path.normpath(unquote(parsed.path))
    if parsed.scheme and len(parsed.scheme) > 1:  # http:, https:, ... (not a drive letter)
        return None
    path = Path(location.replace("\\", "/"))
    if not path.is_absolute():
        if base is None:
            return None
        path = base / path
    return os.path.normpath(path)


def write(fmt: str, title: str, tracks: Sequence[Written], base: Path | None = None) -> str:
    """A playlist file of these tracks; paths relative to `base` when given (M3U8)."""
    if fmt == "m3u8":
        lines = ["#EXTM3U", f"#PLAYLIST:{title}"]
        for t in tracks:
            lines.append(f"#EXTINF:{round(t.seconds)},{t.artist} - {t.title}")
            path = t.path or ""
            if base is not None and path:
                path = os.path.relpath(path, base)
            lines.append(path)
        return "\n".join(lines) + "\n"
    if fmt == "xspf":
        root = Element("playlist", {"version": "1", "xmlns": XSPF_NS})
        SubElement(root, "title").text = title
        listed = SubElement(root, "trackList")
        for t in tracks:
            track = SubElement(listed, "track")
            if t.path:
                SubElement(track, "location").text = "file://" + quote(t.path)
            if t.mbid:
                SubElement(track, "identifier").text = f"https://musicbrainz.org/recording/{t.mbid}"
            SubElement(track, "title").text = t.title
            SubElement(track, "creator").text = t.artist
            SubElement(track, "album").text = t.album
            SubElement(track, "duration").text = str(round(t.seconds * 1000))
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(root, encoding="unicode")
    raise PlaylistFileError(f"unknown playlist format {fmt!r}; formats: {', '.join(FORMATS)}")
