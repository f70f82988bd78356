"""Browsing: artists and indexes, artist, album, song, folder-style directories, genres, album
lists, random songs. Ids are Airwave's musicIds (R artist, L album, S track), also as cover art
ids."""

from __future__ import annotations

import random
from pathlib import PurePath
from typing import Any

from airwave.api.subsonic.dispatch import Payload, SubsonicCall, method
from airwave.api.subsonic.envelope import Rendered
from airwave.api.subsonic.system import MUSIC_FOLDER_ID
from airwave.audio.formats import original_content_type
from airwave.core import collection, ids, ratings, search
from airwave.core.catalog import browse, catalog, kept
from airwave.core.catalog.catalog import TrackView
from airwave.core.clock import iso_timestamp

IGNORED_ARTICLES = "The El La Los Las Le Les"
_rng = random.SystemRandom()


def _index_letter(sort_name: str) -> str:
    first = sort_name[:1].upper()
    return first if first.isalpha() else "#"


def _indexed(entries: list[browse.ArtistEntry], shape: Any) -> list[Payload]:  # noqa: ANN401
    index: dict[str, list[Payload]] = {}
    for entry in entries:
        index.setdefault(_index_letter(entry.artist.sort_name), []).append(shape(entry))
    return [{"name": letter, "artist": artists} for letter, artists in index.items()]


# every album artist by initial, as getArtists and getIndexes show it, kept while the catalogue
# holds (apps ask for it at every start and sync; it holds nothing of the caller's)
_ARTIST_INDEXES: kept.Kept[str, Rendered] = kept.Kept(limit=2)


def _artist_index(s: SubsonicCall, name: str, shape: Any) -> Rendered:  # noqa: ANN401
    db = s.call.reader()
    return _ARTIST_INDEXES.get(
        kept.stamp(db),
        name,
        lambda: Rendered(_indexed(browse.album_artists(db), shape), "index"),
    )


def _index_payload(entry: browse.ArtistEntry) -> Payload:
    return {"id": ids.music_id("artist", entry.artist.id), "name": entry.artist.name}


def artist_payload(entry: browse.ArtistEntry) -> Payload:
    return {
        "id": ids.music_id("artist", entry.artist.id),
        "name": entry.artist.name,
        "albumCount": entry.album_count,
        "coverArt": ids.music_id("artist", entry.artist.id),
    }


def album_payload(entry: browse.AlbumEntry) -> Payload:
    """An AlbumID3 element."""
    album = entry.album
    return {
        "id": ids.music_id("album", album.id),
        "name": album.title,
        "artist": entry.artist.name,
        "artistId": ids.music_id("artist", entry.artist.id),
        "coverArt": ids.music_id("album", album.id) if entry.art is not None else None,
        "songCount": entry.song_count,
        "duration": round(entry.duration),
        "created": iso_timestamp(album.created_at),
        "year": album.year,
        "genre": entry.genre,
    }


def album_directory(entry: browse.AlbumEntry) -> Payload:
    """An album as a child folder (getMusicDirectory of an artist, getAlbumList)."""
    album = entry.album
    return {
        "id": ids.music_id("album", album.id),
        "parent": ids.music_id("artist", entry.artist.id),
        "isDir": True,
        "title": album.title,
        "album": album.title,
        "artist": entry.artist.name,
        "year": album.year,
        "genre": entry.genre,
        "coverArt": ids.music_id("album", album.id) if entry.art is not None else None,
        "songCount": entry.song_count,
        "duration": round(entry.duration),
        "created": iso_timestamp(album.created_at),
    }


