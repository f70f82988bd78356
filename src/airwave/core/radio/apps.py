"""Airwave's radio in Subsonic apps: instant mixes from the station engine, stations played as
playlists (with the ads of tiers that have them), the apps' ratings and stars as thumbs on the
station that played the track.

Every rule is the station engine's, the fragment's and the ads' own (core.radio.engine,
playlist.fragment, ads): this module only finds the seed, the session, the spin or the adToken
they need.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from random import Random

from sqlalchemy import select
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core import collection, ids, playlists, ratings
from airwave.core.catalog import catalog
from airwave.core.plays import TOKEN_LIFETIME
from airwave.core.radio import ads, delivery, player, playlist, stations
from airwave.core.radio.engine.picker import ANCHORS_PER_SEED, Pick, Picker, Steering
from airwave.core.radio.engine.rules import History
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import (
    AdCampaign,
    AdSpin,
    Artwork,
    Feedback,
    Listener,
    Playlist,
    Spin,
    Station,
)

MAX_STATIONS_LISTED = 1000

# ---------------------------------------------------------------- instant mix


def _mix_steering(db: Session, listener: Listener, seed: ids.Ref, tired: set[int]) -> Steering:
    """Seeds for a track, an album (a sample of its tracks) or an artist."""
    if seed.kind == "track":
        seeds = [("TR", catalog.track(db, seed.id).id)]
    elif seed.kind == "album":
        catalog.album(db, seed.id)
        seeds = [("TR", t) for t in catalog.album_tracks(db, seed.id)[:ANCHORS_PER_SEED]]
    else:
        seeds = [("AR", catalog.artist(db, seed.id).id)]
    return Steering(
        seeds=seeds,
        negative_artists=Counter(),
        banned=set(tired),
        explicit_filter=listener.explicit_filter,
    )


def instant_mix(
    db: Session, settings: Settings, listener: Listener, seed: ids.Ref, count: int, now: datetime
) -> list[int]:
    """Up to `count` track ids the station engine would play for this seed, in order, under the
    radio rules, opening with the seed song when the rules allow it; nothing is kept (no station,
    no spins): an app's Instant Mix is a one-off."""
    tired = playlist.tired_tracks(db, listener.id, now)
    steering = _mix_steering(db, listener, seed, tired)
    history = History([], now, playlist.rules_for(db, settings))
    rng = playlist.engine_random(settings, seed.id, 0)
    picker = Picker(db, steering, history, rng)
    opener = _opener(picker, seed, steering, rng) if count > 0 else None
    picks = [opener] if opener is not None else []
    picks += picker.pick(count - len(picks))
    return [p.track_id for p in picks]


def _opener(picker: Picker, seed: ids.Ref, steering: Steering, rng: Random) -> Pick | None:
    """What a mix opens with, when the rules allow it: the seed song itself, or one of the
    album's or the artist's own tracks (a mix of an album starts on that album)."""
    if seed.kind == "track":
        own = [seed.id]
    elif seed.kind == "album":
        own = [track_id for _, track_id in steering.seeds]
    else:
        own = list(picker.known.artist_tracks(seed.id))
    for track_id in rng.sample(own, min(len(own), ANCHORS_PER_SEED)):
        opener = picker.pin(track_id, ids.music_id(seed.kind, seed.id))
        if opener is not None:
            return opener
    return None


# ---------------------------------------------------------------- stations as playlists


@dataclass(frozen=True)
class AppPlaylists:
    """What an app lists as playlists: the listener's own (tiers with on-demand) and stations."""

    playlists: list[Playlist]
    stations: list[Station]


def app_playlists(db: Session, settings: Settings, listener: Listener) -> AppPlaylists:
    """The listener's playlists, when the tier plays the library on demand, and stations (every
    tier: radio is every listener's); the shuffle station is not listed."""
    own = playlists.of_listener(db, listener.id) if settings.tier(listener.tier).on_demand else []
    listed = stations.list_stations(db, listener.id, 0, MAX_STATIONS_LISTED)[1]
    return AppPlaylists(own, listed)


def refuse_station_edit(db: Session, listener_id: int, station_id: str) -> None:
    """A station is played as a playlist, never edited as one: CALL_NOT_ALLOWED (after
    STATION_DOES_NOT_EXIST / USER_NOT_AUTHORIZED for one that is not the listener's)."""
    station = stations.get_station(db, listener_id, station_id)
    raise ApiError(
        ErrorCode.CALL_NOT_ALLOWED,
        f"{station.name!r} is an Airwave station, not a playlist: change it in the web player",
    )


