"""Audio delivery in one place: issuing signed audio, receipt and skip URLs (tracks and ads) and
checking
what an audio URL may deliver once its signature holds."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from airwave.audio.formats import negotiate
from airwave.audio.signing import AudioGrant, ReceiptGrant
from airwave.audio.urls import audio_url, receipt_url, skip_url
from airwave.config import Settings
from airwave.core import plays
from airwave.core.catalog import catalog
from airwave.core.radio import player
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AdCampaign, Listener, Spin, Track

# ---------------------------------------------------------------- issuing


@dataclass(frozen=True)
class AudioLinks:
    """Where a client fetches one issued track or ad, and where it reports how the play ended."""

    audio_url: str
    encoding: str  # what audio_url really delivers
    receipt_url: str
    skip_url: str


def high_quality(settings: Settings, listener: Listener) -> bool:
    """The tier allows high quality and the listener has not turned it off."""
    return settings.tier(listener.tier).high_quality and listener.high_quality_streaming


def require_on_demand(settings: Settings, listener: Listener) -> None:
    """The listener's tier plays the library on demand (spec §6.6, §7b); LISTENER_NOT_AUTHORIZED
    otherwise."""
    if not settings.tier(listener.tier).on_demand:
        raise ApiError(
            ErrorCode.LISTENER_NOT_AUTHORIZED, "your library on demand is not part of your plan"
        )


def encoding_for(
    settings: Settings, listener: Listener, requested: str | None, source_codec: str = ""
) -> str:
    """The encoding this listener really gets for a requested audioFormat."""
    return negotiate(
        requested, high_quality=high_quality(settings, listener), source_codec=source_codec
    )


class Issuer:
    """Signs the URLs of one call: every URL it issues expires audio_url_lifetime after `now`."""

    def __init__(self, services: Services, base_url: str, now: datetime) -> None:
        self.signer = services.signer
        self.base_url = base_url
        self.expires_at = now + timedelta(seconds=services.settings.audio_url_lifetime)

    def track(self, listener_id: int, track_id: int, spin_id: int, encoding: str) -> AudioLinks:
        """The audio, receipt and skip URLs of one spin."""
        token = self.signer.audio_token(
            listener_id=listener_id,
            track_id=track_id,
            encoding=encoding,
            expires_at=self.expires_at,
            spin_id=spin_id,
        )
        receipt = self.signer.receipt_token(
            listener_id=listener_id, spin_id=spin_id, expires_at=self.expires_at
        )
        return self._links(token, encoding, receipt)

    def ad(self, listener_id: int, campaign_id: int, ad_spin_id: int, encoding: str) -> AudioLinks:
        """The audio URL of one issued ad; its receipt counts the impression, its skip records
        nothing."""
        token = self.signer.ad_audio_token(
            listener_id=listener_id,
            campaign_id=campaign_id,
            ad_spin_id=ad_spin_id,
            encoding=encoding,
            expires_at=self.expires_at,
        )
        receipt = self.signer.ad_receipt_token(
            listener_id=listener_id, ad_spin_id=ad_spin_id, expires_at=self.expires_at
        )
        return self._links(token, encoding, receipt)

    def _links(self, token: str, encoding: str, receipt: str) -> AudioLinks:
        return AudioLinks(
            audio_url(self.base_url, token),
            encoding,
            receipt_url(self.base_url, receipt),
            skip_url(self.base_url, receipt),
        )


# ---------------------------------------------------------------- checking


@dataclass(frozen=True)
class AudioSource:
    """The stored file behind a grant."""

    track_id: int  # 0 for an ad
    path: str
    codec: str
    duration: float


def audio_source(db: Session, grant: AudioGrant, now: datetime) -> AudioSource:
    """The grant's track (or ad) file: 403 for a deleted or suspended listener, 404 for a track no
    longer in the library or an ad the operator withdrew, 409 `STREAM_VIOLATION` for a radio
    track of a player that lost the account's claim."""
    disabled = db.scalar(select(Listener.disabled).where(Listener.id == grant.listener_id))
    if disabled is None:
        raise ApiError(
            ErrorCode.USER_NOT_AUTHORIZED, "the listener this URL was issued to no longer exists"
        )
    if disabled:
        raise ApiError(
            ErrorCode.LISTENER_SUSPENDED, "this account has been disabled by an administrator"
        )
    if grant.campaign_id is not None:
        ad = db.execute(
            select(
                AdCampaign.path, AdCampaign.codec, AdCampaign.duration, AdCampaign.disabled
            ).where(AdCampaign.id == grant.campaign_id)
        ).first()
        if ad is None or ad.disabled:
            raise ApiError(ErrorCode.NOT_FOUND, "this ad is no longer available")
        return AudioSource(0, ad.path, ad.codec, ad.duration)
    if grant.spin_id is not None:
        handed_to = db.scalar(select(Spin.session_id).where(Spin.id == grant.spin_id))
        player.check_player(db, grant.listener_id, handed_to, now)
    row = db.execute(
        select(Track.path, Track.missing_since, Track.codec, Track.duration).where(
            Track.id == grant.track_id
        )
    ).first()
    if row is None or not row.path or row.missing_since is not None:
        raise ApiError(ErrorCode.NOT_FOUND, "this track is no longer in the library")
    return AudioSource(grant.track_id, row.path, row.codec, row.duration)


def settle(
    db: Session, grant: ReceiptGrant, outcome: plays.Outcome, seconds: float | None, now: datetime
) -> plays.SpinEnd:
    """A receipt or skip URL: the spin's end is logged, unless its player lost the claim (409)."""
    handed_to = db.scalar(select(Spin.session_id).where(Spin.id == grant.spin_id))
    player.check_player(db, grant.listener_id, handed_to, now)
    return plays.record_end(db, grant, outcome, seconds, now)


# ---------------------------------------------------------------- library streams (Subsonic)

# what a client's format choice means among Airwave's encodings
_FORMATS = {"raw": "original", "mp3": "mp3", "opus": "opus", "aac": "aacplus"}


def encoding_for_cap(fmt: str | None, max_kbps: int, source_kbps: int) -> str:
    """The encoding for a requested format and bit-rate cap (0: none): the stored file when it
    fits, else the best transcode under the cap (the smallest when none fits)."""
    chosen = _FORMATS.get((fmt or "").lower())
    if chosen == "mp3":
        return "mp3-hifi" if max_kbps == 0 or max_kbps >= 320 else "mp3"
    if chosen is not None:
        return chosen
    if max_kbps == 0 or (source_kbps and max_kbps >= source_kbps):
        return "original"
    for kbps, encoding in ((320, "mp3-hifi"), (128, "mp3"), (96, "opus")):
        if max_kbps >= kbps:
            return encoding
    return "aacplus"


def library_stream_token(
    db: Session,
    services: Services,
    listener: Listener,
    track_id: int,
    requested: str,
    now: datetime,
) -> str:
    """A signed /audio/ token for any present track of the library, for a tier that plays it on
    demand; mp3-hifi only with high quality, as on every other path."""
    require_on_demand(services.settings, listener)
    track = catalog.track(db, track_id)
    encoding = encoding_for(services.settings, listener, requested, track.codec)
    return services.signer.audio_token(
        listener_id=listener.id,
        track_id=track.id,
        encoding=encoding,
        expires_at=now + timedelta(seconds=services.settings.audio_url_lifetime),
    )
