"""Ads for listeners whose tier has them: operator campaigns, choosing an ad, the fragment interval,
impressions (once per adToken), broken reports and the per-day impression report."""

from __future__ import annotations

import os
import random
import re
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.radio import delivery, stations
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.library import tags
from airwave.library.containment import Roots
from airwave.store import sql
from airwave.store.models import AdCampaign, AdImpressionDay, AdSpin, Artwork, Listener, Spin, Track

TOKEN_LIFETIME = timedelta(hours=24)
ARTIST_NAME = "Advertisement"
LOOKBACK_SPINS = (
    1000  # the interval rule sums at most this many recent tracks (enough for any sane interval)
)
MAX_TITLE = 256
_URL = re.compile(r"https?://[^\s/$.?#][^\s]*", re.IGNORECASE)


@dataclass(frozen=True)
class NewCampaign:
    """What the operator gives for a campaign (times are aware UTC; None = open-ended)."""

    source: Path
    title: str
    click_url: str
    art: Path | None = None
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    weight: int = 1


@dataclass(frozen=True)
class CampaignRow:
    """A campaign as `airwave ads list` shows it."""

    campaign: AdCampaign
    state: str  # active, scheduled, ended, disabled, broken
    impressions: int


@dataclass(frozen=True)
class AdBreak:
    """An ad placed in a fragment after `position` music tracks."""

    position: int
    spin: AdSpin
    campaign: AdCampaign


@dataclass(frozen=True)
class AdItem:
    """An issued ad as a client gets it: its token, campaign, art and signed URLs."""

    spin: AdSpin
    campaign: AdCampaign
    art: Artwork | None
    links: delivery.AudioLinks


@dataclass(frozen=True)
class ReportRow:
    campaign_id: int
    title: str
    day: str
    impressions: int


# ---------------------------------------------------------------- campaigns (operator)


def add_campaign(db: Session, settings: Settings, new: NewCampaign, now: datetime) -> AdCampaign:
    """Validate the file, art and window, copy the files under data_dir/ads and create the
    campaign."""
    title = " ".join(new.title.split())
    if not title or len(title) > MAX_TITLE:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"the title must be 1 to {MAX_TITLE} characters")
    if not _URL.fullmatch(new.click_url.strip()):
        raise ApiError(
            ErrorCode.INVALID_REQUEST,
            f"the click-through URL {new.click_url!r} is not an http(s) URL",
        )
    if new.weight < 1:
        raise ApiError(ErrorCode.INVALID_REQUEST, "the weight must be 1 or more")
    if new.starts_at and new.ends_at and new.ends_at <= new.starts_at:
        raise ApiError(ErrorCode.INVALID_REQUEST, "the end of the window must come after its start")
    source = new.source
    if not source.is_file() or not os.access(source, os.R_OK):
        raise ApiError(ErrorCode.INVALID_REQUEST, f"{source}: no such readable file")
    # the operator named this file: its own folder is where it may be read from
    own = Roots([os.path.dirname(os.path.realpath(source))])
    probed = tags.read(str(source), None, own)
    if isinstance(probed, tags.ReadError):
        raise ApiError(ErrorCode.INVALID_REQUEST, f"{source}: {probed.message}")
    if probed.duration <= 0:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"{source}: no audio in this file")
    picture = None
    if new.art is not None:
        art_root = Roots([os.path.dirname(os.path.realpath(new.art))])
        picture = tags.describe_image(str(new.art), art_root) if new.art.is_file() else None
        if picture is None:
            raise ApiError(ErrorCode.INVALID_REQUEST, f"{new.art}: not a readable image")
    folder = settings.ads_dir
    copied: list[Path] = []
    try:
        audio_copy = _copy(source, folder, f"{secrets.token_hex(8)}{source.suffix.lower()}")
        copied.append(audio_copy)
        art_id = None
        if new.art is not None and picture is not None:
            art_id = db.scalar(
                select(Artwork.id).where(Artwork.content_hash == picture.content_hash)
            )
            if art_id is None:
                art_copy = _copy(
                    new.art, folder / "art", f"{picture.content_hash}{new.art.suffix.lower()}"
                )
                copied.append(art_copy)
                artwork = Artwork(
                    content_hash=picture.content_hash,
                    source_path=str(art_copy),
                    embedded=False,
                    width=picture.width,
                    height=picture.height,
                    dominant_color=picture.dominant_color,
                )
                db.add(artwork)
                db.flush()
                art_id = artwork.id
        campaign = AdCampaign(
            title=title,
            path=str(audio_copy),
            codec=probed.codec,
            duration=probed.duration,
            click_url=new.click_url.strip(),
            art_id=art_id,
            starts_at=new.starts_at,
            ends_at=new.ends_at,
            weight=new.weight,
            disabled=False,
            broken_reports=0,
            created_at=now,
        )
        db.add(campaign)
        db.flush()
    except BaseException:
        for path in copied:
            path.unlink(missing_ok=True)
        raise
    return campaign


