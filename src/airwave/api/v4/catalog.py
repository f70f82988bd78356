"""v4 catalog/*: the catalogue as the on-demand clients read it (Premium, spec §7b), in
annotations (api/annotations.py) over core.music."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, RootModel, model_validator

from airwave.api.annotations import Annotation, annotate, annotation
from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import RequestModel, ResponseModel, absent_when_none
from airwave.core import ids, music
from airwave.core.catalog import browse, catalog
from airwave.core.radio import delivery
from airwave.errors import ApiError, ErrorCode

CATALOG_ERRORS = [ErrorCode.NOT_FOUND, ErrorCode.INVALID_PANDORA_TYPE]
ERRORS = [ErrorCode.LISTENER_NOT_AUTHORIZED, *CATALOG_ERRORS]  # what is on demand
PandoraId = Annotated[str, Field(min_length=1, max_length=64)]


class V4Request(RequestModel):
    """Published clients wrap v4 bodies as `{"request": {...}}`; both spellings are taken."""

    @model_validator(mode="before")
    @classmethod
    def _unwrap(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and set(data) == {"request"}
            and isinstance(data["request"], dict)
        ):
            return data["request"]
        return data


def allowed(call: Call) -> None:
    """Tiers without on-demand listening are refused (LISTENER_NOT_AUTHORIZED)."""
    delivery.require_on_demand(call.settings, call.require_listener())


def _notes(call: Call, found: dict[ids.Ref, music.Note]) -> dict[str, Annotation]:
    on_demand = call.settings.tier(call.require_listener().tier).on_demand
    return {
        ids.pandora_id(ref.kind, ref.id): annotation(call, note, on_demand)
        for ref, note in found.items()
    }


class DetailsRequest(V4Request):
    pandora_ids: list[PandoraId] | None = Field(None, max_length=500)
    pandora_id: PandoraId | None = Field(None, description="one id (clients send this spelling)")


class HeroImage(ResponseModel):
    art_url: str
    dominant_color: str


class ArtistDetails(ResponseModel):
    pandora_id: str
    hero_image: HeroImage
    top_tracks: list[str] = Field(description="pandoraIds, most played first")
    top_albums: list[str] = Field(description="pandoraIds, newest first")
    similar_artists: list[str]
    station_listener_count: int


class Details(ResponseModel):
    annotations: dict[str, Annotation]
    artist_details: ArtistDetails | None = absent_when_none(
        "with `pandoraId` naming an artist: its page"
    )


@registry.endpoint(
    "catalog/getDetails",
    versions=(4,),
    request=DetailsRequest,
    response=Details,
    errors=CATALOG_ERRORS,
    notes="""
    `pandoraIds` (a list) answers the annotations of the tracks, albums, artists and genres among
    them; other and unknown ids are left out. `pandoraId` (one id, as published clients send it)
    also answers, for an artist, `artistDetails` (its most played tracks, albums and similar
    artists, every id annotated). Any signed-in listener may browse: `rightsInfo.hasInteractive`
    says whether their tier plays it on demand.
    """,
)
def get_details(call: Call, req: DetailsRequest) -> Details:
    """Annotations of catalogue objects, and an artist's page."""
    if (req.pandora_ids is None) == (req.pandora_id is None):
        raise ApiError(ErrorCode.INVALID_REQUEST, "give pandoraIds or pandoraId")
    db = call.reader()
    if req.pandora_ids is not None:
        refs = [r for r in map(ids.parse, req.pandora_ids) if r is not None]
        on_demand = call.settings.tier(call.require_listener().tier).on_demand
        return Details(annotations=annotate(call, refs, on_demand))
    ref = catalog.resolve(req.pandora_id or "", "artist", "album", "track", "genre", "playlist")
    if ref.kind != "artist":
        on_demand = call.settings.tier(call.require_listener().tier).on_demand
        return Details(annotations=annotate(call, [ref], on_demand))
    page = music.artist_details(db, ref.id)
    notes = _notes(call, page.notes)
    me = notes[ids.pandora_id("artist", ref.id)]
    return Details(
        annotations=notes,
        artist_details=ArtistDetails(
            pandora_id=me.pandora_id,
            hero_image=HeroImage(art_url=me.icon.art_url, dominant_color=me.icon.dominant_color),
            top_tracks=[ids.pandora_id(r.kind, r.id) for r in page.top_tracks],
            top_albums=[ids.pandora_id(r.kind, r.id) for r in page.albums],
            similar_artists=[ids.pandora_id(r.kind, r.id) for r in page.similar],
            station_listener_count=me.listener_count or 0,
        ),
    )


