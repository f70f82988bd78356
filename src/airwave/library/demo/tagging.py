"""Tags, lyrics, ReplayGain and embedded art, written in each container's own dialect."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TagValues:
    """The tags written into one file."""

    title: str
    artist: str
    album: str
    albumartist: str
    track: int
    tracks: int
    disc: int
    discs: int
    year: int
    genres: tuple[str, ...]
    composer: str | None
    compilation: bool
    mb_track: str
    mb_album: str
    mb_artist: str
    mb_albumartist: str
    isrc: str | None
    explicit: bool


def _gain_text(gain: float) -> str:
    return f"{gain:+.2f} dB"


def write_tags(
    path: Path,
    fmt: str,
    tags: TagValues,
    art: bytes | None,
    lyrics: str | None,
    gain: tuple[float, float] | None,
) -> None:
    """Tags in each container's own dialect (ID3v2.4, Vorbis comments, iTunes atoms)."""
    if fmt == "mp3":
        _tag_id3(path, tags, art, lyrics, gain)
    elif fmt == "m4a":
        _tag_mp4(path, tags, art, lyrics, gain)
    else:
        _tag_vorbis(path, fmt, tags, art, lyrics, gain)


def _tag_id3(
    path: Path,
    tags: TagValues,
    art: bytes | None,
    lyrics: str | None,
    gain: tuple[float, float] | None,
) -> None:
    from mutagen import id3
    from mutagen.mp3 import MP3

    audio = MP3(path)
    if audio.tags is None:
        audio.add_tags()
    frames = audio.tags
    frames.clear()
    text = {
        "TIT2": tags.title,
        "TPE1": tags.artist,
        "TALB": tags.album,
        "TPE2": tags.albumartist,
        "TRCK": f"{tags.track}/{tags.tracks}",
        "TPOS": f"{tags.disc}/{tags.discs}",
        "TDRC": str(tags.year),
    }
    for frame_id, value in text.items():
        frames.add(getattr(id3, frame_id)(encoding=3, text=[value]))
    frames.add(id3.TCON(encoding=3, text=list(tags.genres)))
    if tags.composer:
        frames.add(id3.TCOM(encoding=3, text=[tags.composer]))
    if tags.compilation:
        frames.add(id3.TCMP(encoding=3, text=["1"]))
    if tags.isrc:
        frames.add(id3.TSRC(encoding=3, text=[tags.isrc]))
    frames.add(id3.UFID(owner="http://musicbrainz.org", data=tags.mb_track.encode()))
    extra = {
        "MusicBrainz Album Id": tags.mb_album,
        "MusicBrainz Artist Id": tags.mb_artist,
        "MusicBrainz Album Artist Id": tags.mb_albumartist,
    }
    if gain:
        extra |= {
            "REPLAYGAIN_TRACK_GAIN": _gain_text(gain[0]),
            "REPLAYGAIN_TRACK_PEAK": f"{gain[1]:.6f}",
        }
    if tags.explicit:
        extra["ITUNESADVISORY"] = "1"
    for desc, value in extra.items():
        frames.add(id3.TXXX(encoding=3, desc=desc, text=[value]))
    if lyrics:
        frames.add(id3.USLT(encoding=3, lang="eng", desc="", text=lyrics))
    if art:
        frames.add(id3.APIC(encoding=3, mime="image/jpeg", type=3, desc="Cover", data=art))
    audio.save(v2_version=4)


