"""v1 ad/*: the ads of free listeners (getAdList, registerImpression, brokenAd) and the ad items of fragments."""

from __future__ import annotations

import random
import secrets
from datetime import timedelta

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import EmptyResponse, RequestModel, ResponseModel
from airwave.api.v1.objects import ArtImage, art
from airwave.api.v1.playlist import AudioFormat, TrackKey, TrackObject
from airwave.core import ads, ids, stations
from airwave.core.ads import AdBreak
from airwave.errors import ErrorCode
from airwave.store.models import AdCampaign, AdSpin, Artwork, Listener, Station


class AdAudio:
    """The signed audio and receipt URLs of one issued ad."""

    def __init__(self, call: Call, listener: Listener, spin: AdSpin, campaign: AdCampaign,
                 audio_format: str | None) -> None:
        from airwave.audio.formats import negotiate
        from airwave.audio.urls import audio_url, receipt_url, skip_url

        policy = call.settings.tier(listener.tier)
        self.encoding = negotiate(audio_format, high_quality=policy.high_quality and listener.high_quality_streaming,
                                  source_codec=campaign.codec)
        expires = call.now() + timedelta(seconds=call.settings.audio_url_lifetime)
        signer = call.services.signer
        token = signer.ad_audio_token(listener_id=listener.id, campaign_id=campaign.id, ad_spin_id=spin.id,
                                      encoding=self.encoding, expires_at=expires)
        receipt = signer.ad_receipt_token(listener_id=listener.id, ad_spin_id=spin.id, expires_at=expires)
        self.url = audio_url(call.base_url, token)
        self.receipt_url = receipt_url(call.base_url, receipt)
        self.skip_url = skip_url(call.base_url, receipt)


def _art(call: Call, campaign: AdCampaign) -> list[ArtImage]:
    return art(call, call.reader().get(Artwork, campaign.art_id) if campaign.art_id else None)


def ad_track_object(call: Call, listener: Listener, station: Station, brk: AdBreak,
                    audio_format: str | None) -> TrackObject:
    """The track object of an ad placed in a fragment (the shape is documented on playlist/getFragment)."""
    spin, campaign = brk.spin, brk.campaign
    audio = AdAudio(call, listener, spin, campaign, audio_format)
    pandora = ids.pandora_id("ad", campaign.id)
    return TrackObject(
        track_token=spin.token, music_id="", pandora_id=pandora, track_type="Ad", song_title=campaign.title,
        artist_name=ads.ARTIST_NAME, artist_music_id="", album_title="", album_art=_art(call, campaign),
        artist_art=[], track_length=round(campaign.duration), rating=0, station_id=str(station.id),
        file_gain="0.00", audio_url=audio.url, audio_encoding=audio.encoding,
        audio_receipt_url=audio.receipt_url, audio_skip_url=audio.skip_url, genre=[], user_seed=None,
        is_seed=False, is_bookmarked=False, is_featured=False, is_compilation=False, composer_name="",
        allow_skip=False, allow_feedback=False, allow_tired_of_track=False, allow_start_station_from_track=False,
        allow_share_track=False, allow_buy_track=False, rights=[], identity=f"{pandora}:{spin.id}",
        track_key=TrackKey(track_id=pandora, track_type="Ad", spin_id=str(spin.id)),
        song_detail_url=campaign.click_url, artist_detail_url="", album_detail_url="",
        track_seo_token="", artist_seo_token="", album_seo_token="",
        listening_timestamp=int(spin.issued_at.timestamp() * 1000),
        ad_token=spin.token, click_through_url=campaign.click_url,
    )


class AdListRequest(RequestModel):
    station_id: str | None = Field(None, min_length=1, max_length=64)
    audio_format: AudioFormat = Field("aacplus", description="the encoding of audioURL, as for getFragment")


