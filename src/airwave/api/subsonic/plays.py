"""scrobble: plays reported by apps go into the play log, the ads of station playlists played
through into the ad report (core.radio.apps.scrobble); getNowPlaying: what listeners started and
have not finished (core.plays.now_playing)."""

from __future__ import annotations

from datetime import UTC, datetime

from airwave.api.subsonic.browse import songs
from airwave.api.subsonic.dispatch import Payload, SubsonicCall, method
from airwave.api.subsonic.envelope import GENERIC, SubsonicError
from airwave.core import ids, plays
from airwave.core.catalog import catalog
from airwave.core.radio import apps


def _moments(s: SubsonicCall, count: int) -> list[datetime | None]:
    """`time` values (ms since the epoch), one per id; missing ones mean now."""
    given = s.texts("time")
    moments: list[datetime | None] = []
    for i in range(count):
        if i >= len(given) or given[i] == "":
            moments.append(None)
            continue
        try:
            moments.append(datetime.fromtimestamp(int(given[i]) / 1000, UTC))
        except (ValueError, OverflowError, OSError):
            raise SubsonicError(GENERIC, "time must be milliseconds since the epoch") from None
    return moments


@method("scrobble", writes=True)
def scrobble(s: SubsonicCall) -> Payload:
    """submission=true (the default): played through; false: started playing. An ad of a station
    playlist (`AD:<adToken>`) played through counts its impression, never a play."""
    s.required("id")
    parsed = [ids.parse_ad_token_id(v) or catalog.resolve(v, "track").id for v in s.texts("id")]
    moments = _moments(s, len(parsed))
    now = s.call.now()
    tracks = [(p, m or now) for p, m in zip(parsed, moments, strict=True) if isinstance(p, int)]
    ad_tokens = [p for p in parsed if isinstance(p, str)]
    with s.call.write() as db:
        apps.scrobble(
            db,
            s.call.settings,
            s.call.require_listener(),
            tracks,
            ad_tokens,
            submission=s.flag("submission", True),
            now=now,
        )
    return {}


@method("getNowPlaying")
def get_now_playing(s: SubsonicCall) -> Payload:
    now = s.call.now()
    playing = plays.now_playing(s.call.reader(), s.call.require_listener().id, now)
    entries = {e["id"]: e for e in songs(s, list({p.track_id for p in playing}))}
    return {
        "nowPlaying": {
            "entry": [
                {
                    **entries[ids.music_id("track", p.track_id)],
                    "username": p.username,
                    "minutesAgo": max(0, int((now - p.started_at).total_seconds() // 60)),
                    "playerId": p.player_id,
                }
                for p in playing
                if ids.music_id("track", p.track_id) in entries
            ]
        }
    }
