"""Playlists: a listener's named, ordered lists of tracks.

Every change names the version it was made against and makes the next one, so two devices
editing at once cannot corrupt a playlist: the second edit against the same version is refused
(PLAYLIST_VERSION_MISMATCH) and changes nothing. Entries have ids of their own (itemId), so the
same track twice is two entries. A track whose file vanished stays in its playlists, unavailable,
and plays again when the file comes back.
"""

from __future__ import annotations

import os
import random
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import delete, func, insert, select, union_all, update
from sqlalchemy.orm import Session

from airwave.core import ids
from airwave.core.catalog import catalog
from airwave.errors import ApiError, ErrorCode
from airwave.library import names, playlist_files
from airwave.store.models import (
    Album,
    Artist,
    Artwork,
    CollectionItem,
    Listener,
    Playlist,
    PlaylistItem,
    Track,
)
from airwave.store.sql import among

MAX_TRACKS = 10_000  # entries in one playlist
MAX_PLAYLISTS = 1_000  # playlists of one listener
NAME_MAX = 200
DESCRIPTION_MAX = 1_000


@dataclass(frozen=True)
class Entry:
    item_id: int
    track_id: int
    position: int
    added_at: datetime
    available: bool


@dataclass(frozen=True)
class Move:
    item_id: int
    to_index: int


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise ApiError(ErrorCode.INVALID_REQUEST, "a playlist needs a name")
    if len(name) > NAME_MAX:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"a playlist name has at most {NAME_MAX} letters")
    return name


def _clean_description(text: str) -> str:
    text = text.strip()
    if len(text) > DESCRIPTION_MAX:
        raise ApiError(
            ErrorCode.INVALID_REQUEST, f"a description has at most {DESCRIPTION_MAX} letters"
        )
    return text


def track_ids(db: Session, tokens: Sequence[str]) -> list[int]:
    """Track row ids of pandoraIds/musicIds naming present tracks, in order (duplicates kept)."""
    refs = [catalog.resolve(token, "track") for token in tokens]
    wanted = sorted({r.id for r in refs})
    present: set[int] = set()
    for start in range(0, len(wanted), 5000):  # bounded statements, whatever the backend
        present.update(
            db.scalars(
                select(Track.id).where(
                    Track.id.in_(wanted[start : start + 5000]), Track.missing_since.is_(None)
                )
            )
        )
    for ref in refs:
        if ref.id not in present:
            raise ApiError(ErrorCode.NOT_FOUND, f"no track TR:{ref.id}")
    return [r.id for r in refs]


def create(
    db: Session,
    listener_id: int,
    name: str,
    description: str,
    tracks: Sequence[int],
    now: datetime,
) -> Playlist:
    """A new playlist (version 1) holding `tracks`, also added to its owner's collection."""
    name, description = _clean_name(name), _clean_description(description)
    if len(tracks) > MAX_TRACKS:
        raise _too_long(len(tracks))
    owned = db.scalar(select(func.count(Playlist.id)).where(Playlist.listener_id == listener_id))
    if (owned or 0) >= MAX_PLAYLISTS:
        raise ApiError(
            ErrorCode.INVALID_REQUEST, f"a listener has at most {MAX_PLAYLISTS} playlists"
        )
    playlist = Playlist(
        listener_id=listener_id,
        name=name,
        description=description,
        version=1,
        total_tracks=0,
        duration=0.0,
        created_at=now,
        updated_at=now,
    )
    db.add(playlist)
    db.flush()
    _insert(db, playlist.id, 0, tracks, now)
    _refresh_totals(db, playlist)
    from airwave.core import collection  # the collection names playlists: imported late

    collection.add(db, listener_id, ids.Ref("playlist", playlist.id), now)
    return playlist


