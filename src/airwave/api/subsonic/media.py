"""Bytes: stream and download (the signed /audio/ route and its transcoding cache), getCoverArt
(the /art/ route). An ad of a station playlist (`AD:<adToken>`) streams like a track, under its
own ad grant, and counts its impression as it is fetched (core.radio.apps)."""

from __future__ import annotations

from starlette.types import ASGIApp

from airwave.api.subsonic.dispatch import SubsonicCall, handing_over, method
from airwave.api.subsonic.envelope import NOT_FOUND, SubsonicError
from airwave.core import ids
from airwave.core.catalog import art, browse, catalog
from airwave.core.radio import apps, delivery

DEFAULT_ART_SIZE = 640


def _audio(s: SubsonicCall, token: str) -> ASGIApp:
    return handing_over(s.routes.audio, f"/audio/{token}")


def _ad(s: SubsonicCall, ad_token: str, encoding: str) -> ASGIApp:
    """An ad's audio; fetching it is its impression (once per adToken)."""
    call = s.call
    with call.write() as db:
        token = apps.ad_stream_token(
            db, call.services, call.require_listener(), ad_token, encoding, call.now()
        )
    return _audio(s, token)


@method("stream")
def stream(s: SubsonicCall) -> ASGIApp:
    """The track as stored, or transcoded when `format` or `maxBitRate` asks for less."""
    value = s.required("id")
    ad_token = ids.parse_ad_token_id(value)
    if ad_token is not None:
        cap = s.number("maxBitRate", 0)
        return _ad(s, ad_token, delivery.encoding_for_cap(s.text("format"), cap, 0))
    ref = catalog.resolve(value, "track")
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
    """The stored file itself: the library on demand (a station track streams, never downloads;
    an ad of a station playlist downloads as stored)."""
    value = s.required("id")
    ad_token = ids.parse_ad_token_id(value)
    if ad_token is not None:
        return _ad(s, ad_token, "original")
    call, track_id = s.call, catalog.resolve(value, "track").id
    token = delivery.library_stream_token(
        call.reader(), call.services, call.require_listener(), track_id, "original", call.now()
    )
    return _audio(s, token)


@method("getCoverArt")
def get_cover_art(s: SubsonicCall) -> ASGIApp:
    """The picture of an artist, album, track or ad (coverArt ids are their ids), at the nearest
    size Airwave keeps at least as large as `size`."""
    value = s.required("id")
    ad_token = ids.parse_ad_token_id(value)
    if ad_token is not None:
        call = s.call
        key = apps.ad_picture_key(call.reader(), call.require_listener().id, ad_token, call.now())
    else:
        ref = catalog.resolve(value, "artist", "album", "track")
        key = browse.picture_key(s.call.reader(), ref)
    if key is None:
        raise SubsonicError(NOT_FOUND, "no picture for this id")
    wanted = s.number("size", DEFAULT_ART_SIZE, low=1, high=10_000)
    size = next((n for n in art.SIZES if n >= wanted), art.SIZES[-1])
    return handing_over(s.routes.art, f"/art/{key}/{size}.jpg")
