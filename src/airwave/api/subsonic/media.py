"""Bytes: stream and download (the signed /audio/ route and its transcoding cache), getCoverArt
(the /art/ route)."""

from __future__ import annotations

from starlette.types import ASGIApp

from airwave.api.subsonic.dispatch import SubsonicCall, handing_over, method
from airwave.api.subsonic.envelope import NOT_FOUND, SubsonicError
from airwave.core.catalog import art, browse, catalog
from airwave.core.radio import apps, delivery

DEFAULT_ART_SIZE = 640


def _audio(s: SubsonicCall, token: str) -> ASGIApp:
    return handing_over(s.routes.audio, f"/audio/{token}")


@method("stream")
def stream(s: SubsonicCall) -> ASGIApp:
    """The track as stored, or transcoded when `format` or `maxBitRate` asks for less."""
    ref = catalog.resolve(s.required("id"), "track")
    track = catalog.track(s.call.reader(), ref.id)
    encoding = delivery.encoding_for_cap(
        s.text("format"), s.number("maxBitRate", 0), round(track.bitrate / 1000)
    )
    call = s.call
    token = apps.stream_token(
        call.reader(), call.services, call.require_listener(), track.id, encoding, call.now()
    )
    return _audio(s, token)


@method("download")
def download(s: SubsonicCall) -> ASGIApp:
    """The stored file itself: the library on demand (a station track streams, never downloads)."""
    call, track_id = s.call, catalog.resolve(s.required("id"), "track").id
    token = delivery.library_stream_token(
        call.reader(), call.services, call.require_listener(), track_id, "original", call.now()
    )
    return _audio(s, token)


@method("getCoverArt")
def get_cover_art(s: SubsonicCall) -> ASGIApp:
    """The picture of an artist, album or track (coverArt ids are their ids), at the nearest
    size Airwave keeps at least as large as `size`."""
    ref = catalog.resolve(s.required("id"), "artist", "album", "track")
    key = browse.picture_key(s.call.reader(), ref)
    if key is None:
        raise SubsonicError(NOT_FOUND, "no picture for this id")
    wanted = s.number("size", DEFAULT_ART_SIZE, low=1, high=10_000)
    size = next((n for n in art.SIZES if n >= wanted), art.SIZES[-1])
    return handing_over(s.routes.art, f"/art/{key}/{size}.jpg")