class ArtistRequest(V4Request):
    artist_pandora_id: PandoraId


class Discography(ResponseModel):
    albums: list[Annotation] = Field(description="newest first")


@registry.endpoint(
    "catalog/getArtistDiscography",
    versions=(4,),
    request=ArtistRequest,
    response=Discography,
    errors=CATALOG_ERRORS,
)
def get_artist_discography(call: Call, req: ArtistRequest) -> Discography:
    """An artist's albums."""
    ref = catalog.resolve(req.artist_pandora_id, "artist")
    on_demand = call.settings.tier(call.require_listener().tier).on_demand
    albums = music.artist_albums(call.reader(), ref.id)
    return Discography(albums=[annotation(call, a, on_demand) for a in albums])


class ArtistTracksRequest(ArtistRequest):
    offset: int = Field(0, ge=0, le=1_000_000)
    limit: int = Field(100, ge=1, le=1000)


class ArtistTracks(ResponseModel):
    tracks: list[Annotation] = Field(description="album by album, in disc and track order")
    total: int


@registry.endpoint(
    "catalog/getAllArtistTracks",
    versions=(4,),
    request=ArtistTracksRequest,
    response=ArtistTracks,
    errors=CATALOG_ERRORS,
)
def get_all_artist_tracks(call: Call, req: ArtistTracksRequest) -> ArtistTracks:
    """Every track of an artist, a page at a time."""
    ref = catalog.resolve(req.artist_pandora_id, "artist")
    on_demand = call.settings.tier(call.require_listener().tier).on_demand
    total, tracks = music.artist_tracks(call.reader(), ref.id, req.offset, req.limit)
    return ArtistTracks(tracks=[annotation(call, t, on_demand) for t in tracks], total=total)


class AnnotateRequest(V4Request):
    pandora_ids: list[PandoraId] = Field(max_length=500)


class AnnotationMap(RootModel[dict[str, Annotation]]):
    """A JSON object: each id asked about that names something, with its annotation."""


ANNOTATE_NOTES = """
Answers an object keyed by pandoraId (no wrapper), as published clients read it: tracks,
albums, artists, genres and the listener's own playlists; other and unknown ids are left out.
Any signed-in listener may ask (`rightsInfo.hasInteractive` tells whether their tier plays it
on demand).
"""


@registry.endpoint(
    "catalog/annotateObjectsSimple",
    versions=(4,),
    request=AnnotateRequest,
    response=AnnotationMap,
    notes=ANNOTATE_NOTES,
)
def annotate_objects_simple(call: Call, req: AnnotateRequest) -> AnnotationMap:
    """Annotations of objects, keyed by pandoraId."""
    refs = [r for r in map(ids.parse, req.pandora_ids) if r is not None]
    on_demand = call.settings.tier(call.require_listener().tier).on_demand
    return AnnotationMap(annotate(call, refs, on_demand))


@registry.endpoint(
    "catalog/annotateObjects",
    versions=(4,),
    request=AnnotateRequest,
    response=AnnotationMap,
    notes=ANNOTATE_NOTES,
)
def annotate_objects(call: Call, req: AnnotateRequest) -> AnnotationMap:
    """Annotations of objects, keyed by pandoraId (the same as annotateObjectsSimple)."""
    return annotate_objects_simple(call, req)