def owned(db: Session, listener_id: int, token: str) -> Playlist:
    """The listener's playlist named by a pandoraId (PL:n); another's is USER_NOT_AUTHORIZED."""
    ref = catalog.resolve(token, "playlist")
    playlist = db.get(Playlist, ref.id)
    if playlist is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no playlist {token[:40]!r}")
    if playlist.listener_id != listener_id:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "that playlist belongs to another listener")
    return playlist


def delete_playlist(db: Session, playlist: Playlist, now: datetime) -> None:
    """Delete a playlist and take it out of every collection holding it."""
    db.execute(delete(PlaylistItem).where(PlaylistItem.playlist_id == playlist.id))
    holders = list(
        db.scalars(
            select(CollectionItem.listener_id).where(
                CollectionItem.kind == "PL", CollectionItem.ref_id == playlist.id
            )
        )
    )
    db.execute(
        delete(CollectionItem).where(
            CollectionItem.kind == "PL", CollectionItem.ref_id == playlist.id
        )
    )
    if holders:
        db.execute(
            update(Listener)
            .where(Listener.id.in_(holders))
            .values(collection_version=Listener.collection_version + 1)
        )
    db.delete(playlist)


def _next_version(db: Session, playlist: Playlist, version: int, now: datetime) -> None:
    """Claim the next version, or refuse: the playlist changed since `version`."""
    if version != playlist.version:
        raise _stale(playlist.version)
    claimed = db.execute(
        update(Playlist)
        .where(Playlist.id == playlist.id, Playlist.version == version)
        .values(version=version + 1, updated_at=now)
    ).rowcount
    if not claimed:  # another edit committed between our read and this write
        db.refresh(playlist)
        raise _stale(playlist.version)
    db.refresh(playlist)


def _stale(current: int) -> ApiError:
    return ApiError(
        ErrorCode.PLAYLIST_VERSION_MISMATCH,
        f"the playlist changed: it is at version {current}; reload it and edit that",
    )


def _too_long(count: int) -> ApiError:
    return ApiError(
        ErrorCode.INVALID_REQUEST,
        f"a playlist holds at most {MAX_TRACKS} tracks (this edit would make {count})",
    )


def _insert(
    db: Session, playlist_id: int, start: int, tracks: Sequence[int], now: datetime
) -> None:
    if tracks:
        db.execute(
            insert(PlaylistItem),
            [
                {"playlist_id": playlist_id, "position": start + i, "track_id": t, "added_at": now}
                for i, t in enumerate(tracks)
            ],
        )


def _refresh_totals(db: Session, playlist: Playlist) -> None:
    count, seconds = db.execute(
        select(func.count(PlaylistItem.id), func.coalesce(func.sum(Track.duration), 0.0))
        .select_from(PlaylistItem)
        .join(Track, Track.id == PlaylistItem.track_id)
        .where(PlaylistItem.playlist_id == playlist.id)
    ).one()
    playlist.total_tracks, playlist.duration = int(count), float(seconds)


def append(
    db: Session, playlist: Playlist, version: int, tracks: Sequence[int], now: datetime
) -> Playlist:
    """Add tracks at the end."""
    if playlist.total_tracks + len(tracks) > MAX_TRACKS:
        raise _too_long(playlist.total_tracks + len(tracks))
    _next_version(db, playlist, version, now)
    _insert(db, playlist.id, playlist.total_tracks, tracks, now)
    _refresh_totals(db, playlist)
    return playlist


def _order(db: Session, playlist_id: int) -> list[int]:
    """The playlist's item ids in order."""
    return list(
        db.scalars(
            select(PlaylistItem.id)
            .where(PlaylistItem.playlist_id == playlist_id)
            .order_by(PlaylistItem.position, PlaylistItem.id)
        )
    )


def _write_order(db: Session, before: list[int], after: list[int]) -> None:
    """Store new positions for the items whose position changed (`before`: the stored order)."""
    old = {item: i for i, item in enumerate(before)}
    changed = [{"id": item, "position": i} for i, item in enumerate(after) if old.get(item) != i]
    if changed:
        db.execute(update(PlaylistItem), changed)  # bulk update by primary key


