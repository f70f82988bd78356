"""v4 playlists/* (and the v3 `deleteTracks`, v5 `setDetails`/`shuffleTracks`, later
`getTracks`): the listener's playlists over core.playlists."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field, model_validator

from airwave.api.annotations import Annotation, annotate, playlist_annotation
from airwave.api.protocol import Call
from airwave.api.registry import registry
from airwave.api.schemas import EmptyResponse, RequestModel, ResponseModel
from airwave.api.v4.catalog import ERRORS, PandoraId, V4Request, allowed
from airwave.core import ids, playlists
from airwave.core.playlists import Playlist
from airwave.errors import ApiError, ErrorCode
from airwave.library import playlist_files

EDIT_ERRORS = [
    *ERRORS,
    ErrorCode.USER_NOT_AUTHORIZED,
    ErrorCode.PLAYLIST_VERSION_MISMATCH,
    ErrorCode.PLAYLIST_BAD_RANGE,
]
ItemId = Annotated[int | str, Field(description="an entry's itemId (a number)")]
TrackIds = Annotated[list[PandoraId], Field(max_length=playlists.MAX_TRACKS)]


def _item(value: int | str) -> int:
    number = value if isinstance(value, int) else ids.parse_number(value)
    if number is None or number <= 0:
        raise ApiError(ErrorCode.PLAYLIST_BAD_RANGE, f"{str(value)[:20]!r} is not an itemId")
    return number


def _edit(call: Call, token: str, change: Callable[[Any, Playlist], object]) -> Annotation:
    """Apply `change` (database session, playlist) to one of the listener's playlists in a
    write transaction; answer the playlist as it then stands."""
    allowed(call)
    listener = call.require_listener()
    with call.write() as db:
        playlist = playlists.owned(db, listener.id, token)
        change(db, playlist)
        edited = playlist.id
    return _answer(call, edited)


def _answer(call: Call, playlist_id: int) -> Annotation:
    """The playlist as it now stands (read after the write committed)."""
    note = playlists.notes(call.reader(), call.require_listener().id, [playlist_id])
    return playlist_annotation(call, note[playlist_id])


class Details(RequestModel):
    name: str | None = Field(None, max_length=1000)
    description: str | None = Field(None, max_length=10_000)


class CreateRequest(V4Request):
    name: str | None = Field(None, max_length=1000)
    description: str | None = Field(None, max_length=10_000)
    details: Details | None = Field(None, description="{name, description} (another spelling)")
    tracks: TrackIds | None = None
    pandora_ids: TrackIds | None = Field(None, description="the tracks (another spelling)")


@registry.endpoint(
    "playlists/create",
    versions=(4,),
    request=CreateRequest,
    response=Annotation,
    writes=True,
    errors=ERRORS,
    notes=f"""
    A new playlist (version 1) of the listener, also put in their collection. `tracks` are
    track pandoraIds, in order; at most {playlists.MAX_TRACKS} entries per playlist.
    """,
)
def create(call: Call, req: CreateRequest) -> Annotation:
    """Make a playlist."""
    allowed(call)
    listener = call.require_listener()
    name = req.name if req.name is not None else (req.details.name if req.details else None)
    text = req.description or (req.details.description if req.details else None) or ""
    if name is None:
        raise ApiError(ErrorCode.INVALID_REQUEST, "give the playlist a name")
    with call.write() as db:
        tracks = playlists.track_ids(db, req.tracks or req.pandora_ids or [])
        playlist = playlists.create(db, listener.id, name, text, tracks, call.now())
        made = playlist.id
    return _answer(call, made)


class PlaylistRequest(V4Request):
    pandora_id: PandoraId


@registry.endpoint(
    "playlists/delete",
    versions=(4,),
    request=PlaylistRequest,
    response=EmptyResponse,
    writes=True,
    errors=[*ERRORS, ErrorCode.USER_NOT_AUTHORIZED],
)
def delete(call: Call, req: PlaylistRequest) -> EmptyResponse:
    """Delete one of the listener's playlists (and take it out of their collection)."""
    allowed(call)
    listener = call.require_listener()
    with call.write() as db:
        playlists.delete_playlist(db, playlists.owned(db, listener.id, req.pandora_id), call.now())
    return EmptyResponse()


