"""Real audio files for tests: synthesised with numpy, encoded with PyAV, tagged with mutagen."""

from __future__ import annotations

import io
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
from PIL import Image

CODECS = {
    ".mp3": ("mp3", "libmp3lame"),
    ".flac": ("flac", "flac"),
    ".ogg": ("ogg", "libvorbis"),
    ".opus": ("ogg", "libopus"),
    ".m4a": ("mp4", "aac"),
    ".wav": ("wav", "pcm_s16le"),
}


def tone(seconds: float = 1.0, freq: float = 440.0, rate: int = 44100) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    mono = 0.3 * np.sin(2 * np.pi * freq * t)
    return np.stack([mono, mono]).astype(np.float32)


def encode(path: Path, seconds: float = 1.0, freq: float = 440.0) -> Path:
    """Write a real, decodable audio file whose format follows the extension."""
    path.parent.mkdir(parents=True, exist_ok=True)
    container_format, codec = CODECS[path.suffix.lower()]
    rate = 48000 if codec == "libopus" else 44100
    samples = tone(seconds, freq, rate)
    if codec == "libvorbis" and codec not in av.codecs_available:
        codec = "vorbis"
    with av.open(str(path), "w", format=container_format) as out:
        stream = out.add_stream(codec, rate=rate)
        stream.layout = "stereo"
        if codec == "vorbis":
            stream.codec_context.options = {"strict": "experimental"}
        fmt = stream.codec_context.format.name if stream.codec_context.format else "fltp"
        for start in range(0, samples.shape[1], 1024):
            chunk = samples[:, start : start + 1024]
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(chunk), format="fltp", layout="stereo"
            )
            frame.sample_rate = rate
            frame.pts = start
            frame.time_base = Fraction(1, rate)
            if fmt != "fltp":
                frame = av.AudioResampler(format=fmt, layout="stereo", rate=rate).resample(frame)[0]
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


def image_bytes(
    color: tuple[int, int, int] = (200, 40, 40), size: int = 300, fmt: str = "JPEG"
) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buffer, fmt)
    return buffer.getvalue()


def tag(path: Path, **fields: Any) -> Path:
    """Tag any supported file; fields: title, artist, album, albumartist, tracknumber, discnumber,
    date,
    genre (str or list), compilation, composer, lyrics, picture (bytes), mbid, explicit, isrc,
    rg_gain."""
    suffix = path.suffix.lower()
    if suffix == ".mp3":
        _tag_id3(path, fields)
    elif suffix == ".m4a":
        _tag_mp4(path, fields)
    else:
        _tag_vorbis(path, fields)
    return path


def _tag_id3(path: Path, f: dict[str, Any]) -> None:
    from mutagen import id3

    tags = id3.ID3()
    simple = {
        "title": id3.TIT2,
        "artist": id3.TPE1,
        "album": id3.TALB,
        "albumartist": id3.TPE2,
        "tracknumber": id3.TRCK,
        "discnumber": id3.TPOS,
        "date": id3.TDRC,
        "composer": id3.TCOM,
        "isrc": id3.TSRC,
    }
    for key, frame in simple.items():
        if key in f:
            tags.add(frame(encoding=3, text=[str(f[key])]))
    if "genre" in f:
        genres = f["genre"] if isinstance(f["genre"], list) else [f["genre"]]
        tags.add(id3.TCON(encoding=3, text=genres))
    if f.get("compilation"):
        tags.add(id3.TCMP(encoding=3, text=["1"]))
    if "lyrics" in f:
        tags.add(id3.USLT(encoding=3, lang="eng", desc="", text=f["lyrics"]))
    if "picture" in f:
        tags.add(id3.APIC(encoding=3, mime="image/jpeg", type=3, desc="cover", data=f["picture"]))
    if "mbid" in f:
        tags.add(id3.UFID(owner="http://musicbrainz.org", data=f["mbid"].encode()))
    if f.get("explicit"):
        tags.add(id3.TXXX(encoding=3, desc="ITUNESADVISORY", text=["1"]))
    if "rg_gain" in f:
        tags.add(
            id3.TXXX(encoding=3, desc="REPLAYGAIN_TRACK_GAIN", text=[f"{f['rg_gain']:+.2f} dB"])
        )
    tags.save(str(path), v2_version=4)


def _tag_vorbis(path: Path, f: dict[str, Any]) -> None:
    import base64

    import mutagen
    from mutagen.flac import Picture

    audio = mutagen.File(str(path))
    if audio.tags is None:
        audio.add_tags()
    for key in (
        "title",
        "artist",
        "album",
        "albumartist",
        "tracknumber",
        "discnumber",
        "date",
        "composer",
        "isrc",
    ):
        if key in f:
            audio[key] = [str(f[key])]
    if "genre" in f:
        audio["genre"] = f["genre"] if isinstance(f["genre"], list) else [f["genre"]]
    if f.get("compilation"):
        audio["compilation"] = ["1"]
    if "lyrics" in f:
        audio["lyrics"] = [f["lyrics"]]
    if "mbid" in f:
        audio["musicbrainz_trackid"] = [f["mbid"]]
    if f.get("explicit"):
        audio["itunesadvisory"] = ["1"]
    if "rg_gain" in f:
        audio["replaygain_track_gain"] = [f"{f['rg_gain']:+.2f} dB"]
    if "picture" in f:
        picture = Picture()
        picture.type, picture.mime, picture.data = 3, "image/jpeg", f["picture"]
        if path.suffix.lower() == ".flac":
            audio.add_picture(picture)
        else:
            audio["metadata_block_picture"] = [base64.b64encode(picture.write()).decode()]
    audio.save()


def _tag_mp4(path: Path, f: dict[str, Any]) -> None:
    from mutagen.mp4 import MP4, MP4Cover, MP4FreeForm

    audio = MP4(str(path))
    keys = {
        "title": "\xa9nam",
        "artist": "\xa9ART",
        "album": "\xa9alb",
        "albumartist": "aART",
        "date": "\xa9day",
        "composer": "\xa9wrt",
        "lyrics": "\xa9lyr",
    }
    for key, atom in keys.items():
        if key in f:
            audio[atom] = [str(f[key])]
    if "genre" in f:
        audio["\xa9gen"] = f["genre"] if isinstance(f["genre"], list) else [f["genre"]]
    if "tracknumber" in f:
        number, _, total = str(f["tracknumber"]).partition("/")
        audio["trkn"] = [(int(number), int(total or 0))]
    if f.get("compilation"):
        audio["cpil"] = True
    if f.get("explicit"):
        audio["rtng"] = [1]
    if "picture" in f:
        audio["covr"] = [MP4Cover(f["picture"], imageformat=MP4Cover.FORMAT_JPEG)]
    if "mbid" in f:
        audio["----:com.apple.iTunes:MusicBrainz Track Id"] = [MP4FreeForm(f["mbid"].encode())]
    audio.save()