class AdObject(ResponseModel):
    """One ad to play (spec §7 ad)."""

    ad_token: str
    title: str
    audio_url: str = Field(alias="audioURL")
    audio_encoding: str = Field(description="what audioURL really delivers")
    art: list[ArtImage]
    click_through_url: str
    track_length: int


class AdListResponse(ResponseModel):
    ads: list[AdObject]


@registry.endpoint(
    "ad/getAdList", request=AdListRequest, response=AdListResponse, writes=True,
    errors=[ErrorCode.STATION_DOES_NOT_EXIST, ErrorCode.USER_NOT_AUTHORIZED],
    notes="""
    For listeners whose tier has ads (free): one ad, chosen among the operator's active campaigns (inside
    their date window, not disabled, fewer than `ad_broken_threshold` broken reports) at random in
    proportion to their weight, with a fresh `adToken` (valid 24 h). An empty list for tiers without ads
    or when no campaign is active. `stationId`, when given, must be one of the listener's stations. Ads
    issued here do not reset the interval at which getFragment places ads.
    """,
)
def get_ad_list(call: Call, req: AdListRequest) -> AdListResponse:
    """Ads to play now, each with its own adToken."""
    listener = call.require_listener()
    if not ads.serves_ads(call.settings, listener):
        return AdListResponse(ads=[])
    with call.write() as db:
        station_id = stations.get_station(db, listener.id, req.station_id).id if req.station_id else None
        issued = ads.ad_list(db, call.settings, listener, station_id, call.now(), random.Random(secrets.randbits(64)))
        db.expunge_all()
    out = []
    for spin, campaign in issued:
        audio = AdAudio(call, listener, spin, campaign, req.audio_format)
        out.append(AdObject(ad_token=spin.token, title=campaign.title, audio_url=audio.url,
                            audio_encoding=audio.encoding, art=_art(call, campaign),
                            click_through_url=campaign.click_url, track_length=round(campaign.duration)))
    return AdListResponse(ads=out)


class ImpressionRequest(RequestModel):
    ad_tokens: list[str] = Field(min_length=1, max_length=100)


@registry.endpoint(
    "ad/registerImpression", request=ImpressionRequest, response=EmptyResponse, writes=True,
    errors=[ErrorCode.USER_NOT_AUTHORIZED, ErrorCode.CONTENT_HAS_EXPIRED],
    notes="""
    Counts one impression per `adToken` (from getAdList or a fragment's ad item) in the operator's report
    (campaign and UTC day); registering a token again, here or through the ad's `audioReceiptURL`, changes
    nothing and still answers `{}`. All tokens are checked before any is counted: an unknown token answers
    `NOT_FOUND`, another listener's `USER_NOT_AUTHORIZED`, one older than 24 h `CONTENT_HAS_EXPIRED`, and
    then none of the list is counted. 1 to 100 tokens per call.
    """,
)
def register_impression(call: Call, req: ImpressionRequest) -> EmptyResponse:
    """Report that ads were played."""
    listener = call.require_listener()
    with call.write() as db:
        ads.register_impressions(db, listener.id, req.ad_tokens, call.now())
    return EmptyResponse()


class BrokenAdRequest(RequestModel):
    ad_token: str = Field(min_length=1, max_length=64)


@registry.endpoint(
    "ad/brokenAd", request=BrokenAdRequest, response=EmptyResponse, writes=True,
    errors=[ErrorCode.USER_NOT_AUTHORIZED, ErrorCode.CONTENT_HAS_EXPIRED],
    notes="""
    Reports that an ad could not be played. Each `adToken` counts once (again: `{}`, nothing changes); a
    campaign with `ad_broken_threshold` reports (default 3) is no longer served until the operator replaces
    it. Token errors as for registerImpression.
    """,
)
def broken_ad(call: Call, req: BrokenAdRequest) -> EmptyResponse:
    """Report an ad that would not play."""
    listener = call.require_listener()
    with call.write() as db:
        ads.report_broken(db, listener.id, req.ad_token, call.now())
    return EmptyResponse()
