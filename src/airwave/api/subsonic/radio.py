"""Airwave's radio behind the apps' buttons: getSimilarSongs/2 (Instant Mix) from the station
engine, setRating as thumbs on the station that played the song (core.radio.apps)."""

from __future__ import annotations

from airwave.api.subsonic.browse import songs
from airwave.api.subsonic.dispatch import Payload, SubsonicCall, method
from airwave.api.subsonic.envelope import GENERIC, SubsonicError
from airwave.core.catalog import catalog
from airwave.core.radio import apps

DEFAULT_MIX = 50
MAX_MIX = 500


def _mix(s: SubsonicCall, *kinds: str) -> list[Payload]:
    seed = catalog.resolve(s.required("id"), *kinds)  # type: ignore[arg-type]
    count = s.number("count", DEFAULT_MIX, low=1, high=MAX_MIX)
    track_ids = apps.instant_mix(
        s.call.reader(), s.call.settings, s.call.require_listener(), seed, count, s.call.now()
    )
    return songs(s, track_ids)


@method("getSimilarSongs")
def get_similar_songs(s: SubsonicCall) -> Payload:
    """A song, album or artist seed: the sequence a station of it would open with."""
    return {"similarSongs": {"song": _mix(s, "track", "album", "artist")}}


@method("getSimilarSongs2")
def get_similar_songs2(s: SubsonicCall) -> Payload:
    """An artist seed (a song id is taken too, as apps send one for a song's Instant Mix)."""
    return {"similarSongs2": {"song": _mix(s, "artist", "track")}}


@method("setRating", writes=True)
def set_rating(s: SubsonicCall) -> Payload:
    """0-5 stars; on a song a station played lately 5 is a thumbs-up, 1 a thumbs-down, 0 none."""
    ref = catalog.resolve(s.required("id"), "track")
    s.required("rating")
    rating = s.number("rating", 0, low=-1, high=6)
    if not 0 <= rating <= 5:
        raise SubsonicError(GENERIC, "rating must be 0 (none) to 5")
    listener = s.call.require_listener()
    with s.call.write() as db:
        apps.rate(db, s.call.settings, listener, ref.id, rating, s.call.now())
    return {}
