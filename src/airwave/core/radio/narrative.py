"""playlist/narrative: why a station plays a track, in words a listener reads."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from airwave.core import ids
from airwave.core.catalog import catalog, similar
from airwave.core.radio import stations
from airwave.errors import ApiError
from airwave.store.models import Feedback, Spin, Station


@dataclass(frozen=True)
class Narrative:
    intro: str
    focus_traits: list[str]
    paragraph: str


def explain(db: Session, listener_id: int, station_id: str, music_id: str) -> Narrative:
    """What the track sounds like, and what ties it to the station: a seed it is or is close
    to, the listener's thumb. A shuffle station explains with the station shuffle took it from."""
    station = stations.get_station(db, listener_id, station_id)
    track = catalog.track(db, catalog.resolve(music_id, "track").id)
    view = catalog.track_views(db, [track.id])[0]
    traits = similar.focus_traits(
        similar.profile_json(db, track.id),
        view.genres,
        track.year or view.album.year,
        track.composer,
        track.explicit,
    )
    last = db.execute(
        select(Spin.seed_music_id, Spin.origin_station_id)
        .where(
            Spin.listener_id == listener_id,
            Spin.track_id == track.id,
            or_(Spin.station_id == station.id, Spin.origin_station_id == station.id),
        )
        .order_by(Spin.issued_at.desc(), Spin.id.desc())
        .limit(1)
    ).first()
    source = station
    if station.is_shuffle and last is not None and last.origin_station_id is not None:
        source = db.get(Station, last.origin_station_id) or station
    title = track.title or "this track"
    intro = f"We're playing “{title}” on {source.name} because it features"
    reasons = _ties(db, source, view, last.seed_music_id if last is not None else None)
    paragraph = f"{intro} {_listed(traits)}." if traits else f"We're playing “{title}”."
    return Narrative(intro, traits, " ".join([paragraph, *reasons]))


def _ties(
    db: Session, station: Station, view: catalog.TrackView, seed_music_id: str | None
) -> list[str]:
    seeds = {(s.kind, s.ref_id) for s in stations.seeds_of(db, station.id)}
    said: list[str] = []
    if ("TR", view.track.id) in seeds:
        said.append(f"It is a seed of {station.name}.")
    elif ("AR", view.artist.id) in seeds:
        said.append(f"{view.artist.name} is a seed of {station.name}.")
    elif seed_music_id and (name := _name_of(db, seed_music_id)):
        said.append(f"Its sound is close to {name}, a seed of this station.")
    thumb = db.scalar(
        select(Feedback.is_positive).where(
            Feedback.station_id == station.id, Feedback.track_id == view.track.id
        )
    )
    if thumb:
        said.append("You gave it a thumbs-up on this station.")
    return said


def _name_of(db: Session, music_id: str) -> str | None:
    ref = ids.parse(music_id)
    try:
        if ref is None:
            return None
        if ref.kind == "artist":
            return catalog.artist(db, ref.id).name
        if ref.kind == "track":
            return f"“{catalog.track(db, ref.id).title}”"
        if ref.kind == "genre":
            return catalog.genre(db, ref.id).name
    except ApiError:  # gone from the library since
        return None
    return None


def _listed(items: list[str]) -> str:
    """ "a, b and c"; with semicolons when an item has a comma of its own."""
    if len(items) == 1:
        return items[0]
    comma = "; " if any("," in item for item in items) else ", "
    return comma.join(items[:-1]) + " and " + items[-1]