def song_payload(view: TrackView) -> Payload:
    """A Child element for a track: what players show and need to pick a stream."""
    track = view.track
    suffix = PurePath(track.path or "").suffix.lstrip(".").lower() or track.codec
    number = f"{track.track_no:02d} " if track.track_no else ""
    return {
        "id": ids.music_id("track", track.id),
        "parent": ids.music_id("album", view.album.id),
        "isDir": False,
        "title": track.title,
        "album": view.album.title,
        "artist": view.artist.name,
        "track": track.track_no,
        "discNumber": track.disc_no,
        "year": track.year or view.album.year,
        "genre": view.genres[0] if view.genres else None,
        "coverArt": ids.music_id("album", view.album.id) if view.album_art is not None else None,
        "contentType": original_content_type(track.path or "", track.codec),
        "suffix": suffix,
        "duration": round(track.duration),
        "bitRate": round(track.bitrate / 1000) if track.bitrate else None,
        "path": f"{view.album_artist.name}/{view.album.title}/{number}{track.title}.{suffix}",
        "created": iso_timestamp(track.added_at),
        "albumId": ids.music_id("album", view.album.id),
        "artistId": ids.music_id("artist", view.artist.id),
        "type": "music",
        "isVideo": False,
    }


def starred(s: SubsonicCall, kind: ids.Kind, ref_ids: list[int]) -> dict[int, str]:
    """When the caller starred (collected) each of these objects, as `starred` shows it."""
    refs = [ids.Ref(kind, i) for i in ref_ids]
    kept = collection.added_at(s.call.reader(), s.call.require_listener().id, refs)
    return {ref.id: iso_timestamp(at) for ref, at in kept.items()}


def songs(s: SubsonicCall, track_ids: list[int]) -> list[Payload]:
    """Child elements of tracks, with `starred` where the caller collected them and
    `userRating` where they rated them."""
    views = catalog.track_views(s.call.reader(), track_ids)
    found = [v.track.id for v in views]
    marks = starred(s, "track", found)
    rated = ratings.ratings_of(s.call.reader(), s.call.require_listener().id, found)
    return [
        {**song_payload(v), "starred": marks.get(v.track.id), "userRating": rated.get(v.track.id)}
        for v in views
    ]


def albums_of(s: SubsonicCall, entries: list[browse.AlbumEntry], shape: Any) -> list[Payload]:  # noqa: ANN401
    """Album elements (`shape`: AlbumID3 or a folder), with `starred` where collected."""
    marks = starred(s, "album", [e.album.id for e in entries])
    return [{**shape(e), "starred": marks.get(e.album.id)} for e in entries]


def _year(s: SubsonicCall, name: str) -> int | None:
    return s.number(name, 0, low=0, high=9999) if s.text(name) else None


@method("getArtists")
def get_artists(s: SubsonicCall) -> Payload:
    index = _artist_index(s, "artists", artist_payload)
    return {"artists": {"ignoredArticles": IGNORED_ARTICLES, "index": index}}


@method("getIndexes")
def get_indexes(s: SubsonicCall) -> Payload:
    index = _artist_index(s, "indexes", _index_payload)
    return {"indexes": {"lastModified": 0, "ignoredArticles": IGNORED_ARTICLES, "index": index}}


@method("getArtist")
def get_artist(s: SubsonicCall) -> Payload:
    db = s.call.reader()
    ref = catalog.resolve(s.required("id"), "artist")
    artist = catalog.artist(db, ref.id)
    albums = browse.albums(db, browse.artist_album_ids(db, artist.id))
    return {
        "artist": {
            "id": ids.music_id("artist", artist.id),
            "name": artist.name,
            "albumCount": len(albums),
            "coverArt": ids.music_id("artist", artist.id),
            "album": albums_of(s, albums, album_payload),
        }
    }


@method("getAlbum")
def get_album(s: SubsonicCall) -> Payload:
    db = s.call.reader()
    ref = catalog.resolve(s.required("id"), "album")
    entry = browse.albums(db, [catalog.album(db, ref.id).id])[0]
    (album,) = albums_of(s, [entry], album_payload)
    return {"album": {**album, "song": songs(s, catalog.album_tracks(db, ref.id))}}


@method("getSong")
def get_song(s: SubsonicCall) -> Payload:
    ref = catalog.resolve(s.required("id"), "track")
    catalog.track(s.call.reader(), ref.id)
    return {"song": songs(s, [ref.id])[0]}