def edit(
    db: Session,
    playlist: Playlist,
    version: int,
    now: datetime,
    *,
    deletes: Sequence[int] = (),
    moves: Sequence[Move] = (),
    inserts: Sequence[tuple[int, int]] = (),
) -> Playlist:
    """Remove entries by item id, then move entries (each to an index of the list as it stands
    after the previous steps), then insert tracks (track id, index). Any unknown item id or
    index out of range refuses the whole edit (PLAYLIST_BAD_RANGE) and changes nothing."""
    order = _order(db, playlist.id)
    present = set(order)
    gone = set(deletes)
    if unknown := sorted(gone - present):
        raise ApiError(ErrorCode.PLAYLIST_BAD_RANGE, f"no item {unknown[0]} in this playlist")
    after = [item for item in order if item not in gone]
    for move in moves:
        if move.item_id not in present or move.item_id in gone:
            raise ApiError(ErrorCode.PLAYLIST_BAD_RANGE, f"no item {move.item_id} in this playlist")
        if not 0 <= move.to_index < len(after):
            raise ApiError(
                ErrorCode.PLAYLIST_BAD_RANGE,
                f"index {move.to_index} is outside 0..{len(after) - 1}",
            )
        after.remove(move.item_id)
        after.insert(move.to_index, move.item_id)
    if len(after) + len(inserts) > MAX_TRACKS:
        raise _too_long(len(after) + len(inserts))
    new_rows: list[tuple[int, int]] = []  # (index, track id), applied in order
    size = len(after)
    for track_id, index in inserts:
        if not 0 <= index <= size:
            raise ApiError(
                ErrorCode.PLAYLIST_BAD_RANGE, f"insert index {index} is outside 0..{size}"
            )
        new_rows.append((index, track_id))
        size += 1
    _next_version(db, playlist, version, now)
    if gone:
        db.execute(delete(PlaylistItem).where(PlaylistItem.id.in_(gone)))
    placed: list[int | tuple[int]] = list(after)  # (track id,): a new entry
    for index, track_id in new_rows:
        placed.insert(index, (track_id,))
    old = {item: i for i, item in enumerate(order)}
    moved = [
        {"id": p, "position": i} for i, p in enumerate(placed) if isinstance(p, int) and old[p] != i
    ]
    if moved:
        db.execute(update(PlaylistItem), moved)  # bulk update by primary key
    added = [
        {"playlist_id": playlist.id, "position": i, "track_id": p[0], "added_at": now}
        for i, p in enumerate(placed)
        if isinstance(p, tuple)
    ]
    if added:
        db.execute(insert(PlaylistItem), added)
    _refresh_totals(db, playlist)
    return playlist


def shuffle(
    db: Session, playlist: Playlist, version: int, now: datetime, rng: random.Random | None = None
) -> Playlist:
    """Put the entries in a random order (a new version)."""
    order = _order(db, playlist.id)
    _next_version(db, playlist, version, now)
    shuffled = list(order)
    (rng or random.Random()).shuffle(shuffled)
    _write_order(db, order, shuffled)
    return playlist


def set_details(
    db: Session,
    playlist: Playlist,
    now: datetime,
    *,
    name: str | None = None,
    description: str | None = None,
    version: int | None = None,
) -> Playlist:
    """Rename or describe a playlist (checked against `version` when one is given)."""
    new_name = _clean_name(name) if name is not None else playlist.name
    new_text = _clean_description(description) if description is not None else playlist.description
    _next_version(db, playlist, playlist.version if version is None else version, now)
    playlist.name, playlist.description = new_name, new_text
    db.flush()  # a later edit in the same transaction refreshes the row from the database
    db.execute(
        update(CollectionItem)
        .where(CollectionItem.kind == "PL", CollectionItem.ref_id == playlist.id)
        .values(sort_name=new_name.casefold()[:255])
    )
    return playlist