class Versioned(V4Request):
    pandora_id: PandoraId
    version: int | None = Field(None, ge=0, description="the version this edit was made against")
    playlist_version: int | None = Field(None, ge=0, description="`version` (another spelling)")

    @model_validator(mode="after")
    def _one_version(self) -> Versioned:
        if self.version is None and self.playlist_version is not None:
            object.__setattr__(self, "version", self.playlist_version)
        return self


def _version(req: Versioned) -> int:
    if req.version is None:
        raise ApiError(ErrorCode.INVALID_REQUEST, "give the version this edit was made against")
    return req.version


class AppendRequest(Versioned):
    pandora_ids: TrackIds | None = None
    item_pandora_ids: TrackIds | None = Field(None, description="`pandoraIds` (another spelling)")


VERSION_NOTE = """
Every edit names the `version` it was made against (`playlistVersion` is taken too) and answers
the playlist at its new version; an edit against any other version is
`PLAYLIST_VERSION_MISMATCH` and changes nothing.
"""


@registry.endpoint(
    "playlists/appendItems",
    versions=(4,),
    request=AppendRequest,
    response=Annotation,
    writes=True,
    errors=EDIT_ERRORS,
    notes="Adds tracks at the end." + VERSION_NOTE,
)
def append_items(call: Call, req: AppendRequest) -> Annotation:
    """Add tracks to the end of a playlist."""
    tokens = req.pandora_ids if req.pandora_ids is not None else req.item_pandora_ids
    if not tokens:
        raise ApiError(ErrorCode.INVALID_REQUEST, "give pandoraIds: the tracks to add")
    return _edit(
        call,
        req.pandora_id,
        lambda db, playlist: playlists.append(
            db, playlist, _version(req), playlists.track_ids(db, tokens), call.now()
        ),
    )


class MoveSpec(RequestModel):
    item_id: ItemId
    to_index: int | None = Field(None, ge=0)
    new_index: int | None = Field(None, ge=0, description="`toIndex` (another spelling)")
    old_index: int | None = Field(None, ge=0, description="ignored: the itemId says which")


class InsertSpec(RequestModel):
    pandora_id: PandoraId
    index: int = Field(ge=0)


class EditRequest(Versioned):
    deletes: list[ItemId] = Field(default_factory=list, max_length=playlists.MAX_TRACKS)
    moves: list[MoveSpec] = Field(default_factory=list, max_length=playlists.MAX_TRACKS)
    inserts: list[InsertSpec] = Field(default_factory=list, max_length=playlists.MAX_TRACKS)


@registry.endpoint(
    "playlists/editTracks",
    versions=(4,),
    request=EditRequest,
    response=Annotation,
    writes=True,
    errors=EDIT_ERRORS,
    notes="""
    Removes the `deletes` entries (itemIds), then moves each of `moves` ({itemId, toIndex}, or
    {itemId, oldIndex, newIndex}) to its index in the list as it stands after the steps before,
    then inserts `inserts` ({pandoraId, index}) one after another. An unknown itemId or an index
    out of range is `PLAYLIST_BAD_RANGE` and changes nothing.
    """
    + VERSION_NOTE,
)
def edit_tracks(call: Call, req: EditRequest) -> Annotation:
    """Remove, move and insert a playlist's entries in one edit."""
    moves = []
    for move in req.moves:
        index = move.to_index if move.to_index is not None else move.new_index
        if index is None:
            raise ApiError(ErrorCode.INVALID_REQUEST, "a move needs toIndex (or newIndex)")
        moves.append(playlists.Move(_item(move.item_id), index))
    deletes = [_item(i) for i in req.deletes]

    def change(db: Any, playlist: Playlist) -> None:
        tracks = playlists.track_ids(db, [i.pandora_id for i in req.inserts])
        playlists.edit(
            db,
            playlist,
            _version(req),
            call.now(),
            deletes=deletes,
            moves=moves,
            inserts=[(t, i.index) for t, i in zip(tracks, req.inserts, strict=True)],
        )

    return _edit(call, req.pandora_id, change)


