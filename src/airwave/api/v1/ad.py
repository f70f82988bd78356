"""v1 ad/*: the ads of free listeners (getAdList, registerImpression, brokenAd); fragment ad
items are in objects."""

from __future__ import annotations

from pydantic import Field

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import EmptyResponse, RequestModel, ResponseModel
from airwave.api.v1.objects import ArtImage, AudioFormat, art
from airwave.core.radio import ads
from airwave.errors import ErrorCode


class AdListRequest(RequestModel):
    station_id: str | None = Field(None, min_length=1, max_length=64)
    audio_format: AudioFormat = Field(
        "aacplus", description="the encoding of audioURL, as for getFragment"
    )


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
    "ad/getAdList",
    request=AdListRequest,
    response=AdListResponse,
    writes=True,
    errors=[ErrorCode.STATION_DOES_NOT_EXIST, ErrorCode.USER_NOT_AUTHORIZED],
    notes="""
    For listeners whose tier has ads (free): one ad, chosen among the operator's active campaigns
    (inside their date window, not disabled, fewer than `ad_broken_threshold` broken reports) at
    random in proportion to their weight, with a fresh `adToken` (valid 24 h). An empty list for
    tiers without ads or when no campaign is active. `stationId`, when given, must be one of the
    listener's stations. Ads issued here do not reset the interval at which getFragment places ads.
    """,
)
def get_ad_list(call: Call, req: AdListRequest) -> AdListResponse:
    """Ads to play now, each with its own adToken."""
    listener = call.require_listener()
    with call.write() as db:
        issued = ads.ad_list_items(
            db, call.services, call.base_url, listener, req.station_id, req.audio_format, call.now()
        )
    return AdListResponse(
        ads=[
            AdObject(
                ad_token=item.spin.token,
                title=item.campaign.title,
                audio_url=item.links.audio_url,
                audio_encoding=item.links.encoding,
                art=art(call, item.art),
                click_through_url=item.campaign.click_url,
                track_length=round(item.campaign.duration),
            )
            for item in issued
        ]
    )


class ImpressionRequest(RequestModel):
    ad_tokens: list[str] = Field(min_length=1, max_length=100)


@registry.endpoint(
    "ad/registerImpression",
    request=ImpressionRequest,
    response=EmptyResponse,
    writes=True,
    errors=[ErrorCode.USER_NOT_AUTHORIZED, ErrorCode.CONTENT_HAS_EXPIRED],
    notes="""
    Counts one impression per `adToken` (from getAdList or a fragment's ad item) in the operator's
    report (campaign and UTC day); registering a token again, here or through the ad's
    `audioReceiptURL`, changes nothing and still answers `{}`. All tokens are checked before any is
    counted: an unknown token answers `NOT_FOUND`, another listener's `USER_NOT_AUTHORIZED`, one
    older than 24 h `CONTENT_HAS_EXPIRED`, and then none of the list is counted. 1 to 100 tokens per
    call.
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
    "ad/brokenAd",
    request=BrokenAdRequest,
    response=EmptyResponse,
    writes=True,
    errors=[ErrorCode.USER_NOT_AUTHORIZED, ErrorCode.CONTENT_HAS_EXPIRED],
    notes="""
    Reports that an ad could not be played. Each `adToken` counts once (again: `{}`, nothing
    changes); a campaign with `ad_broken_threshold` reports (default 3) is no longer served until
    the operator replaces it. Token errors as for registerImpression.
    """,
)
def broken_ad(call: Call, req: BrokenAdRequest) -> EmptyResponse:
    """Report an ad that would not play."""
    listener = call.require_listener()
    with call.write() as db:
        ads.report_broken(db, listener.id, req.ad_token, call.now())
    return EmptyResponse()