def entries(db: Session, playlist: Playlist, offset: int, limit: int) -> list[Entry]:
    """A page of the playlist's entries, in order."""
    rows = db.execute(
        select(PlaylistItem.id, PlaylistItem.track_id, PlaylistItem.position, PlaylistItem.added_at)
        .where(PlaylistItem.playlist_id == playlist.id)
        .order_by(PlaylistItem.position, PlaylistItem.id)
        .offset(offset)
        .limit(limit)
    ).all()
    missing = set(
        db.scalars(
            select(Track.id).where(
                among(db, Track.id, [r[1] for r in rows]), Track.missing_since.is_not(None)
            )
        )
    )
    return [Entry(i, t, p, a, t not in missing) for i, t, p, a in rows]


def by_ids(db: Session, listener_id: int, playlist_ids: Sequence[int]) -> list[Playlist]:
    """The listener's playlists among these ids (others' and unknown ones are left out)."""
    if not playlist_ids:
        return []
    return list(
        db.scalars(
            select(Playlist).where(
                among(db, Playlist.id, playlist_ids), Playlist.listener_id == listener_id
            )
        )
    )


def of_listener(db: Session, listener_id: int) -> list[Playlist]:
    """All the listener's playlists, by name."""
    return list(
        db.scalars(
            select(Playlist)
            .where(Playlist.listener_id == listener_id)
            .order_by(func.lower(Playlist.name), Playlist.id)
        )
    )


def replace_tracks(
    db: Session, playlist: Playlist, version: int, tracks: Sequence[int], now: datetime
) -> Playlist:
    """The playlist now holds exactly `tracks` (a new version)."""
    order = _order(db, playlist.id)
    return edit(
        db,
        playlist,
        version,
        now,
        deletes=order,
        inserts=[(track_id, i) for i, track_id in enumerate(tracks)],
    )


def item_ids_at(db: Session, playlist: Playlist, indexes: Sequence[int]) -> list[int]:
    """The item ids of the entries at these positions (0-based); PLAYLIST_BAD_RANGE for one
    outside the playlist."""
    order = _order(db, playlist.id)
    for index in indexes:
        if not 0 <= index < len(order):
            raise ApiError(
                ErrorCode.PLAYLIST_BAD_RANGE, f"index {index} is outside 0..{len(order) - 1}"
            )
    return [order[i] for i in sorted(set(indexes))]


@dataclass(frozen=True)
class PlaylistNote:
    """A playlist as annotations show it."""

    playlist: Playlist
    owner_name: str
    picture: catalog.Picture


COVER_ENTRIES = 40  # a playlist's picture comes from the covers of its first entries


def pictures(db: Session, playlist_ids: Sequence[int]) -> dict[int, catalog.Picture]:
    """Each playlist's picture: the cover of its first entries' album, or a mosaic of the first
    four different covers (empty when none has a cover). Two statements for any number."""
    if not playlist_ids:
        return {}
    heads = [
        select(PlaylistItem.playlist_id, PlaylistItem.track_id, PlaylistItem.position)
        .where(PlaylistItem.playlist_id == playlist_id)
        .order_by(PlaylistItem.position, PlaylistItem.id)
        .limit(COVER_ENTRIES)
        .subquery()
        for playlist_id in sorted(set(playlist_ids))
    ]
    first = union_all(*(select(head) for head in heads)).subquery()
    covers: dict[int, list[int]] = {}
    for playlist_id, art_id in db.execute(
        select(first.c.playlist_id, Album.art_id)
        .join(Track, Track.id == first.c.track_id)
        .join(Album, Album.id == Track.album_id)
        .where(Album.art_id.is_not(None))
        .order_by(first.c.playlist_id, first.c.position)
    ):
        found = covers.setdefault(playlist_id, [])
        if art_id not in found and len(found) < 4:
            found.append(art_id)
    wanted = [a for found in covers.values() for a in found]
    arts = (
        {w.id: w for w in db.scalars(select(Artwork).where(among(db, Artwork.id, wanted)))}
        if wanted
        else {}
    )
    shown = {}
    for playlist_id in playlist_ids:
        order = covers.get(playlist_id, [])
        if len(order) >= 4:
            shown[playlist_id] = catalog.Picture(
                mosaic=tuple(arts[a].content_hash for a in order if a in arts)
            )
        else:
            shown[playlist_id] = catalog.Picture(arts.get(order[0]) if order else None)
    return shown