class DeleteTracksRequest(Versioned):
    item_ids: list[ItemId] = Field(default_factory=list, max_length=playlists.MAX_TRACKS)
    track_item_ids: list[ItemId] = Field(
        default_factory=list, max_length=playlists.MAX_TRACKS, description="`itemIds` too"
    )


@registry.endpoint(
    "playlists/deleteTracks",
    versions=(3,),
    request=DeleteTracksRequest,
    response=Annotation,
    writes=True,
    errors=EDIT_ERRORS,
    notes="Removes entries by itemId." + VERSION_NOTE,
)
def delete_tracks(call: Call, req: DeleteTracksRequest) -> Annotation:
    """Remove entries from a playlist."""
    items = [_item(i) for i in [*req.item_ids, *req.track_item_ids]]
    if not items:
        raise ApiError(ErrorCode.INVALID_REQUEST, "give itemIds: the entries to remove")
    return _edit(
        call,
        req.pandora_id,
        lambda db, playlist: playlists.edit(db, playlist, _version(req), call.now(), deletes=items),
    )


class SetDetailsRequest(Versioned):
    name: str | None = Field(None, max_length=1000)
    description: str | None = Field(None, max_length=10_000)
    details: Details | None = None


@registry.endpoint(
    "playlists/setDetails",
    versions=(5,),
    request=SetDetailsRequest,
    response=Annotation,
    writes=True,
    errors=EDIT_ERRORS,
    notes="Renames or describes a playlist (`{details: {...}}` is taken too); checked against "
    "`version` when one is given. Also answered as `v5beta`.",
)
def set_details(call: Call, req: SetDetailsRequest) -> Annotation:
    """Rename or describe a playlist."""
    name = req.name if req.name is not None else (req.details.name if req.details else None)
    text = (
        req.description
        if req.description is not None
        else (req.details.description if req.details else None)
    )
    return _edit(
        call,
        req.pandora_id,
        lambda db, playlist: playlists.set_details(
            db, playlist, call.now(), name=name, description=text, version=req.version
        ),
    )


@registry.endpoint(
    "playlists/shuffleTracks",
    versions=(5,),
    request=Versioned,
    response=Annotation,
    writes=True,
    errors=EDIT_ERRORS,
    notes="Puts the entries in a random order." + VERSION_NOTE,
)
def shuffle_tracks(call: Call, req: Versioned) -> Annotation:
    """Shuffle a playlist's entries."""
    return _edit(
        call,
        req.pandora_id,
        lambda db, playlist: playlists.shuffle(db, playlist, _version(req), call.now()),
    )


class TracksRequest(V4Request):
    pandora_id: PandoraId
    offset: int = Field(0, ge=0, le=playlists.MAX_TRACKS)
    limit: int = Field(100, ge=1, le=1000)
    annotation_limit: int | None = Field(None, ge=0, le=1000)


class Entry(ResponseModel):
    item_id: int
    index: int
    pandora_id: str = Field(description="the track")
    track_pandora_id: str = Field(description="the same as pandoraId (clients read either)")
    added_timestamp: int = Field(description="ms since the epoch")
    available: bool = Field(description="false while the track's file is missing")


class Tracks(ResponseModel):
    pandora_id: str
    name: str
    version: int
    total_tracks: int
    duration: int
    offset: int
    limit: int
    tracks: list[Entry]
    annotations: dict[str, Annotation]


@registry.endpoint(
    "playlists/getTracks",
    versions=(4, 5, 6, 7),
    request=TracksRequest,
    response=Tracks,
    errors=[*ERRORS, ErrorCode.USER_NOT_AUTHORIZED],
    notes="A page of the entries, in order, with the tracks' annotations (all of the page's "
    "unless `annotationLimit` says fewer). Tracks whose file is missing stay, unavailable.",
)
def get_tracks(call: Call, req: TracksRequest) -> Tracks:
    """A playlist's entries."""
    allowed(call)
    db, listener = call.reader(), call.require_listener()
    playlist = playlists.owned(db, listener.id, req.pandora_id)
    found = playlists.entries(db, playlist, req.offset, req.limit)
    limit = len(found) if req.annotation_limit is None else req.annotation_limit
    on_demand = call.settings.tier(listener.tier).on_demand
    refs = list(dict.fromkeys(ids.Ref("track", e.track_id) for e in found[:limit]))
    return Tracks(
        pandora_id=ids.pandora_id("playlist", playlist.id),
        name=playlist.name,
        version=playlist.version,
        total_tracks=playlist.total_tracks,
        duration=round(playlist.duration),
        offset=req.offset,
        limit=req.limit,
        tracks=[
            Entry(
                item_id=e.item_id,
                index=e.position,
                pandora_id=ids.pandora_id("track", e.track_id),
                track_pandora_id=ids.pandora_id("track", e.track_id),
                added_timestamp=int(e.added_at.timestamp() * 1000),
                available=e.available,
            )
            for e in found
        ],
        annotations=annotate(call, refs, on_demand),
    )


