"""v4 collections/* and the v5 (v5beta) sorted views: "My Collection" over core.collection."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from airwave.api.annotations import Annotation, annotate
from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import Empty, EmptyResponse, ResponseModel, absent_when_none
from airwave.api.v4.catalog import ERRORS, PandoraId, V4Request, allowed
from airwave.core import collection, ids
from airwave.core.catalog import catalog
from airwave.errors import ApiError, ErrorCode

_SORT_ORDERS: dict[str, collection.Order] = {
    **dict.fromkeys(
        ("DATE_ADDED", "MOST_RECENT_ADDED", "RECENTLY_ADDED", "ADDED", "NEWEST"), "added"
    ),
    **dict.fromkeys(
        ("RECENT", "RECENCY", "MOST_RECENT", "MOST_RECENT_MODIFIED", "RECENTLY_PLAYED"),
        "recent",
    ),
    **dict.fromkeys(("ALPHA", "ALPHABETICAL", "NAME", "A_Z", "TITLE"), "name"),
    **dict.fromkeys(("ARTIST", "ARTIST_NAME", "BY_ARTIST"), "artist"),
}
SORT_NOTE = (
    "sortOrder: DATE_ADDED (newest first, the default), RECENT (last added or played on demand "
    "first), ALPHA (by name) or ARTIST (by artist, then name)"
)
Type = Annotated[str, Field(max_length=8)]


def _order(name: str | None) -> collection.Order:
    if name is None:
        return "added"
    order = _SORT_ORDERS.get(name.upper())
    if order is None:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"unknown sortOrder {name[:40]!r}; {SORT_NOTE}")
    return order


def _on_demand(call: Call) -> bool:
    return call.settings.tier(call.require_listener().tier).on_demand


class ItemRequest(V4Request):
    pandora_id: PandoraId


@registry.endpoint(
    "collections/addItem",
    versions=(4,),
    request=ItemRequest,
    response=EmptyResponse,
    writes=True,
    errors=[*ERRORS, ErrorCode.USER_NOT_AUTHORIZED],
    notes="Artists, albums, tracks and the listener's own playlists; adding again changes nothing.",
)
def add_item(call: Call, req: ItemRequest) -> EmptyResponse:
    """Put an object in the listener's collection."""
    allowed(call)
    listener = call.require_listener()
    with call.write() as db:
        collection.add(db, listener.id, collection.parse(req.pandora_id), call.now())
    return EmptyResponse()


@registry.endpoint(
    "collections/removeItem",
    versions=(4,),
    request=ItemRequest,
    response=EmptyResponse,
    writes=True,
    errors=ERRORS,
    notes="Removing what is not in the collection changes nothing (another device may have "
    "removed it first).",
)
def remove_item(call: Call, req: ItemRequest) -> EmptyResponse:
    """Take an object out of the listener's collection."""
    allowed(call)
    listener = call.require_listener()
    with call.write() as db:
        collection.remove(db, listener.id, collection.parse(req.pandora_id))
    return EmptyResponse()


class CollectedItem(ResponseModel):
    pandora_id: str
    pandora_type: str = Field(description="AR, AL, TR or PL")
    added_time: int = Field(description="ms since the epoch")
    updated_time: int = Field(description="ms since the epoch: added, or last played on demand")


class ItemsPage(ResponseModel):
    items: list[CollectedItem]
    total: int
    total_count: int = Field(description="the same as total (clients read either)")
    cursor: str | None = absent_when_none("where the next page starts; absent after the last")
    annotations: dict[str, Annotation]


class PageRequest(V4Request):
    types: list[Type] | None = Field(None, max_length=8, description="AR, AL, TR, PL")
    offset: int = Field(0, ge=0, le=1_000_000)
    limit: int = Field(100, ge=1, le=1000)
    cursor: str | None = Field(None, max_length=1024)
    sort_order: str | None = Field(None, max_length=40, description=SORT_NOTE)
    annotation_limit: int | None = Field(
        None, ge=0, le=1000, description="annotate only this many of the page's items"
    )


def _page(
    call: Call,
    req: PageRequest,
    kinds: list[str] | None,
    order: collection.Order,
    artist_id: int | None = None,
) -> ItemsPage:
    allowed(call)
    db, listener = call.reader(), call.require_listener()
    found = collection.page(
        db,
        listener.id,
        kinds=kinds,
        order=order,
        limit=req.limit,
        offset=req.offset,
        cursor=req.cursor,
        artist_id=artist_id,
    )
    limit = len(found.items) if req.annotation_limit is None else req.annotation_limit
    notes = annotate(call, [i.ref for i in found.items[:limit]], _on_demand(call))
    return ItemsPage(
        items=[
            CollectedItem(
                pandora_id=ids.pandora_id(i.ref.kind, i.ref.id),
                pandora_type=collection.CODE_OF[i.ref.kind],
                added_time=int(i.added_at.timestamp() * 1000),
                updated_time=int(i.touched_at.timestamp() * 1000),
            )
            for i in found.items
        ],
        total=found.total,
        total_count=found.total,
        cursor=found.cursor,
        annotations=notes,
    )