@method("getMusicDirectory")
def get_music_directory(s: SubsonicCall) -> Payload:
    """Artists hold their albums, albums their songs (Airwave has no folder tree of its own)."""
    db = s.call.reader()
    ref = catalog.resolve(s.required("id"), "artist", "album")
    if ref.kind == "artist":
        artist = catalog.artist(db, ref.id)
        albums = browse.albums(db, browse.artist_album_ids(db, artist.id))
        return {
            "directory": {
                "id": ids.music_id("artist", artist.id),
                "parent": MUSIC_FOLDER_ID,
                "name": artist.name,
                "child": albums_of(s, albums, album_directory),
            }
        }
    entry = browse.albums(db, [catalog.album(db, ref.id).id])[0]
    return {
        "directory": {
            "id": ids.music_id("album", entry.album.id),
            "parent": ids.music_id("artist", entry.artist.id),
            "name": entry.album.title,
            "child": songs(s, catalog.album_tracks(db, ref.id)),
        }
    }


@method("getGenres")
def get_genres(s: SubsonicCall) -> Payload:
    return {
        "genres": {
            "genre": [
                {"songCount": songs_, "albumCount": albums_, "value": name}
                for name, songs_, albums_ in browse.genres(s.call.reader())
            ]
        }
    }


def _album_page(s: SubsonicCall) -> list[browse.AlbumEntry]:
    db = s.call.reader()
    album_ids = browse.album_list(
        db,
        s.required("type"),
        size=s.number("size", 10, low=1, high=500),
        offset=s.number("offset", 0),
        rng=_rng,
        from_year=_year(s, "fromYear"),
        to_year=_year(s, "toYear"),
        genre=s.text("genre"),
        listener_id=s.call.require_listener().id,
    )
    return browse.albums(db, album_ids)


@method("getAlbumList2")
def get_album_list2(s: SubsonicCall) -> Payload:
    return {"albumList2": {"album": albums_of(s, _album_page(s), album_payload)}}


@method("getAlbumList")
def get_album_list(s: SubsonicCall) -> Payload:
    return {"albumList": {"album": albums_of(s, _album_page(s), album_directory)}}


@method("getRandomSongs")
def get_random_songs(s: SubsonicCall) -> Payload:
    track_ids = browse.random_track_ids(
        s.call.reader(),
        s.number("size", 10, low=1, high=500),
        _rng,
        genre=s.text("genre"),
        from_year=_year(s, "fromYear"),
        to_year=_year(s, "toYear"),
    )
    return {"randomSongs": {"song": songs(s, track_ids)}}


def _found(s: SubsonicCall, kind: str, prefix: str) -> list[int]:
    return search.find(
        s.call.reader(),
        s.text("query", "") or "",
        kind,
        s.number(f"{prefix}Offset", 0),
        s.number(f"{prefix}Count", 20, high=500),
    )


@method("search3")
def search3(s: SubsonicCall) -> Payload:
    db = s.call.reader()
    return {
        "searchResult3": {
            "artist": [
                artist_payload(e) for e in browse.album_artists(db, _found(s, "artist", "artist"))
            ],
            "album": albums_of(s, browse.albums(db, _found(s, "album", "album")), album_payload),
            "song": songs(s, _found(s, "track", "song")),
        }
    }


@method("search2")
def search2(s: SubsonicCall) -> Payload:
    db = s.call.reader()
    artists = browse.album_artists(db, _found(s, "artist", "artist"))
    return {
        "searchResult2": {
            "artist": [
                {"id": ids.music_id("artist", e.artist.id), "name": e.artist.name} for e in artists
            ],
            "album": albums_of(s, browse.albums(db, _found(s, "album", "album")), album_directory),
            "song": songs(s, _found(s, "track", "song")),
        }
    }