class AnnotateRequest(V4Request):
    pandora_ids: list[PandoraId] = Field(max_length=500)


class Annotations(ResponseModel):
    annotations: dict[str, Annotation]


@registry.endpoint(
    "playlists/annotatePlaylists",
    versions=(4,),
    request=AnnotateRequest,
    response=Annotations,
    errors=ERRORS,
    notes="The listener's own playlists among the ids; others' and unknown ones are left out.",
)
def annotate_playlists(call: Call, req: AnnotateRequest) -> Annotations:
    """Annotations of playlists."""
    allowed(call)
    refs = [r for r in map(ids.parse, req.pandora_ids) if r is not None and r.kind == "playlist"]
    return Annotations(annotations=annotate(call, refs, False))


class ImportRequest(V4Request):
    content: str = Field(max_length=5 * 1024 * 1024, description="the file's text")
    format: str | None = Field(
        None, max_length=8, description="m3u8 (also for .m3u) or xspf [default: detected]"
    )
    name: str | None = Field(None, max_length=1000, description="[default: the file's title]")


class UnmatchedLine(ResponseModel):
    line: int = Field(description="M3U: the line number; XSPF: the <track>'s position")
    entry: str = Field(description="what the file says of it")
    reason: str


class Imported(ResponseModel):
    playlist: Annotation
    unmatched: list[UnmatchedLine]


@registry.endpoint(
    "playlists/import",
    versions=(4,),
    request=ImportRequest,
    response=Imported,
    writes=True,
    errors=ERRORS,
    notes="""
    A new playlist from an M3U8 or XSPF file's text: each entry matched to a track of the library
    by MusicBrainz id, by absolute path (or file:// URL), or by artist and title (and album);
    entries that match nothing are answered in `unmatched`, by line, not dropped silently.
    """,
)
def import_playlist(call: Call, req: ImportRequest) -> Imported:
    """Make a playlist from an M3U8 or XSPF file."""
    allowed(call)
    listener = call.require_listener()
    fmt = (req.format or playlist_files.detect("", req.content)).lower().lstrip(".")
    fmt = "m3u8" if fmt == "m3u" else fmt
    with call.write() as db:
        playlist, unmatched = playlists.import_file(
            db, listener.id, req.content, fmt, call.now(), name=req.name
        )
        made = playlist.id
    return Imported(
        playlist=_answer(call, made),
        unmatched=[UnmatchedLine(line=u.line, entry=u.entry, reason=u.reason) for u in unmatched],
    )


class ExportRequest(V4Request):
    pandora_id: PandoraId
    format: str = Field("m3u8", max_length=8, description="m3u8 or xspf")


class Exported(ResponseModel):
    format: str
    file_name: str
    content: str


@registry.endpoint(
    "playlists/export",
    versions=(4,),
    request=ExportRequest,
    response=Exported,
    errors=[*ERRORS, ErrorCode.USER_NOT_AUTHORIZED],
    notes="One of the listener's playlists as an M3U8 or XSPF file (absolute paths of the "
    "library's files, with artist, title and duration).",
)
def export_playlist(call: Call, req: ExportRequest) -> Exported:
    """Write a playlist as an M3U8 or XSPF file."""
    allowed(call)
    db = call.reader()
    playlist = playlists.owned(db, call.require_listener().id, req.pandora_id)
    fmt = req.format.lower().lstrip(".")
    text = playlists.export_file(db, playlist, "m3u8" if fmt == "m3u" else fmt)
    stem = ids.slug(playlist.name)
    return Exported(format=fmt, file_name=f"{stem}.{fmt}", content=text)
