"""Where the listener left off: getPlayQueue/savePlayQueue and the position bookmarks
(getBookmarks, createBookmark, deleteBookmark), kept per listener by core.resume."""

from __future__ import annotations

from airwave.api.subsonic.browse import songs
from airwave.api.subsonic.dispatch import Payload, SubsonicCall, method
from airwave.core import ids, resume
from airwave.core.catalog import catalog
from airwave.core.clock import iso_timestamp

MAX_POSITION_MS = 2**62


def _track_id(value: str) -> int:
    return catalog.resolve(value, "track").id


def _queue(s: SubsonicCall) -> tuple[list[int], int | None, int]:
    """The queue's tracks, current track and position: the ads of station playlists
    (`AD:<adToken>`) play once and are not kept, a current ad gives way to the track after it."""
    values = s.texts("id")
    track_ids = [_track_id(v) for v in values if ids.parse_ad_token_id(v) is None]
    current, position = s.text("current"), s.number("position", 0, high=MAX_POSITION_MS)
    if not current:
        return track_ids, None, position
    if ids.parse_ad_token_id(current) is None:
        return track_ids, _track_id(current), position
    after = values[values.index(current) + 1 :] if current in values else []
    following = [v for v in after if ids.parse_ad_token_id(v) is None]
    return track_ids, _track_id(following[0]) if following else None, 0


@method("savePlayQueue", writes=True)
def save_play_queue(s: SubsonicCall) -> Payload:
    """The queue (`id`, repeated), its current track and the position in it (ms); no id clears."""
    track_ids, current, position = _queue(s)
    listener = s.call.require_listener()
    with s.call.write() as db:
        resume.save_queue(
            db,
            listener.id,
            track_ids,
            current,
            position,
            s.text("c", "") or "",
            s.call.now(),
        )
    return {}


@method("getPlayQueue")
def get_play_queue(s: SubsonicCall) -> Payload:
    listener = s.call.require_listener()
    saved = resume.saved_queue(s.call.reader(), listener.id)
    if saved is None:
        return {}
    return {
        "playQueue": {
            "current": ids.music_id("track", saved.current_track_id)
            if saved.current_track_id is not None
            else None,
            "position": saved.position_ms,
            "username": listener.username,
            "changed": iso_timestamp(saved.changed_at),
            "changedBy": saved.changed_by,
            "entry": songs(s, saved.track_ids),
        }
    }


@method("createBookmark", writes=True)
def create_bookmark(s: SubsonicCall) -> Payload:
    """Where the listener stopped in a song (`position` in ms); again on a song moves it."""
    track_id = _track_id(s.required("id"))
    position = s.number("position", 0, high=MAX_POSITION_MS)
    s.required("position")
    listener = s.call.require_listener()
    with s.call.write() as db:
        resume.set_bookmark(
            db, listener.id, track_id, position, s.text("comment", "") or "", s.call.now()
        )
    return {}


@method("deleteBookmark", writes=True)
def delete_bookmark(s: SubsonicCall) -> Payload:
    track_id = _track_id(s.required("id"))
    with s.call.write() as db:
        resume.delete_bookmark(db, s.call.require_listener().id, track_id)
    return {}


@method("getBookmarks")
def get_bookmarks(s: SubsonicCall) -> Payload:
    listener = s.call.require_listener()
    marks = resume.bookmarks_of(s.call.reader(), listener.id)
    entries = {e["id"]: e for e in songs(s, [m.track_id for m in marks])}
    return {
        "bookmarks": {
            "bookmark": [
                {
                    "position": m.position_ms,
                    "username": listener.username,
                    "comment": m.comment or None,
                    "created": iso_timestamp(m.created_at),
                    "changed": iso_timestamp(m.changed_at),
                    "entry": entries[ids.music_id("track", m.track_id)],
                }
                for m in marks
                if ids.music_id("track", m.track_id) in entries
            ]
        }
    }
