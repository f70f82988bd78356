"""How names are compared: merging keys, featuring credits, search keys, genre categories."""

from __future__ import annotations

import functools
import re

from anyascii import anyascii

_FEATURING = re.compile(r"\s*(?:[\(\[]\s*)?\b(?:feat\.?|ft\.?|featuring|with)\s+.*$", re.IGNORECASE)
_SEPARATORS = re.compile(r"\s*(?:;|\x00|\s/\s)\s*")
_NON_WORD = re.compile(r"[^a-z0-9]+")
_ARTICLE = re.compile(r"^the\s+")


@functools.lru_cache(maxsize=65536)
def search_key(text: str) -> str:
    """Lower-case ASCII words separated by single spaces: what search compares."""
    return _NON_WORD.sub(" ", anyascii(text).lower()).strip()


@functools.lru_cache(maxsize=65536)
def merge_key(text: str) -> str:
    """Two names with the same key are the same artist/album ('The Beatles' = 'beatles')."""
    key = _ARTICLE.sub("", search_key(text))
    if key:
        return key
    # names made only of symbols or non-Latin scripts anyascii cannot spell: keep them apart
    return text.strip().casefold() or "unknown"


@functools.lru_cache(maxsize=65536)
def main_artist(credit: str) -> str:
    """'A feat. B' -> 'A'; 'A; B' -> 'A'. The credit's first named artist."""
    first = _SEPARATORS.split(credit.strip(), maxsplit=1)[0]
    main = _FEATURING.sub("", first).strip()
    return main or credit.strip() or "Unknown Artist"


def sort_name(name: str) -> str:
    match = re.match(r"^(the|a|an)\s+(.*)$", name.strip(), re.IGNORECASE)
    return f"{match.group(2)}, {match.group(1)}" if match else name.strip()


_CATEGORIES: dict[str, tuple[str, ...]] = {
    "Rock": (
        "rock",
        "alternative",
        "indie",
        "punk",
        "grunge",
        "garage",
        "psychedelic",
        "shoegaze",
        "post rock",
        "britpop",
        "surf",
        "emo",
    ),
    "Metal": ("metal", "hardcore", "doom", "thrash", "grindcore"),
    "Pop": ("pop", "synthpop", "dance pop", "k pop", "j pop", "disco", "schlager"),
    "Electronic": (
        "electronic",
        "electronica",
        "techno",
        "house",
        "trance",
        "edm",
        "dubstep",
        "drum and bass",
        "dnb",
        "drum bass",
        "idm",
        "electro",
        "breakbeat",
        "synthwave",
        "downtempo",
        "trip hop",
        "chillout",
        "dance",
    ),
    "Hip-Hop": ("hip hop", "hiphop", "rap", "trap", "grime", "boom bap"),
    "R&B / Soul": ("r b", "rnb", "soul", "funk", "motown", "neo soul", "gospel"),
    "Jazz": (
        "jazz",
        "bebop",
        "swing",
        "fusion",
        "big band",
        "bossa nova",
        "smooth jazz",
        "cool jazz",
    ),
    "Blues": ("blues",),
    "Classical": (
        "classical",
        "baroque",
        "opera",
        "orchestral",
        "symphony",
        "chamber",
        "romantic",
        "choral",
        "minimalism",
        "contemporary classical",
    ),
    "Country & Folk": ("country", "folk", "bluegrass", "americana", "singer songwriter", "celtic"),
    "Reggae": ("reggae", "ska", "dub", "dancehall"),
    "Latin": ("latin", "salsa", "reggaeton", "tango", "bachata", "cumbia", "samba", "flamenco"),
    "World": ("world", "afrobeat", "african", "indian", "arabic", "afro"),
    "Ambient & New Age": (
        "ambient",
        "new age",
        "drone",
        "meditation",
        "relaxation",
        "lo fi",
        "lofi",
    ),
    "Soundtrack": ("soundtrack", "score", "film", "video game", "musical", "ost"),
    "Comedy & Spoken": ("comedy", "spoken", "audiobook", "podcast", "spoken word"),
    "Children's": ("children", "kids"),
}


def genre_category(genre: str) -> str:
    """The browsing category a genre name falls in ('Acid Jazz' -> 'Jazz'); 'Other' when unknown."""
    key = f" {search_key(genre)} "
    best, best_len = "Other", 0
    for category, words in _CATEGORIES.items():
        for word in words:
            if f" {word} " in key and len(word) > best_len:
                best, best_len = category, len(word)
    return best