class SortRequest(V4Request):
    pandora_ids: list[PandoraId] = Field(max_length=1000)
    sort_order: str | None = Field(
        None, max_length=40, description="ALPHA (the default, by name) or ARTIST"
    )


class Sorted(ResponseModel):
    pandora_ids: list[str] = Field(description="the ids that name something, sorted")


@registry.endpoint(
    "catalog/sortObjects",
    versions=(4,),
    request=SortRequest,
    response=Sorted,
    errors=[ErrorCode.INVALID_REQUEST],
    notes="Sorts ids by name (ALPHA) or by artist, then name (ARTIST), case- and "
    "accent-insensitively; ids that name nothing are left out.",
)
def sort_objects(call: Call, req: SortRequest) -> Sorted:
    """Sort objects by name or artist."""
    order = (req.sort_order or "ALPHA").upper()
    if order not in ("ALPHA", "NAME", "ARTIST"):
        raise ApiError(ErrorCode.INVALID_REQUEST, "sortOrder is ALPHA or ARTIST")
    refs = [r for r in map(ids.parse, req.pandora_ids) if r is not None]
    notes = annotate(call, refs, False)

    def key(pandora_id: str) -> tuple[str, str]:
        note = notes[pandora_id]
        name = ids.slug(note.name)
        by = ids.slug(note.artist_name or note.owner_name or note.name)
        return (by, name) if order == "ARTIST" else (name, by)

    return Sorted(pandora_ids=sorted(dict.fromkeys(notes), key=key))


_BROWSE_KINDS = {"AR": "artist", "AL": "album", "TR": "track"}


class BrowseRequest(V4Request):
    type: str = Field(max_length=8, description="AR (artists), AL (albums) or TR (tracks)")
    sort_order: str = Field(
        "ALPHA",
        max_length=40,
        description="ALPHA for every type; ALBUM_COUNT for artists; ARTIST and DATE_ADDED "
        "for albums and tracks; YEAR (newest first) for albums",
    )
    filter: str = Field("", max_length=browse.LIBRARY_FILTER_MAX)
    offset: int = Field(0, ge=0, le=1_000_000)
    limit: int = Field(60, ge=1, le=500)


class BrowsePage(ResponseModel):
    items: list[str] = Field(description="pandoraIds, in the order asked for")
    total: int = Field(description="how many match, over every page")
    annotations: dict[str, Annotation]


@registry.endpoint(
    "catalog/browse",
    versions=(4,),
    request=BrowseRequest,
    response=BrowsePage,
    errors=[ErrorCode.INVALID_REQUEST],
    notes="""
    An Airwave addition: the whole library a page at a time, as a library's A-Z lists show it.
    Artists (those with an album of present tracks), albums or tracks, sorted, and filtered by
    `filter` (held in the name, or for albums and tracks in the artist's name, ignoring case).
    `total` counts every match, so a client can page with `offset`. Any signed-in listener may
    browse; `rightsInfo.hasInteractive` says whether their tier plays it on demand.
    """,
)
def browse_library(call: Call, req: BrowseRequest) -> BrowsePage:
    """The library's artists, albums or tracks, a sorted page."""
    kind = _BROWSE_KINDS.get(req.type.upper())
    if kind is None:
        raise ApiError(ErrorCode.INVALID_REQUEST, "type is AR, AL or TR")
    page = browse.library_page(
        call.reader(), kind, req.sort_order.upper(), req.filter, req.offset, req.limit
    )
    refs = [ids.Ref(kind, i) for i in page.ids]  # type: ignore[arg-type]
    on_demand = call.settings.tier(call.require_listener().tier).on_demand
    notes = annotate(call, refs, on_demand)
    items = [p for p in (ids.pandora_id(r.kind, r.id) for r in refs) if p in notes]
    return BrowsePage(items=items, total=page.total, annotations=notes)