@dataclass(frozen=True)
class StationPlay:
    """A station opened in an app: the station and its next tracks, with the ads the fragment
    placed between them (tiers with ads) where getFragment places them."""

    station: Station
    entries: list[int | ads.AdItem]  # a track's id, or an issued ad


def play_station(
    db: Session,
    services: Services,
    base_url: str,
    listener: Listener,
    station_id: str,
    now: datetime,
) -> StationPlay:
    """The station's next fragment, for the listener's app session: the same call, rules, limits
    and play log as playlist/getFragment."""
    if services.settings.readonly_mode:
        raise ApiError(ErrorCode.READONLY_MODE, "the server is in read-only maintenance mode")
    session = player.app_session(db, services.settings, listener, now)
    played = playlist.next_fragment(
        db, services, base_url, listener, session, station_id, "Normal", None, now
    )
    entries = [i.view.track.id if isinstance(i, playlist.TrackItem) else i for i in played.items]
    station = db.get(Station, played.station_id)
    assert station is not None
    return StationPlay(station, entries)


def stream_token(
    db: Session,
    services: Services,
    listener: Listener,
    track_id: int,
    requested: str,
    now: datetime,
) -> str:
    """A signed /audio/ token for an app's `stream`: a track a station opened in an app handed
    out lately streams under that spin's grant (every tier, as on the web player, the active
    player rule included); any other track is the library on demand (tiers with it)."""
    session_id = player.app_session_id(db, listener.id)
    spin = None
    if session_id is not None:
        spin = _station_spin(db, listener.id, track_id, now, session_id)
    if spin is None:
        return delivery.library_stream_token(db, services, listener, track_id, requested, now)
    track = catalog.track(db, track_id)
    return services.signer.audio_token(
        listener_id=listener.id,
        track_id=track.id,
        encoding=delivery.encoding_for(services.settings, listener, requested, track.codec),
        expires_at=now + timedelta(seconds=services.settings.audio_url_lifetime),
        spin_id=spin.id,
    )


# ---------------------------------------------------------------- ads in station playlists


def _served_ad(
    db: Session, listener_id: int, token: str, now: datetime
) -> tuple[AdSpin, AdCampaign]:
    """The ad an app's ad id names (its adToken): NOT_FOUND, USER_NOT_AUTHORIZED (another
    listener's) or CONTENT_HAS_EXPIRED as for ad/registerImpression; NOT_FOUND once the operator
    disabled its campaign."""
    spin = ads.ad_spin_by_token(db, listener_id, token, now)
    campaign = ads.require_campaign(db, spin.campaign_id)
    if campaign.disabled:
        raise ApiError(ErrorCode.NOT_FOUND, "this ad is no longer available")
    return spin, campaign


def ad_stream_token(
    db: Session,
    services: Services,
    listener: Listener,
    token: str,
    requested: str,
    now: datetime,
) -> str:
    """A signed /audio/ token for an app's `stream` of an ad its station playlist held: the ad's
    impression counts as the app fetches it (apps report no ad plays of their own), once per
    adToken as ad/registerImpression and the ad's receipt URL count it (not in read-only
    maintenance, when nothing is written)."""
    spin, campaign = _served_ad(db, listener.id, token, now)
    if not services.settings.readonly_mode:
        ads.register_impressions(db, listener.id, [token], now)
    return services.signer.ad_audio_token(
        listener_id=listener.id,
        campaign_id=campaign.id,
        ad_spin_id=spin.id,
        encoding=delivery.encoding_for(services.settings, listener, requested, campaign.codec),
        expires_at=now + timedelta(seconds=services.settings.audio_url_lifetime),
    )


def ad_picture_key(db: Session, listener_id: int, token: str, now: datetime) -> str | None:
    """The /art/ key of the picture of an ad handed to the listener (None when it has none)."""
    campaign = _served_ad(db, listener_id, token, now)[1]
    art = db.get(Artwork, campaign.art_id) if campaign.art_id else None
    return art.content_hash if art is not None else None


def scrobble(
    db: Session,
    settings: Settings,
    listener: Listener,
    tracks: Sequence[tuple[int, datetime]],
    ad_tokens: Sequence[str],
    *,
    submission: bool,
    now: datetime,
) -> None:
    """An app's scrobble: each track (and when it was played) into the play log as
    playlist.scrobble has it; an ad played through (a submission) counts its impression, once per
    adToken as ad/registerImpression counts it, and is never a play. Every adToken is checked
    before anything is written."""
    if submission:
        ads.register_impressions(db, listener.id, ad_tokens, now)
    else:  # started: nothing to count, but the ids are checked all the same
        for token in ad_tokens:
            ads.ad_spin_by_token(db, listener.id, token, now)
    for track_id, at in tracks:
        playlist.scrobble(db, settings, listener, track_id, submission=submission, at=at, now=now)


