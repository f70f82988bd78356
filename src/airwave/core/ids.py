"""Identifiers of spec §6.1, built and parsed in this one module."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from anyascii import anyascii

Kind = Literal["artist", "album", "track", "genre", "station", "playlist", "ad"]

_MUSIC_LETTER: dict[str, Kind] = {"R": "artist", "L": "album", "S": "track", "G": "genre"}
_LETTER_OF = {kind: letter for letter, kind in _MUSIC_LETTER.items()}
_PANDORA_PREFIX: dict[str, Kind] = {
    "AR": "artist",
    "AL": "album",
    "TR": "track",
    "GE": "genre",
    "PL": "playlist",
    "AD": "ad",
}
_PREFIX_OF = {kind: prefix for prefix, kind in _PANDORA_PREFIX.items()}
_MUSIC_ID = re.compile(r"^([RLSG])(\d{1,18})$")
_PANDORA_ID = re.compile(r"^(AR|AL|TR|GE|PL|AD):(\d{1,18})$")
_STATION_ID = re.compile(r"^ST:0:(\d{1,18})$")
_SEO_TOKEN = re.compile(r"^(?:[a-z0-9-]{0,200}/){1,3}(AR|AL|TR)(\d{1,18})$")
# an issued ad as a Subsonic song: its adToken (urlsafe, 20+ characters, so never a campaign's
# AD:n)
_AD_TOKEN_ID = re.compile(r"^AD:([A-Za-z0-9_-]{20,32})$")


MAX_ID = 2**31 - 1  # row ids are 32-bit integers on every backend


@dataclass(frozen=True)
class Ref:
    """A parsed reference to one object."""

    kind: Kind
    id: int


def music_id(kind: Kind, id: int) -> str:
    return f"{_LETTER_OF[kind]}{id}"


def pandora_id(kind: Kind, id: int) -> str:
    if kind == "station":
        return f"ST:0:{id}"
    return f"{_PREFIX_OF[kind]}:{id}"


@functools.lru_cache(maxsize=16384)  # names repeat: an artist's on every track of a page
def slug(text: str) -> str:
    """URL-safe lower-case ASCII words joined by '-' ('Björk & Co.' -> 'bjork-co')."""
    words = re.findall(r"[a-z0-9]+", anyascii(text).lower())
    return "-".join(words)[:80] or "untitled"


def seo_token(kind: Kind, id: int, *names: str) -> str:
    """'artist-slug/AR1', 'artist/album/AL2', 'artist/album/track/TR3'."""
    return "/".join([*(slug(n) for n in names), f"{_PREFIX_OF[kind]}{id}"])


def parse(value: str) -> Ref | None:
    """A musicId, pandoraId or seoToken; None when it is none of them (or names no possible row)."""
    ref = _parse(value.strip())
    return ref if ref is None or 0 < ref.id <= MAX_ID else None


def parse_number(value: str) -> int | None:
    """A bare row id such as a stationId ('42')."""
    return int(value) if value.isascii() and value.isdigit() and 0 < int(value) <= MAX_ID else None


def _parse(value: str) -> Ref | None:
    if m := _MUSIC_ID.match(value):
        return Ref(_MUSIC_LETTER[m.group(1)], int(m.group(2)))
    if m := _PANDORA_ID.match(value):
        return Ref(_PANDORA_PREFIX[m.group(1)], int(m.group(2)))
    if m := _STATION_ID.match(value):
        return Ref("station", int(m.group(1)))
    if m := _SEO_TOKEN.match(value):
        return Ref(_PANDORA_PREFIX[m.group(1)], int(m.group(2)))
    return None


def ad_token_id(token: str) -> str:
    """The Subsonic song id of one issued ad: 'AD:' and its adToken."""
    return f"AD:{token}"


def parse_ad_token_id(value: str) -> str | None:
    """The adToken an ad's song id carries; None when the value is not one (a campaign's AD:n
    included)."""
    m = _AD_TOKEN_ID.match(value.strip())
    return m.group(1) if m else None


def parse_station_code(code: str) -> Ref | None:
    """createStation's stationCode: 'mi' or 'mc' followed by a musicId."""
    if len(code) > 2 and code[:2] in ("mi", "mc"):
        ref = parse(code[2:])
        if ref is not None and _MUSIC_ID.match(code[2:]):
            return ref
    return None