def _copy(source: Path, folder: Path, name: str) -> Path:
    """Copy through a temporary name so a crash never leaves half a file under the final one."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    tmp = folder / f".{name}.{secrets.token_hex(4)}.tmp"
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ApiError(
            ErrorCode.INVALID_REQUEST, f"{source}: cannot copy: {exc.strerror or exc}"
        ) from None
    return target


def require_campaign(db: Session, campaign_id: int) -> AdCampaign:
    campaign = db.get(AdCampaign, campaign_id)
    if campaign is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no ad campaign with id {campaign_id}")
    return campaign


def disable(db: Session, campaign_id: int) -> AdCampaign:
    """Stop serving a campaign (its URLs already issued stop delivering; its impressions stay in
    the report)."""
    campaign = require_campaign(db, campaign_id)
    campaign.disabled = True
    return campaign


def state_of(campaign: AdCampaign, now: datetime, threshold: int) -> str:
    if campaign.disabled:
        return "disabled"
    if campaign.broken_reports >= threshold:
        return "broken"
    if campaign.starts_at is not None and campaign.starts_at > now:
        return "scheduled"
    if campaign.ends_at is not None and campaign.ends_at <= now:
        return "ended"
    return "active"


def list_campaigns(db: Session, settings: Settings, now: datetime) -> list[CampaignRow]:
    totals = dict(
        db.execute(
            select(AdImpressionDay.campaign_id, func.sum(AdImpressionDay.impressions)).group_by(
                AdImpressionDay.campaign_id
            )
        ).all()
    )
    return [
        CampaignRow(c, state_of(c, now, settings.ad_broken_threshold), int(totals.get(c.id) or 0))
        for c in db.scalars(select(AdCampaign).order_by(AdCampaign.id))
    ]


def report(db: Session, since: date | None, until: date | None) -> list[ReportRow]:
    """Impressions per campaign and UTC day, both ends inclusive, oldest day first."""
    query = select(
        AdImpressionDay.campaign_id,
        AdCampaign.title,
        AdImpressionDay.day,
        AdImpressionDay.impressions,
    ).join(AdCampaign, AdCampaign.id == AdImpressionDay.campaign_id)
    if since is not None:
        query = query.where(AdImpressionDay.day >= since.isoformat())
    if until is not None:
        query = query.where(AdImpressionDay.day <= until.isoformat())
    rows = db.execute(query.order_by(AdImpressionDay.day, AdImpressionDay.campaign_id)).all()
    return [ReportRow(r[0], r[1], r[2], r[3]) for r in rows]


# ---------------------------------------------------------------- choosing and issuing


def active_campaigns(db: Session, settings: Settings, now: datetime) -> list[AdCampaign]:
    """Campaigns that may be served now: in their window, enabled, below the broken-report
    threshold."""
    return list(
        db.scalars(
            select(AdCampaign)
            .where(
                AdCampaign.disabled.is_(False),
                AdCampaign.weight > 0,
                AdCampaign.broken_reports < settings.ad_broken_threshold,
                or_(AdCampaign.starts_at.is_(None), AdCampaign.starts_at <= now),
                or_(AdCampaign.ends_at.is_(None), AdCampaign.ends_at > now),
            )
            .order_by(AdCampaign.id)
        )
    )


def choose(campaigns: Sequence[AdCampaign], rng: random.Random) -> AdCampaign | None:
    """One campaign, chosen at random in proportion to its weight."""
    if not campaigns:
        return None
    return rng.choices(list(campaigns), weights=[c.weight for c in campaigns])[0]


def serves_ads(settings: Settings, listener: Listener) -> bool:
    return settings.tier(listener.tier).ads


def issue(
    db: Session,
    listener_id: int,
    campaign: AdCampaign,
    station_id: int | None,
    issued_at: datetime,
    *,
    in_fragment: bool,
) -> AdSpin:
    """A new adToken for this listener and campaign."""
    spin = AdSpin(
        token=secrets.token_urlsafe(18),
        listener_id=listener_id,
        campaign_id=campaign.id,
        station_id=station_id,
        in_fragment=in_fragment,
        issued_at=issued_at,
        impression_at=None,
        reported_broken=False,
    )
    db.add(spin)
    return spin


def ad_list(
    db: Session,
    settings: Settings,
    listener: Listener,
    station_id: int | None,
    now: datetime,
    rng: random.Random | None = None,
) -> list[tuple[AdSpin, AdCampaign]]:
    """ad/getAdList: one freshly issued ad for listeners whose tier has ads, none for others or
    without campaigns."""
    if not serves_ads(settings, listener):
        return []
    campaign = choose(
        active_campaigns(db, settings, now), rng or random.Random(secrets.randbits(64))
    )
    if campaign is None:
        return []
    spin = issue(db, listener.id, campaign, station_id, now, in_fragment=False)
    db.flush()
    return [(spin, campaign)]


def ad_item(
    db: Session,
    issuer: delivery.Issuer,
    settings: Settings,
    listener: Listener,
    spin: AdSpin,
    campaign: AdCampaign,
    audio_format: str | None,
) -> AdItem:
    """An issued ad with its art and its audio in the negotiated encoding."""
    encoding = delivery.encoding_for(settings, listener, audio_format, campaign.codec)
    art = db.get(Artwork, campaign.art_id) if campaign.art_id else None
    return AdItem(spin, campaign, art, issuer.ad(listener.id, campaign.id, spin.id, encoding))


def ad_list_items(
    db: Session,
    services: Services,
    base_url: str,
    listener: Listener,
    station_id: str | None,
    audio_format: str | None,
    now: datetime,
) -> list[AdItem]:
    """ad/getAdList: issue an ad (tiers with ads) for one of the listener's stations or none."""
    if not serves_ads(services.settings, listener):
        return []
    station = stations.get_station(db, listener.id, station_id).id if station_id else None
    issued = ad_list(db, services.settings, listener, station, now)
    issuer = delivery.Issuer(services, base_url, now)
    return [
        ad_item(db, issuer, services.settings, listener, spin, campaign, audio_format)
        for spin, campaign in issued
    ]