def _tag_mp4(
    path: Path,
    tags: TagValues,
    art: bytes | None,
    lyrics: str | None,
    gain: tuple[float, float] | None,
) -> None:
    from mutagen.mp4 import MP4, MP4Cover, MP4FreeForm

    audio = MP4(path)
    if audio.tags is None:
        audio.add_tags()
    atoms = audio.tags
    for key in list(atoms.keys()):
        del atoms[key]
    atoms.update(
        {
            "\xa9nam": [tags.title],
            "\xa9ART": [tags.artist],
            "\xa9alb": [tags.album],
            "aART": [tags.albumartist],
            "trkn": [(tags.track, tags.tracks)],
            "disk": [(tags.disc, tags.discs)],
            "\xa9day": [str(tags.year)],
            "\xa9gen": list(tags.genres),
        }
    )
    if tags.composer:
        atoms["\xa9wrt"] = [tags.composer]
    if tags.compilation:
        atoms["cpil"] = True
    if tags.explicit:
        atoms["rtng"] = [1]
    if lyrics:
        atoms["\xa9lyr"] = [lyrics]
    if art:
        atoms["covr"] = [MP4Cover(art, imageformat=MP4Cover.FORMAT_JPEG)]
    free = {
        "MusicBrainz Track Id": tags.mb_track,
        "MusicBrainz Album Id": tags.mb_album,
        "MusicBrainz Artist Id": tags.mb_artist,
        "MusicBrainz Album Artist Id": tags.mb_albumartist,
    }
    if tags.isrc:
        free["ISRC"] = tags.isrc
    if gain:
        free |= {
            "replaygain_track_gain": _gain_text(gain[0]),
            "replaygain_track_peak": f"{gain[1]:.6f}",
        }
    for name, value in free.items():
        atoms[f"----:com.apple.iTunes:{name}"] = [MP4FreeForm(value.encode())]
    audio.save()


def _tag_vorbis(
    path: Path,
    fmt: str,
    tags: TagValues,
    art: bytes | None,
    lyrics: str | None,
    gain: tuple[float, float] | None,
) -> None:
    from mutagen.flac import FLAC, Picture
    from mutagen.oggopus import OggOpus
    from mutagen.oggvorbis import OggVorbis

    audio = {"flac": FLAC, "ogg": OggVorbis, "opus": OggOpus}[fmt](path)
    if audio.tags is None:
        audio.add_tags()
    comments = audio.tags
    for key in list(comments.keys()):
        del comments[key]
    fields: dict[str, list[str]] = {
        "TITLE": [tags.title],
        "ARTIST": [tags.artist],
        "ALBUM": [tags.album],
        "ALBUMARTIST": [tags.albumartist],
        "TRACKNUMBER": [str(tags.track)],
        "TRACKTOTAL": [str(tags.tracks)],
        "DISCNUMBER": [str(tags.disc)],
        "DISCTOTAL": [str(tags.discs)],
        "DATE": [str(tags.year)],
        "GENRE": list(tags.genres),
        "MUSICBRAINZ_TRACKID": [tags.mb_track],
        "MUSICBRAINZ_ALBUMID": [tags.mb_album],
        "MUSICBRAINZ_ARTISTID": [tags.mb_artist],
        "MUSICBRAINZ_ALBUMARTISTID": [tags.mb_albumartist],
    }
    if tags.composer:
        fields["COMPOSER"] = [tags.composer]
    if tags.compilation:
        fields["COMPILATION"] = ["1"]
    if tags.isrc:
        fields["ISRC"] = [tags.isrc]
    if tags.explicit:
        fields["ITUNESADVISORY"] = ["1"]
    if lyrics:
        fields["LYRICS"] = [lyrics]
    if gain:
        fields["REPLAYGAIN_TRACK_GAIN"] = [_gain_text(gain[0])]
        fields["REPLAYGAIN_TRACK_PEAK"] = [f"{gain[1]:.6f}"]
        if fmt == "opus":  # RFC 7845: Q7.8 dB relative to -23 LUFS
            fields["R128_TRACK_GAIN"] = [str(round((gain[0] - 5.0) * 256))]
    for key, values in fields.items():
        comments[key] = values
    if art:
        picture = Picture()
        picture.type, picture.mime, picture.desc, picture.data = 3, "image/jpeg", "Cover", art
        from PIL import Image as PILImage

        with PILImage.open(io.BytesIO(art)) as image:
            picture.width, picture.height = image.size
        picture.depth = 24
        if fmt == "flac":
            audio.clear_pictures()
            audio.add_picture(picture)
        else:
            comments["METADATA_BLOCK_PICTURE"] = [base64.b64encode(picture.write()).decode("ascii")]
    audio.save()