PAGE_NOTES = """
Pages by `offset`, or by the `cursor` the previous page answered: items added meanwhile never
shift or repeat the pages after a cursor. Every item of the page is annotated unless
`annotationLimit` says fewer.
"""


@registry.endpoint(
    "collections/getItems",
    versions=(4,),
    request=PageRequest,
    response=ItemsPage,
    errors=ERRORS,
    notes="Newest first." + PAGE_NOTES,
)
def get_items(call: Call, req: PageRequest) -> ItemsPage:
    """The collection, newest first."""
    return _page(call, req, req.types, "added")


@registry.endpoint(
    "collections/getSortedItems",
    versions=(4,),
    request=PageRequest,
    response=ItemsPage,
    errors=ERRORS,
    notes=SORT_NOTE + "." + PAGE_NOTES,
)
def get_sorted_items(call: Call, req: PageRequest) -> ItemsPage:
    """The collection in a chosen order."""
    return _page(call, req, req.types, _order(req.sort_order))


class ByArtistRequest(PageRequest):
    artist_pandora_id: PandoraId | None = None
    pandora_id: PandoraId | None = Field(None, description="the artist (another spelling)")


@registry.endpoint(
    "collections/getItemsByArtist",
    versions=(4,),
    request=ByArtistRequest,
    response=ItemsPage,
    errors=ERRORS,
    notes="The artist, their albums, and tracks they perform or that are on their albums. "
    + SORT_NOTE
    + ".",
)
def get_items_by_artist(call: Call, req: ByArtistRequest) -> ItemsPage:
    """What the collection holds of one artist."""
    token = req.artist_pandora_id or req.pandora_id
    if token is None:
        raise ApiError(ErrorCode.INVALID_REQUEST, "give artistPandoraId")
    artist = catalog.resolve(token, "artist")
    return _page(call, req, req.types, _order(req.sort_order), artist_id=artist.id)


def _sorted_view(path: str, kinds: list[str] | None, what: str) -> None:
    def view(call: Call, req: PageRequest) -> ItemsPage:
        return _page(call, req, kinds, _order(req.sort_order))

    view.__doc__ = f"The collection's {what}, in a chosen order."
    view.__name__ = path.split("/")[1]
    registry.endpoint(
        path,
        versions=(5,),
        request=PageRequest,
        response=ItemsPage,
        errors=ERRORS,
        notes=SORT_NOTE + "." + PAGE_NOTES + " Also answered as `v5beta`.",
    )(view)


for _path, _kinds, _what in (
    ("collections/getSortedAlbums", ["AL"], "albums"),
    ("collections/getSortedArtists", ["AR"], "artists"),
    ("collections/getSortedTracks", ["TR"], "tracks"),
    ("collections/getSortedPlaylists", ["PL"], "playlists"),
    ("collections/getSortedAll", None, "items of every kind"),
):
    _sorted_view(_path, _kinds, _what)


class Counts(ResponseModel):
    artists: int
    albums: int
    tracks: int
    playlists: int
    total: int


@registry.endpoint(
    "collections/countItems", versions=(4,), request=Empty, response=Counts, errors=ERRORS
)
def count_items(call: Call, req: Empty) -> Counts:
    """How many items of each kind the collection holds."""
    allowed(call)
    found = collection.counts(call.reader(), call.require_listener().id)
    return Counts(
        artists=found["AR"],
        albums=found["AL"],
        tracks=found["TR"],
        playlists=found["PL"],
        total=sum(found.values()),
    )


class HasRequest(V4Request):
    pandora_ids: list[PandoraId] = Field(max_length=1000)


class Has(ResponseModel):
    items: dict[str, bool] = Field(description="every id asked about: in the collection or not")


@registry.endpoint(
    "collections/hasItems", versions=(4,), request=HasRequest, response=Has, errors=ERRORS
)
def has_items(call: Call, req: HasRequest) -> Has:
    """Which of these objects are in the collection."""
    allowed(call)
    refs = {token: ids.parse(token) for token in req.pandora_ids}
    held = collection.has(
        call.reader(), call.require_listener().id, [r for r in refs.values() if r is not None]
    )
    return Has(items={token: ref in held for token, ref in refs.items()})


class Version(ResponseModel):
    version: int = Field(description="grows with every change of the collection")


@registry.endpoint(
    "collections/getVersion", versions=(4,), request=Empty, response=Version, errors=ERRORS
)
def get_version(call: Call, req: Empty) -> Version:
    """The collection's version: a client whose copy has this version is up to date."""
    allowed(call)
    return Version(version=collection.version(call.reader(), call.require_listener().id))
