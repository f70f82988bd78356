"""v1 search/*: catalogue search, seed suggestions and station recommendations."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from sqlalchemy import select

from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import Empty, RequestModel, ResponseModel
from airwave.api.v1.music import artist_art, nearest_artists
from airwave.api.v1.objects import ArtImage, ArtistSummary, art, artist_summary
from airwave.core import catalog, ids, search, stations
from airwave.core.engine import similar
from airwave.errors import ErrorCode
from airwave.library.names import search_key
from airwave.store.models import Album, Artist, Track

SearchType = Literal["AR", "TR", "AL", "GE", "ST"]
_KIND = {"AR": "artist", "AL": "album", "TR": "track", "GE": "genre"}


class FullSearchRequest(RequestModel):
    query: str = Field(max_length=256)
    types: list[SearchType] = Field(default_factory=lambda: ["AR", "TR", "AL", "GE", "ST"], max_length=5)
    start: int = Field(0, ge=0, le=1000)
    count: int = Field(20, ge=1, le=100)


class SearchItem(ResponseModel):
    type: SearchType
    pandora_id: str
    music_id: str
    name: str
    artist_name: str | None = None
    art: list[ArtImage]
    score: float = Field(description="higher is better: 4.x exact, 3.x prefix, 2.x word, 1.x fuzzy match")


class SearchResults(ResponseModel):
    items: list[SearchItem]


@registry.endpoint(
    "search/fullSearch", request=FullSearchRequest, response=SearchResults,
    notes="""
    Case- and accent-insensitive. Ranked exact name > name starts with the query > every query
    word starts a word of the name > similar spelling (trigram similarity >= 0.3). `ST` finds the
    listener's own stations by name.
    """,
)
def full_search(call: Call, req: FullSearchRequest) -> SearchResults:
    """Artists, albums, tracks, genres and the listener's stations matching a query, best first."""
    db = call.reader()
    wanted = req.start + req.count
    kinds = tuple(t for t in req.types if t in _KIND)
    hits = search.search(db, req.query, kinds, wanted)
    items: list[SearchItem] = []
    for hit in hits:
        kind = _KIND[hit.kind]
        if hit.kind == "AR":
            artwork = artist_art(call, db.get(Artist, hit.ref_id))
            artist_name = None
        elif hit.kind == "AL":
            artwork = art(call, catalog.art_of(db, db.get(Album, hit.ref_id).art_id))
            artist_name = hit.context or None
        elif hit.kind == "TR":
            track = db.get(Track, hit.ref_id)
            artwork = art(call, catalog.art_of(db, db.get(Album, track.album_id).art_id))
            artist_name = hit.context or None
        else:
            artwork, artist_name = [], None
        items.append(SearchItem(type=hit.kind, pandora_id=ids.pandora_id(kind, hit.ref_id),
                                music_id=ids.music_id(kind, hit.ref_id), name=hit.name, artist_name=artist_name,
                                art=artwork, score=hit.score))
    if "ST" in req.types:
        words = search_key(req.query).split()
        if words:
            for station in stations.find_by_name(db, call.require_listener().id, words, wanted):
                exact = search_key(station.name) == " ".join(words)
                items.append(SearchItem(type="ST", pandora_id=ids.pandora_id("station", station.id),
                                        music_id=str(station.id), name=station.name, art=[],
                                        score=4.999 if exact else 2.5))
        items.sort(key=lambda i: -i.score)
    return SearchResults(items=items[req.start:req.start + req.count])


class SeedSuggestionsRequest(RequestModel):
    station_id: str = Field(min_length=1, max_length=64)
    seed_music_id: str | None = Field(None, max_length=1024)
    max_results: int = Field(10, ge=1, le=100)


class SeedSuggestions(ResponseModel):
    artists: list[ArtistSummary]


def _artists(call: Call, artist_ids: list[int]) -> list[ArtistSummary]:
    rows = {a.id: a for a in call.reader().scalars(select(Artist).where(Artist.id.in_(artist_ids)))}
    return [artist_summary(call, rows[a], artist_art(call, rows[a])) for a in artist_ids if a in rows]


@registry.endpoint(
    "search/getSeedSuggestions", request=SeedSuggestionsRequest, response=SeedSuggestions,
    errors=[ErrorCode.STATION_DOES_NOT_EXIST, ErrorCode.USER_NOT_AUTHORIZED, ErrorCode.NOT_FOUND,
            ErrorCode.INVALID_PANDORA_TYPE],
    notes="""
    Artists close to `seedMusicId` (an artist, or the artist of a track or album) in the similarity
    space; without it, artists close to the station's seeds and thumbs-up that are not seeds yet.
    """,
)
def seed_suggestions(call: Call, req: SeedSuggestionsRequest) -> SeedSuggestions:
    """Artists worth adding as seeds to a station."""
    db = call.reader()
    station = stations.get_station(db, call.require_listener().id, req.station_id)
    if not req.seed_music_id:
        return SeedSuggestions(artists=_artists(call, similar.seed_suggestions(db, station, req.max_results)))
    ref = catalog.resolve(req.seed_music_id, "artist", "album", "track")
    if ref.kind == "track":
        artist_id = catalog.track(db, ref.id).artist_id
    elif ref.kind == "album":
        artist_id = catalog.album(db, ref.id).artist_id
    else:
        artist_id = catalog.artist(db, ref.id).id
    return SeedSuggestions(artists=[artist_summary(call, a, artist_art(call, a))
                                    for a in nearest_artists(db, artist_id, req.max_results)])


class GenreRecommendation(ResponseModel):
    music_id: str
    pandora_id: str
    name: str
    station_name: str
    art: list[ArtImage]


class Recommendations(ResponseModel):
    artists: list[ArtistSummary]
    genre_stations: list[GenreRecommendation]


@registry.endpoint(
    "search/getStationRecommendations", request=Empty, response=Recommendations,
    notes="""
    Artists and genre stations drawn from the listener's thumbs-up and plays (through the similarity
    space), leaving out what their stations are already seeded with. A listener with no history gets
    the library's biggest artists and genres.
    """,
)
def station_recommendations(call: Call, req: Empty) -> Recommendations:
    """New stations the listener is likely to enjoy."""
    db = call.reader()
    artist_ids, genre_ids = similar.recommendations(db, call.require_listener().id)
    genres = []
    for genre_id in genre_ids:
        genre = catalog.genre(db, genre_id)
        sample = catalog.track_views(db, catalog.genre_sample(db, genre_id, 1))
        genres.append(GenreRecommendation(
            music_id=ids.music_id("genre", genre_id), pandora_id=ids.pandora_id("genre", genre_id), name=genre.name,
            station_name=f"{genre.name} Radio", art=art(call, sample[0].album_art) if sample else []))
    return Recommendations(artists=_artists(call, artist_ids), genre_stations=genres)
