"""The audio encodings of spec §8: what each delivers, how it is made, and which one a request
gets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from airwave.errors import ApiError, ErrorCode

ENCODINGS: tuple[str, ...] = ("original", "mp3", "mp3-hifi", "aacplus", "opus")
DEFAULT_ENCODING = "aacplus"


@dataclass(frozen=True)
class Profile:
    """How one transcoded encoding is produced (PyAV encoder and muxer) and served."""

    encoding: str
    codec: str  # PyAV encoder name
    container: str  # PyAV muxer name
    bitrate: int  # bits per second
    extension: str
    content_type: str
    rates: tuple[
        int, ...
    ]  # output sample rates the format takes; others are resampled to the closest


# aacplus is AAC-LC (FFmpeg's native encoder has no HE-AAC/SBR) in ADTS: a plain sequence of
# self-delimiting frames that <audio> elements and mobile players play progressively while it is
# written.
PROFILES: dict[str, Profile] = {
    "mp3": Profile("mp3", "libmp3lame", "mp3", 128_000, "mp3", "audio/mpeg", (44100, 48000, 32000)),
    "mp3-hifi": Profile(
        "mp3-hifi", "libmp3lame", "mp3", 320_000, "mp3", "audio/mpeg", (44100, 48000, 32000)
    ),
    "aacplus": Profile(
        "aacplus",
        "aac",
        "adts",
        64_000,
        "aac",
        "audio/aac",
        (44100, 48000, 32000, 24000, 22050, 16000),
    ),
    "opus": Profile("opus", "libopus", "ogg", 96_000, "opus", "audio/ogg", (48000,)),
}

_ORIGINAL_TYPES = {
    ".mp3": "audio/mpeg",
    ".flac": "audio/flac",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".opus": "audio/ogg",
    ".m4a": "audio/mp4",
    ".m4b": "audio/mp4",
    ".mp4": "audio/mp4",
    ".aac": "audio/aac",
    ".wav": "audio/wav",
    ".aif": "audio/aiff",
    ".aiff": "audio/aiff",
    ".wv": "audio/wavpack",
    ".wma": "audio/x-ms-wma",
}
_CODEC_TYPES = {
    "mp3": "audio/mpeg",
    "flac": "audio/flac",
    "vorbis": "audio/ogg",
    "opus": "audio/ogg",
    "aac": "audio/mp4",
    "alac": "audio/mp4",
    "pcm": "audio/wav",
    "wavpack": "audio/wavpack",
}


def negotiate(requested: str | None, *, high_quality: bool, source_codec: str) -> str:
    """The encoding a request will really get: aacplus by default, mp3 instead of mp3-hifi without
    high quality.

    `original` is the stored file whatever its codec (`source_codec` only decides its Content-Type
    when served).
    """
    encoding = requested or DEFAULT_ENCODING
    if encoding not in ENCODINGS:
        raise ApiError(
            ErrorCode.INVALID_REQUEST, f"audioFormat must be one of {', '.join(ENCODINGS)}"
        )
    if encoding == "mp3-hifi" and not high_quality:
        return "mp3"
    return encoding


def original_content_type(path: str, codec: str = "") -> str:
    """Content-Type of a stored file: by its extension, else by its codec."""
    suffix = PurePath(path).suffix.lower()
    return _ORIGINAL_TYPES.get(suffix) or _CODEC_TYPES.get(codec, "application/octet-stream")


def encoding_index(encoding: str) -> int:
    """The encoding's number inside signed tokens."""
    return ENCODINGS.index(encoding)
