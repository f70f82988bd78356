"""v1 search/*: catalogue search, seed suggestions and station recommendations."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, RootModel

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import Empty, RequestModel, ResponseModel, absent_when_none
from airwave.api.v1.objects import (
    ArtImage,
    ArtistSummary,
    GenreStation,
    artist_summary,
    detail_url,
    genre_station,
    picture_art,
)
from airwave.core import ids, search
from airwave.errors import ErrorCode

SearchType = Literal["artist", "track", "album", "genre", "station"]
_KIND = {"AR": "artist", "AL": "album", "TR": "track", "GE": "genre", "ST": "station"}


class FullSearchRequest(RequestModel):
    query: str = Field(max_length=256)
    types: list[Annotated[str, Field(max_length=16)]] = Field(
        default_factory=lambda: ["AR", "TR", "AL", "GE", "ST"],
        max_length=32,
        description="any of AR, TR, AL, GE, ST; codes of other kinds (clients send e.g. CO, PL) "
        "are ignored",
    )
    type: str | None = Field(
        None,
        max_length=16,
        description="the older web client's single kind instead of `types`: `all` (artists, "
        "tracks and genres: what a station can grow from), `artist`, `track` or `genre`; "
        "ignored when `types` is given",
    )
    max_items_per_category: int | None = Field(
        None, ge=1, le=100, description="at most this many items of each kind (then no `count`)"
    )
    start: int = Field(0, ge=0, le=1000)
    count: int = Field(20, ge=1, le=100)


_OLDER_TYPE = {
    "all": ["AR", "TR", "GE"],
    "artist": ["AR"],
    "track": ["TR"],
    "song": ["TR"],
    "genre": ["GE"],
}


def _wanted(req: FullSearchRequest) -> list[str]:
    if "types" not in req.model_fields_set and req.type is not None:
        return _OLDER_TYPE.get(req.type.lower(), [])
    return [t for t in req.types if t in _KIND]


class SearchItem(ResponseModel):
    type: SearchType = Field(description="what the item is (the `types` code AR, TR, ... by name)")
    pandora_id: str
    music_id: str
    name: str
    artist_name: str | None = None
    seo_token: str | None = absent_when_none("artists, albums and tracks")
    detail_url: str | None = absent_when_none("artists, albums and tracks: the web player's page")
    listener_count: int | None = absent_when_none(
        "artists, tracks and genres: listeners with a station seeded by it"
    )
    art: list[ArtImage]
    score: float = Field(
        description="higher is better: 4.x exact, 3.x prefix, 2.x word, 1.x fuzzy match"
    )


class SearchResults(ResponseModel):
    items: list[SearchItem]


@registry.endpoint(
    "search/fullSearch",
    request=FullSearchRequest,
    response=SearchResults,
    notes="""
    Case- and accent-insensitive. Ranked exact name > name starts with the query > every query
    word starts a word of the name > similar spelling (trigram similarity >= 0.3). `ST` finds the
    listener's own stations by name.
    """,
)
def full_search(call: Call, req: FullSearchRequest) -> SearchResults:
    """Artists, albums, tracks, genres and the listener's stations matching a query, best first."""
    wanted, listener_id, db = _wanted(req), call.require_listener().id, call.reader()
    if req.max_items_per_category is None:
        found = search.full_search(db, listener_id, req.query, wanted, req.start, req.count)
    else:
        each = [
            search.full_search(db, listener_id, req.query, [kind], 0, req.max_items_per_category)
            for kind in wanted
        ]
        found = sorted((f for kind in each for f in kind), key=lambda f: -f.score)
    return SearchResults(
        items=[
            SearchItem(
                type=_KIND[f.kind],
                pandora_id=ids.pandora_id(_KIND[f.kind], f.ref_id),
                music_id=str(f.ref_id) if f.kind == "ST" else ids.music_id(_KIND[f.kind], f.ref_id),
                name=f.name,
                artist_name=f.artist_name,
                seo_token=f.seo_token,
                detail_url=detail_url(call, f.seo_token) if f.seo_token else None,
                listener_count=f.listener_count,
                art=picture_art(call, f.picture),
                score=f.score,
            )
            for f in found
        ]
    )


class SeedSuggestionsRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    seed_music_id: str | None = Field(None, max_length=1024)
    max_results: int = Field(10, ge=1, le=100)


class SeedSuggestions(RootModel[list[ArtistSummary]]):
    """A JSON list of artists (spec §7: "→ list of artists")."""


@registry.endpoint(
    "search/getSeedSuggestions",
    request=SeedSuggestionsRequest,
    response=SeedSuggestions,
    errors=[
        ErrorCode.STATION_DOES_NOT_EXIST,
        ErrorCode.USER_NOT_AUTHORIZED,
        ErrorCode.NOT_FOUND,
        ErrorCode.INVALID_PANDORA_TYPE,
    ],
    notes="""
    Artists close to `seedMusicId` (an artist, or the artist of a track or album) in the similarity
    space; without it, artists close to the station's seeds and thumbs-up that are not seeds yet.
    """,
)
def seed_suggestions(call: Call, req: SeedSuggestionsRequest) -> SeedSuggestions:
    """Artists worth adding as seeds to a station."""
    found = search.seed_suggestions(
        call.reader(),
        call.require_listener().id,
        req.station_id,
        req.seed_music_id,
        req.max_results,
    )
    return SeedSuggestions([artist_summary(call, a) for a in found])


class Recommendations(ResponseModel):
    artists: list[ArtistSummary]
    genre_stations: list[GenreStation]


@registry.endpoint(
    "search/getStationRecommendations",
    request=Empty,
    response=Recommendations,
    notes="""
    Artists and genre stations drawn from the listener's thumbs-up and plays (through the similarity
    space), leaving out what their stations are already seeded with. A listener with no history gets
    the library's biggest artists and genres.
    """,
)
def station_recommendations(call: Call, req: Empty) -> Recommendations:
    """New stations the listener is likely to enjoy."""
    found = search.recommendations(call.reader(), call.require_listener().id)
    return Recommendations(
        artists=[artist_summary(call, a) for a in found.artists],
        genre_stations=[genre_station(call, g) for g in found.genres],
    )
