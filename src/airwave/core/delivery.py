"""What an audio URL may deliver once its signature holds: a live listener and a track whose file exists."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from airwave.audio.signing import AudioGrant
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AdCampaign, Listener, Track


@dataclass(frozen=True)
class AudioSource:
    """The stored file behind a grant."""

    track_id: int  # 0 for an ad
    path: str
    codec: str
    duration: float


def audio_source(db: Session, grant: AudioGrant) -> AudioSource:
    """The grant's track (or ad) file: 403 for a deleted or suspended listener, 404 for a track no longer in the
    library or an ad the operator withdrew."""
    disabled = db.scalar(select(Listener.disabled).where(Listener.id == grant.listener_id))
    if disabled is None:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "the listener this URL was issued to no longer exists")
    if disabled:
        raise ApiError(ErrorCode.LISTENER_SUSPENDED, "this account has been disabled by an administrator")
    if grant.campaign_id is not None:
        ad = db.execute(select(AdCampaign.path, AdCampaign.codec, AdCampaign.duration, AdCampaign.disabled)
                        .where(AdCampaign.id == grant.campaign_id)).first()
        if ad is None or ad.disabled:
            raise ApiError(ErrorCode.NOT_FOUND, "this ad is no longer available")
        return AudioSource(0, ad.path, ad.codec, ad.duration)
    row = db.execute(select(Track.path, Track.missing_since, Track.codec, Track.duration)
                     .where(Track.id == grant.track_id)).first()
    if row is None or not row.path or row.missing_since is not None:
        raise ApiError(ErrorCode.NOT_FOUND, "this track is no longer in the library")
    return AudioSource(grant.track_id, row.path, row.codec, row.duration)