def notes(db: Session, listener_id: int, playlist_ids: Sequence[int]) -> dict[int, PlaylistNote]:
    """The listener's playlists among these ids, by id, as annotations show them."""
    found = by_ids(db, listener_id, playlist_ids)
    owner = db.get(Listener, listener_id)
    name = owner.username if owner is not None else ""
    shown = pictures(db, [p.id for p in found])
    return {p.id: PlaylistNote(p, name, shown[p.id]) for p in found}


# ---------------------------------------------------------------- playlist files (M3U8, XSPF)


@dataclass(frozen=True)
class Unmatched:
    line: int
    entry: str
    reason: str


def _match(db: Session, entry: playlist_files.Entry, base: Path | None) -> int | None:
    """The present track a playlist file's entry names: by MusicBrainz id, by path, by tags."""
    present = Track.missing_since.is_(None)
    if entry.mbid:
        found = db.scalar(select(Track.id).where(Track.mbid == entry.mbid, present).limit(1))
        if found is not None:
            return found
    if entry.location:
        path = playlist_files.local_path(entry.location, base)
        if path is not None:
            found = db.scalar(select(Track.id).where(Track.path == path, present).limit(1))
            if found is not None:
                return found
    if entry.artist and entry.title:
        artist = db.scalar(
            select(Artist.id).where(
                Artist.name_key == names.merge_key(names.main_artist(entry.artist))[:512]
            )
        )
        if artist is not None:
            wanted = names.search_key(entry.title)
            album_key = names.merge_key(entry.album) if entry.album else None
            candidates = db.execute(
                select(Track.id, Track.title, Album.title_key)
                .join(Album, Album.id == Track.album_id)
                .where(Track.artist_id == artist, present)
            ).all()
            same = [(t, key) for t, title, key in candidates if names.search_key(title) == wanted]
            for track_id, key in same:
                if album_key is None or key == album_key:
                    return track_id
            if same:
                return same[0][0]
    return None


def import_file(
    db: Session,
    listener_id: int,
    content: str,
    fmt: str,
    now: datetime,
    *,
    name: str | None = None,
    base: Path | None = None,
) -> tuple[Playlist, list[Unmatched]]:
    """A new playlist of the tracks a playlist file names; the entries that match no present
    track are reported by line, not dropped silently. Relative paths are read against `base`."""
    try:
        title, entries = playlist_files.read(content, fmt)
    except playlist_files.PlaylistFileError as exc:
        raise ApiError(ErrorCode.INVALID_REQUEST, str(exc)) from None
    matched: list[int] = []
    unmatched: list[Unmatched] = []
    for entry in entries:
        track_id = _match(db, entry, base)
        if track_id is None:
            reason = (
                "a URL, not a file of the library"
                if entry.location
                and playlist_files.local_path(entry.location, base) is None
                and not (entry.artist and entry.title)
                else "no track of the library matches its path, MusicBrainz id or tags"
            )
            unmatched.append(Unmatched(entry.line, entry.describe()[:300], reason))
        else:
            matched.append(track_id)
    playlist = create(db, listener_id, name or title or "Imported playlist", "", matched, now)
    return playlist, unmatched