@method("getSongsByGenre")
def get_songs_by_genre(s: SubsonicCall) -> Payload:
    track_ids = browse.genre_track_ids(
        s.call.reader(),
        s.required("genre"),
        s.number("offset", 0),
        s.number("count", 10, low=1, high=500),
    )
    return {"songsByGenre": {"song": songs(s, track_ids)}}


@method("getInternetRadioStations")
def get_internet_radio_stations(s: SubsonicCall) -> Payload:
    """Airwave keeps no internet radio stations: the list is empty."""
    return {"internetRadioStations": {}}


@method("getLyricsBySongId")
def get_lyrics_by_song_id(s: SubsonicCall) -> Payload:
    """OpenSubsonic songLyrics: the track's lyrics, synced when the file had timestamps."""
    ref = catalog.resolve(s.required("id"), "track")
    view = catalog.track_views(s.call.reader(), [catalog.track(s.call.reader(), ref.id).id])[0]
    lyrics = catalog.lyrics_of(view.track)
    if lyrics is None:
        return {"lyricsList": {}}
    if lyrics.timed:
        lines: list[Payload] = [
            {"start": round(at * 1000), "value": text} for at, text in lyrics.timed
        ]
    else:
        lines = [{"value": text} for text in lyrics.lines]
    return {
        "lyricsList": {
            "structuredLyrics": [
                {
                    "displayArtist": view.artist.name,
                    "displayTitle": view.track.title,
                    "lang": "und",
                    "offset": 0,
                    "synced": bool(lyrics.timed),
                    "line": lines,
                }
            ]
        }
    }


def _image_urls(s: SubsonicCall, ref: ids.Ref) -> Payload:
    """Absolute /art/ URLs of an object's picture at three sizes (none when it has no picture)."""
    key = browse.picture_key(s.call.reader(), ref)
    if key is None:
        return {}
    base = s.call.base_url
    return {
        name: f"{base}/art/{key}/{size}.jpg"
        for name, size in (("smallImageUrl", 130), ("mediumImageUrl", 500), ("largeImageUrl", 1080))
    }


def _similar(s: SubsonicCall) -> tuple[ids.Ref, list[browse.ArtistEntry]]:
    db = s.call.reader()
    ref = catalog.resolve(s.required("id"), "artist")
    artist = catalog.artist(db, ref.id)
    near = catalog.nearest_artists(db, artist.id, s.number("count", 20, low=1, high=100))
    return ref, browse.album_artists(db, [a.id for a in near])


@method("getArtistInfo2")
def get_artist_info2(s: SubsonicCall) -> Payload:
    """The artist's picture and its nearest artists in Airwave's similarity space."""
    ref, near = _similar(s)
    return {
        "artistInfo2": {**_image_urls(s, ref), "similarArtist": [artist_payload(e) for e in near]}
    }


@method("getArtistInfo")
def get_artist_info(s: SubsonicCall) -> Payload:
    ref, near = _similar(s)
    similar = [{"id": ids.music_id("artist", e.artist.id), "name": e.artist.name} for e in near]
    return {"artistInfo": {**_image_urls(s, ref), "similarArtist": similar}}


def _album_info(s: SubsonicCall) -> Payload:
    ref = catalog.resolve(s.required("id"), "album")
    catalog.album(s.call.reader(), ref.id)
    return _image_urls(s, ref)


@method("getAlbumInfo2")
def get_album_info2(s: SubsonicCall) -> Payload:
    return {"albumInfo": _album_info(s)}


@method("getAlbumInfo")
def get_album_info(s: SubsonicCall) -> Payload:
    return {"albumInfo": _album_info(s)}


@method("getTopSongs")
def get_top_songs(s: SubsonicCall) -> Payload:
    """The named artist's most played tracks across listeners (none for an unknown name)."""
    db = s.call.reader()
    artist = browse.artist_named(db, s.required("artist"))
    count = s.number("count", 50, low=1, high=500)
    track_ids = catalog.top_tracks(db, artist.id, count) if artist is not None else []
    return {"topSongs": {"song": songs(s, track_ids)}}