# ---------------------------------------------------------------- ratings and stars as thumbs


def _station_spin(
    db: Session, listener_id: int, track_id: int, now: datetime, session_id: int | None = None
) -> Spin | None:
    """The listener's latest spin of this track on a station (handed to `session_id`, when
    given), while its token lives."""
    query = select(Spin).where(
        Spin.listener_id == listener_id,
        Spin.track_id == track_id,
        Spin.station_id.is_not(None),
        Spin.issued_at > now - TOKEN_LIFETIME,
    )
    if session_id is not None:
        query = query.where(Spin.session_id == session_id)
    return db.scalar(query.order_by(Spin.issued_at.desc(), Spin.id.desc()).limit(1))


def _thumbable(db: Session, listener_id: int, track_id: int, now: datetime) -> Spin | None:
    """The spin a thumb on this track goes through, or None when no station of the listener's
    played it lately (or only a whole-library shuffle did, which has no station to learn)."""
    spin = _station_spin(db, listener_id, track_id, now)
    if spin is None:
        return None
    station_id = spin.origin_station_id or spin.station_id
    station = db.get(Station, station_id) if station_id is not None else None
    if station is None or station.is_shuffle:
        return None
    return spin


def thumb_played(
    db: Session,
    settings: Settings,
    listener: Listener,
    track_id: int,
    up: bool | None,
    now: datetime,
    *,
    only_up: bool = False,
) -> bool:
    """A thumb (up, down, or None: taken back; with `only_up`, only a thumbs-up is taken back)
    on the station that lately played this track to the listener, through station/addFeedback's
    and deleteFeedback's own calls; False when no station played it."""
    spin = _thumbable(db, listener.id, track_id, now)
    if spin is None:
        return False
    if up is None and only_up:
        station_id = spin.origin_station_id or spin.station_id
        thumb = db.scalar(
            select(Feedback.is_positive).where(
                Feedback.station_id == station_id, Feedback.track_id == track_id
            )
        )
        if not thumb:  # a thumbs-down (or none) stays: unstarring is not liking less
            return True
    session = player.app_session(db, settings, listener, now)
    if up is not None:
        playlist.thumb(db, listener.id, session.id, spin.token, up, now)
        return True
    try:
        playlist.unthumb(db, listener.id, None, spin.token, now)
    except ApiError as error:
        if error.error is not ErrorCode.NOT_FOUND:  # no thumb to take back: nothing to do
            raise
    return True


def rate(
    db: Session, settings: Settings, listener: Listener, track_id: int, rating: int, now: datetime
) -> None:
    """An app's star rating (setRating): kept as the listener's rating of the track; on a track
    a station of theirs played lately, 5 is a thumbs-up there, 1 a thumbs-down, 0 takes the
    thumb back (2-4 leave the station alone)."""
    catalog.track(db, track_id)
    ratings.set_rating(db, listener.id, track_id, rating, now)
    if rating in (0, 1, ratings.HIGHEST):
        thumb_played(db, settings, listener, track_id, None if rating == 0 else rating > 1, now)


def star(
    db: Session, settings: Settings, listener: Listener, refs: list[ids.Ref], now: datetime
) -> None:
    """An app's star: into the listener's collection (tiers with on-demand), and a thumbs-up on
    the station that lately played a starred track. A tier without on-demand can star only
    tracks a station played (LISTENER_NOT_AUTHORIZED for anything else, before any change)."""
    on_demand = settings.tier(listener.tier).on_demand
    if not on_demand:
        for ref in refs:
            if ref.kind != "track" or _thumbable(db, listener.id, ref.id, now) is None:
                delivery.require_on_demand(settings, listener)
    for ref in refs:
        if on_demand:
            collection.add(db, listener.id, ref, now)
        if ref.kind == "track":
            thumb_played(db, settings, listener, ref.id, True, now)


def unstar(
    db: Session, settings: Settings, listener: Listener, refs: list[ids.Ref], now: datetime
) -> None:
    """An app's unstar, star's mirror: out of the collection (tiers with on-demand), and a
    thumbs-up on the station that lately played the track taken back (a thumbs-down stays). A
    tier without on-demand can unstar only tracks a station played."""
    on_demand = settings.tier(listener.tier).on_demand
    if not on_demand:
        for ref in refs:
            if ref.kind != "track" or _thumbable(db, listener.id, ref.id, now) is None:
                delivery.require_on_demand(settings, listener)
    for ref in refs:
        if on_demand:
            collection.remove(db, listener.id, ref)
        if ref.kind == "track":
            thumb_played(db, settings, listener, ref.id, None, now, only_up=True)