def listened_since_last_ad(db: Session, listener_id: int, exclude: Sequence[int] = ()) -> float:
    """Seconds of music issued to the listener since their last fragment ad (replays are on
    demand: not counted)."""
    since = db.scalar(
        select(func.max(AdSpin.issued_at)).where(
            AdSpin.listener_id == listener_id, AdSpin.in_fragment.is_(True)
        )
    )
    recent = (
        select(Track.duration.label("seconds"))
        .join(Spin, Spin.track_id == Track.id)
        .where(Spin.listener_id == listener_id, Spin.is_replay.is_(False))
    )
    if exclude:
        recent = recent.where(Spin.id.notin_(list(exclude)))
    if since is not None:
        recent = recent.where(Spin.issued_at > since)
    inner = recent.order_by(Spin.issued_at.desc()).limit(LOOKBACK_SPINS).subquery()
    return float(db.scalar(select(func.coalesce(func.sum(inner.c.seconds), 0.0))) or 0.0)


def fragment_breaks(
    db: Session,
    settings: Settings,
    listener: Listener,
    station_id: int,
    spins: Sequence[Spin],
    rng: random.Random,
    durations: dict[int, float] | None = None,
) -> list[AdBreak]:
    """Ads for a fragment whose spins are already written: one after each `ad_interval_minutes` of
    music (`durations`: the spins' track lengths, when already read).

    The running total starts with the music issued since the listener's last fragment ad and
    restarts at each ad, so two ads are never adjacent (not even across fragments). None for tiers
    without ads or when no campaign is active.
    """
    if not spins or not serves_ads(settings, listener):
        return []
    campaigns = active_campaigns(db, settings, spins[0].issued_at)
    if not campaigns:
        return []
    interval = settings.ad_interval_minutes * 60
    pending = listened_since_last_ad(db, listener.id, [s.id for s in spins])
    if durations is None:
        durations = dict(
            db.execute(
                select(Track.id, Track.duration).where(Track.id.in_({s.track_id for s in spins}))
            ).all()
        )
    breaks: list[AdBreak] = []

    def place(position: int, issued_at: datetime) -> None:
        campaign = choose(campaigns, rng)
        assert campaign is not None
        spin = issue(db, listener.id, campaign, station_id, issued_at, in_fragment=True)
        breaks.append(AdBreak(position, spin, campaign))

    if (
        pending >= interval
    ):  # owed from before (e.g. no campaign was active then): the fragment opens with it
        place(0, spins[0].issued_at - timedelta(microseconds=1))
        pending = 0.0
    for index, spin in enumerate(spins):
        pending += durations.get(spin.track_id, 0.0)
        if pending >= interval:
            # same instant as the track before it: the count after this ad starts with the next
            # track
            place(index + 1, spin.issued_at)
            pending = 0.0
    db.flush()
    return breaks


