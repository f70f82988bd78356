"""What the similarity space says to listeners: similar tracks and artists, focus traits,
recommendations."""

from __future__ import annotations

from collections import Counter, defaultdict

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from airwave.core.catalog import space
from airwave.store.models import (
    Feedback,
    Genre,
    Spin,
    Station,
    StationSeed,
    Track,
    TrackGenre,
    TrackProfile,
)

_NOTE_NAMES = ("C", "C♯", "D", "E♭", "E", "F", "F♯", "G", "A♭", "A", "B♭", "B")


def similar_tracks(db: Session, track_id: int, limit: int = 10, per_artist: int = 2) -> list[int]:
    """The track's nearest neighbours that are playable, at most `per_artist` from one artist."""
    lists = space.neighbors_of(db, [track_id])
    if track_id not in lists:
        return []
    ids, _sims = lists[track_id]
    candidates = [int(t) for t in ids[: limit * 6]]
    rows = dict(
        db.execute(
            select(Track.id, Track.artist_id).where(Track.id.in_(candidates), space.PRESENT)
        ).all()
    )
    picked: list[int] = []
    counts: Counter[int] = Counter()
    for t in candidates:
        artist = rows.get(t)
        if artist is None or counts[artist] >= per_artist:
            continue
        picked.append(t)
        counts[artist] += 1
        if len(picked) == limit:
            break
    return picked


def artist_affinity(
    db: Session, track_ids: list[int], weights: list[float] | None = None
) -> Counter[int]:
    """Other artists' summed similarity to a set of tracks, through the tracks' neighbour lists."""
    lists = space.neighbors_of(db, track_ids)
    score: Counter[int] = Counter()
    neighbour_ids = {int(n) for ids, _ in lists.values() for n in ids}
    if not neighbour_ids:
        return score
    artist_of = dict(
        db.execute(
            select(Track.id, Track.artist_id).where(Track.id.in_(neighbour_ids), space.PRESENT)
        ).all()
    )
    for i, track_id in enumerate(track_ids):
        if track_id not in lists:
            continue
        w = weights[i] if weights else 1.0
        ids, sims = lists[track_id]
        best: dict[int, float] = {}
        for n, s in zip(ids.tolist(), sims.tolist()):
            artist = artist_of.get(n)
            if artist is not None:
                best[artist] = max(best.get(artist, 0.0), s)
        for artist, s in best.items():
            score[artist] += w * s
    return score