def export_file(db: Session, playlist: Playlist, fmt: str, base: Path | None = None) -> str:
    """The playlist as an M3U8 or XSPF file (every entry, available or not)."""
    rows = db.execute(
        select(Track, Artist.name, Album.title)
        .select_from(PlaylistItem)
        .join(Track, Track.id == PlaylistItem.track_id)
        .join(Artist, Artist.id == Track.artist_id)
        .join(Album, Album.id == Track.album_id)
        .where(PlaylistItem.playlist_id == playlist.id)
        .order_by(PlaylistItem.position, PlaylistItem.id)
    ).all()
    written = [
        playlist_files.Written(t.path, artist, t.title, album, t.duration, t.mbid)
        for t, artist, album in rows
    ]
    try:
        return playlist_files.write(fmt, playlist.name, written, base)
    except playlist_files.PlaylistFileError as exc:
        raise ApiError(ErrorCode.INVALID_REQUEST, str(exc)) from None


PLAYLIST_SUFFIXES = (".m3u", ".m3u8", ".xspf")


@dataclass
class LibrarySync:
    made: int = 0
    updated: int = 0
    removed: int = 0
    unmatched: int = 0


def library_files(roots: Sequence[Path]) -> dict[str, int]:
    """Playlist files under the library folders (not following links), path -> mtime_ns."""
    found: dict[str, int] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                if name.lower().endswith(PLAYLIST_SUFFIXES) and not name.startswith("."):
                    path = os.path.join(folder, name)
                    try:
                        st = os.stat(path, follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode) and st.st_size <= playlist_files.MAX_BYTES:
                        found[os.path.abspath(path)] = st.st_mtime_ns
    return found


def sync_library_files(
    db: Session, owner_id: int, files: dict[str, int], roots: Sequence[Path], now: datetime
) -> LibrarySync:
    """Keep the owner's playlists made from the library's playlist files in step with them:
    new files make playlists, changed files replace their entries (a new version), and files
    gone from the folders take their playlists with them."""
    report = LibrarySync()
    prefixes = tuple(str(Path(r).absolute()).rstrip(os.sep) + os.sep for r in roots)
    known = {
        p.source_path: p
        for p in db.scalars(select(Playlist).where(Playlist.source_path.is_not(None)))
        if p.source_path and p.source_path.startswith(prefixes)
    }
    for path, known_playlist in known.items():
        if path not in files:
            delete_playlist(db, known_playlist, now)
            report.removed += 1
    for path, mtime in sorted(files.items()):
        existing = known.get(path)
        if existing is not None and existing.source_mtime_ns == mtime:
            continue
        try:
            with open(path, "rb") as handle:
                content = handle.read(playlist_files.MAX_BYTES + 1).decode("utf-8", "replace")
        except OSError:
            continue
        fmt = playlist_files.detect(path, content)
        try:
            title, entries = playlist_files.read(content, fmt)
        except playlist_files.PlaylistFileError:
            continue
        base = Path(path).parent
        matched = [t for t in (_match(db, e, base) for e in entries) if t is not None]
        report.unmatched += len(entries) - len(matched)
        matched = matched[:MAX_TRACKS]
        if existing is None:
            name = (title or Path(path).stem or "Library playlist")[:NAME_MAX]
            made = create(db, owner_id, name, "", matched, now)
            made.source_path, made.source_mtime_ns = path, mtime
            report.made += 1
        else:
            order = _order(db, existing.id)
            edit(db, existing, existing.version, now, deletes=order)
            _insert(db, existing.id, 0, matched, now)
            _refresh_totals(db, existing)
            existing.source_mtime_ns = mtime
            report.updated += 1
    return report


def library_owner(db: Session) -> int | None:
    """Who owns the library's playlist files: the first administrator account."""
    return db.scalar(
        select(Listener.id)
        .where(Listener.is_admin.is_(True), Listener.is_anonymous.is_(False))
        .order_by(Listener.id)
        .limit(1)
    )