# ---------------------------------------------------------------- tokens, impressions, broken
# reports


def ad_spin_by_token(db: Session, listener_id: int, token: str, now: datetime) -> AdSpin:
    """The ad an adToken names: NOT_FOUND, USER_NOT_AUTHORIZED (another listener's) or
    CONTENT_HAS_EXPIRED."""
    spin = db.scalar(select(AdSpin).where(AdSpin.token == token[:64]))
    if spin is None:
        raise ApiError(ErrorCode.NOT_FOUND, "unknown adToken")
    if spin.listener_id != listener_id:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "that adToken was issued to another listener")
    if now - spin.issued_at > TOKEN_LIFETIME:
        raise ApiError(ErrorCode.CONTENT_HAS_EXPIRED, "that adToken is more than 24 hours old")
    return spin


def register_impressions(
    db: Session, listener_id: int, tokens: Sequence[str], now: datetime
) -> int:
    """Count the impression of each adToken, once per token; all tokens are checked before any is
    counted."""
    spins = [ad_spin_by_token(db, listener_id, t, now) for t in dict.fromkeys(tokens)]
    return sum(_count_impression(db, s.id, s.campaign_id, now) for s in spins)


def _count_impression(db: Session, ad_spin_id: int, campaign_id: int, now: datetime) -> bool:
    """Mark the spin's impression (only the first time) and add it to its campaign's day."""
    marked = db.execute(
        update(AdSpin)
        .where(AdSpin.id == ad_spin_id, AdSpin.impression_at.is_(None))
        .values(impression_at=now)
        .execution_options(synchronize_session=False)
    )
    if not marked.rowcount:  # type: ignore[attr-defined]
        return False
    day = now.astimezone(UTC).date().isoformat()
    statement = sql.insert_for(db, AdImpressionDay).values(
        campaign_id=campaign_id, day=day, impressions=1
    )
    db.execute(
        statement.on_conflict_do_update(
            index_elements=[AdImpressionDay.campaign_id, AdImpressionDay.day],
            set_={"impressions": AdImpressionDay.impressions + 1},
        )
    )
    return True


def report_broken(db: Session, listener_id: int, token: str, now: datetime) -> bool:
    """ad/brokenAd: one report per adToken; the campaign stops being served at
    `ad_broken_threshold` reports."""
    spin = ad_spin_by_token(db, listener_id, token, now)
    marked = db.execute(
        update(AdSpin)
        .where(AdSpin.id == spin.id, AdSpin.reported_broken.is_(False))
        .values(reported_broken=True)
        .execution_options(synchronize_session=False)
    )
    if not marked.rowcount:  # type: ignore[attr-defined]
        return False
    db.execute(
        update(AdCampaign)
        .where(AdCampaign.id == spin.campaign_id)
        .values(broken_reports=AdCampaign.broken_reports + 1)
        .execution_options(synchronize_session=False)
    )
    return True


def record_receipt(
    db: Session, listener_id: int, ad_spin_id: int, completed: bool, now: datetime
) -> tuple[bool, float]:
    """An ad's audioReceiptURL (completed) counts its impression like ad/registerImpression; its
    skip URL
    records nothing. Returns (counted now, the ad's length in seconds)."""
    spin = db.get(AdSpin, ad_spin_id)
    if spin is None:
        raise ApiError(ErrorCode.NOT_FOUND, "this ad is no longer on record")
    if spin.listener_id != listener_id:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "this receipt belongs to another listener")
    duration = (
        db.scalar(select(AdCampaign.duration).where(AdCampaign.id == spin.campaign_id)) or 0.0
    )
    counted = _count_impression(db, spin.id, spin.campaign_id, now) if completed else False
    return counted, float(duration)