def similar_artists(db: Session, artist_id: int, limit: int = 10) -> list[int]:
    """Artists whose tracks sit nearest this artist's tracks in the similarity space."""
    own = list(
        db.scalars(
            select(Track.id)
            .where(Track.artist_id == artist_id, space.PRESENT)
            .order_by(Track.id)
            .limit(40)
        )
    )
    score = artist_affinity(db, own)
    score.pop(artist_id, None)
    return [a for a, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def profile_json(db: Session, track_id: int) -> str | None:
    return db.scalar(select(TrackProfile.profile).where(TrackProfile.track_id == track_id))


def focus_traits(
    profile_text: str | None,
    genres: list[str],
    year: int | None,
    composer: str | None,
    explicit: bool,
) -> list[str]:
    """A few plain phrases on what a track sounds like: its sound profile first, then its tags."""
    traits: list[str] = []
    if profile_text:
        from airwave.library.analysis import SoundProfile

        try:
            p = SoundProfile.from_json(profile_text)
        except ValueError:
            p = None
        if p is not None:
            if p.rhythm_strength >= 0.25:
                if p.tempo >= 140:
                    traits.append(f"fast tempo ({p.tempo:.0f} BPM)")
                elif p.tempo <= 90:
                    traits.append(f"slow tempo ({p.tempo:.0f} BPM)")
                else:
                    traits.append(f"mid tempo ({p.tempo:.0f} BPM)")
                if p.rhythm_strength >= 0.6:
                    traits.append("strong, steady beat")
            else:
                traits.append("free-flowing rhythm")
            if p.key_strength >= 0.5:
                traits.append(f"{p.mode} key ({_NOTE_NAMES[p.key % 12]} {p.mode})")
            if p.centroid_hz >= 2500 or p.flatness >= 0.2:
                traits.append("bright, edgy timbre" if p.flatness >= 0.1 else "bright timbre")
            elif p.centroid_hz <= 900:
                traits.append("warm, mellow timbre")
            if p.onset_rate >= 4.5:
                traits.append(f"busy, rapid notes ({p.onset_rate:.1f} onsets a second)")
            elif p.onset_rate <= 2.0:
                traits.append("sparse, unhurried notes")
            contrast = sum(p.contrast) / max(len(p.contrast), 1)
            if contrast >= 30.0:
                traits.append("clear, tonal instruments")
            elif contrast <= 20.0:
                traits.append("dense, saturated texture")
            if p.dynamics_db >= 4.0:
                traits.append("wide dynamics")
            elif p.dynamics_db <= 1.0 and p.loudness_lufs > -12:
                traits.append("dense, compressed sound")
            if p.loudness_lufs <= -24:
                traits.append("quiet and gentle")
            if p.harmonic_change[0] <= 0.06:
                traits.append("steady, held harmony")
            elif p.harmonic_change[0] >= 0.18:
                traits.append("restless, shifting harmony")
    traits += [f"{g} roots" for g in genres[:2]]
    if year:
        traits.append(f"{year // 10 * 10}s recording")
    if composer:
        traits.append(f"written by {composer}")
    if explicit:
        traits.append("explicit lyrics")
    return traits


def seed_suggestions(db: Session, station: Station, limit: int) -> list[int]:
    """Artists near a station's seeds and thumbs-up that are not seeds already."""
    seeds = list(
        db.execute(
            select(StationSeed.kind, StationSeed.ref_id).where(StationSeed.station_id == station.id)
        )
    )
    anchors: list[int] = []
    taken = {ref for kind, ref in seeds if kind == "AR"}
    for kind, ref in seeds:
        if kind == "AR":
            anchors += list(
                db.scalars(select(Track.id).where(Track.artist_id == ref, space.PRESENT).limit(20))
            )
        elif kind == "TR":
            anchors.append(ref)
            artist = db.scalar(select(Track.artist_id).where(Track.id == ref))
            if artist is not None:
                taken.add(artist)
        elif kind == "GE":
            anchors += list(
                db.scalars(select(TrackGenre.track_id).where(TrackGenre.genre_id == ref).limit(20))
            )
    anchors += list(
        db.scalars(
            select(Feedback.track_id)
            .where(Feedback.station_id == station.id, Feedback.is_positive.is_(True))
            .order_by(Feedback.created_at.desc())
            .limit(30)
        )
    )
    score = artist_affinity(db, list(dict.fromkeys(anchors)))
    for artist in taken:
        score.pop(artist, None)
    return [a for a, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]


def recommendations(db: Session, listener_id: int, limit: int = 10) -> tuple[list[int], list[int]]:
    """Artists and genres from the listener's thumbs-up and plays that none of their stations is
    seeded with."""
    liked = list(
        db.scalars(
            select(Feedback.track_id)
            .where(Feedback.listener_id == listener_id, Feedback.is_positive.is_(True))
            .order_by(Feedback.created_at.desc())
            .limit(60)
        )
    )
    played = list(
        db.scalars(
            select(Spin.track_id)
            .where(Spin.listener_id == listener_id, Spin.started_at.is_not(None))
            .order_by(Spin.issued_at.desc())
            .limit(60)
        )
    )
    history = list(dict.fromkeys(liked + played))
    thumbed = set(liked)
    weights = [2.0 if t in thumbed else 1.0 for t in history]
    weight_of = dict(zip(history, weights, strict=True))
    seeded = defaultdict(set)
    for kind, ref in db.execute(
        select(StationSeed.kind, StationSeed.ref_id)
        .join(Station, Station.id == StationSeed.station_id)
        .where(Station.listener_id == listener_id)
    ):
        seeded[kind].add(ref)
    if history:
        artists = artist_affinity(db, history, weights)
        # the history's own artists, in one statement (one a track took up to 120 of them)
        for track_id, artist in db.execute(
            select(Track.id, Track.artist_id).where(Track.id.in_(history))
        ):
            artists[artist] += weight_of[track_id]
        genre_score: Counter[int] = Counter()
        for track_id, genre_id in db.execute(
            select(TrackGenre.track_id, TrackGenre.genre_id).where(TrackGenre.track_id.in_(history))
        ):
            genre_score[genre_id] += weight_of[track_id]
    else:  # nothing heard yet: the library's biggest artists and genres
        artists = Counter(
            dict(
                db.execute(
                    select(Track.artist_id, func.count())
                    .where(space.PRESENT)
                    .group_by(Track.artist_id)
                    .order_by(func.count().desc())
                    .limit(50)
                ).all()
            )
        )
        genre_score = Counter(
            dict(
                db.execute(
                    select(TrackGenre.genre_id, func.count())
                    .group_by(TrackGenre.genre_id)
                    .order_by(func.count().desc())
                    .limit(50)
                ).all()
            )
        )
    for artist in seeded["AR"]:
        artists.pop(artist, None)
    for genre in seeded["GE"]:
        genre_score.pop(genre, None)
    top_artists = [a for a, _ in sorted(artists.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]
    top_genres = [g for g, _ in sorted(genre_score.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]
    valid = (
        set(db.scalars(select(Genre.id).where(Genre.id.in_(top_genres)))) if top_genres else set()
    )
    return top_artists, [g for g in top_genres if g in valid]
