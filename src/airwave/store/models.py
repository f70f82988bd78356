"""SQLAlchemy models: the tables every backend (SQLite, PostgreSQL) shares."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out, whatever the backend keeps."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: object) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: object) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Listener(Base):
    """An account: credentials, tier and settings."""

    __tablename__ = "listeners"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64))
    username_key: Mapped[str] = mapped_column(String(64), unique=True)
    webname: Mapped[str] = mapped_column(String(80), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    tier: Mapped[str] = mapped_column(String(16), default="free")
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    display_name: Mapped[str | None] = mapped_column(String(128), nullable=True)
    birth_year: Mapped[int | None] = mapped_column(Integer, nullable=True)
    gender: Mapped[str | None] = mapped_column(String(16), nullable=True)
    zip_code: Mapped[str | None] = mapped_column(String(16), nullable=True)
    explicit_filter: Mapped[bool] = mapped_column(Boolean, default=False)
    high_quality_streaming: Mapped[bool] = mapped_column(Boolean, default=True)
    profile_private: Mapped[bool] = mapped_column(Boolean, default=False)
    email_opt_out: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_login_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    bio: Mapped[str] = mapped_column(Text, default="")
    email: Mapped[str | None] = mapped_column(String(254), nullable=True)
    explicit_pin_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)
    artist_audio_messages: Mapped[bool] = mapped_column(Boolean, default=True)
    is_anonymous: Mapped[bool] = mapped_column(Boolean, default=False)
    password_changed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # the account's active player (spec §6.5): the session that last asked for music, when, and
    # until when its claim holds (the tracks it was handed would have ended, plus a grace)
    active_session_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    active_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    active_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    # counts every change of the listener's collection (collections/getVersion)
    collection_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class AuthSession(Base):
    """A logged-in client: token and session cookie, both kept only as hashes."""

    __tablename__ = "auth_sessions"
    # ids are never reused (SQLite would otherwise): a new session inherits no old claim
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(
        ForeignKey("listeners.id", ondelete="CASCADE"), index=True
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    cookie_hash: Mapped[str] = mapped_column(String(64))
    keep_logged_in: Mapped[bool] = mapped_column(Boolean, default=False)
    timeout_seconds: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    client_address: Mapped[str | None] = mapped_column(String(64), nullable=True)
    user_agent: Mapped[str | None] = mapped_column(String(256), nullable=True)


class ThrottleCounter(Base):
    """A throttling counter (core/accounts/throttle.py): failed logins, wrong PINs, reset mails.

    `key` names what is counted and against whom; `subject` tells apart the members of a set
    under one key (an address's failing accounts, an account's known devices) and is empty for
    a plain counter. A row past `expires_at` counts as absent.
    """

    __tablename__ = "throttle_counters"
    __table_args__ = (Index("ix_throttle_counters_expires_at", "expires_at"),)

    key: Mapped[str] = mapped_column(String(160), primary_key=True)
    subject: Mapped[str] = mapped_column(String(64), primary_key=True, default="")
    count: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    blocked_until: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Station(Base):
    """A listener's station: grown from its seeds, steered by its feedback, remembered by its
    spins."""

    __tablename__ = "stations"
    __table_args__ = (
        Index("ix_stations_listener_order", "listener_id", "last_played_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_played_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    total_play_time: Mapped[int] = mapped_column(Integer, default=0)
    is_shuffle: Mapped[bool] = mapped_column(Boolean, default=False)
    is_thumbprint: Mapped[bool] = mapped_column(Boolean, default=False)
    # the seed the station was created from (kind AR/TR/GE + id); it stays the station's identity
    initial_kind: Mapped[str | None] = mapped_column(String(2), nullable=True)
    initial_ref: Mapped[int | None] = mapped_column(Integer, nullable=True)


class StationSeed(Base):
    """An artist, track or genre a station grows from."""

    __tablename__ = "station_seeds"
    __table_args__ = (
        UniqueConstraint("station_id", "kind", "ref_id", name="uq_station_seeds_station_kind_ref"),
        Index("ix_station_seeds_kind_ref", "kind", "ref_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    station_id: Mapped[int] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(2))
    ref_id: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class ShuffleMember(Base):
    """A station the listener's shuffle station mixes."""

    __tablename__ = "shuffle_members"

    shuffle_id: Mapped[int] = mapped_column(
        ForeignKey("stations.id", ondelete="CASCADE"), primary_key=True
    )
    station_id: Mapped[int] = mapped_column(
        ForeignKey("stations.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class Feedback(Base):
    """A thumb up or down for a track on one station."""

    __tablename__ = "feedback"
    __table_args__ = (
        UniqueConstraint("station_id", "track_id", name="uq_feedback_station_track"),
        Index("ix_feedback_listener_positive", "listener_id", "is_positive", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    station_id: Mapped[int] = mapped_column(ForeignKey("stations.id", ondelete="CASCADE"))
    track_id: Mapped[int] = mapped_column(ForeignKey("tracks.id", ondelete="CASCADE"), index=True)
    is_positive: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Spin(Base):
    """One track served to a listener: the station's radio history, the track token and the play
    log."""

    __tablename__ = "spins"
    __table_args__ = (
        Index("ix_spins_station_issued", "station_id", "issued_at"),
        Index("ix_spins_listener_issued", "listener_id", "issued_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token: Mapped[str] = mapped_column(String(32), unique=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    # the session the spin was handed to (spec §6.5); None for on-demand plays. Not a foreign
    # key: sessions end, and their ids are never reused (migration 0008)
    session_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    station_id: Mapped[int | None] = mapped_column(
        ForeignKey("stations.id", ondelete="SET NULL"), nullable=True
    )
    # for a shuffle spin, the mixed station the track came from (feedback goes there)
    origin_station_id: Mapped[int | None] = mapped_column(
        ForeignKey("stations.id", ondelete="SET NULL"), nullable=True
    )
    track_id: Mapped[int] = mapped_column(ForeignKey("tracks.id", ondelete="CASCADE"), index=True)
    artist_id: Mapped[int] = mapped_column(Integer)
    album_id: Mapped[int] = mapped_column(Integer)
    seed_music_id: Mapped[str | None] = mapped_column(String(16), nullable=True)
    reason: Mapped[str] = mapped_column(String(16), default="Normal")
    audio_encoding: Mapped[str | None] = mapped_column(String(16), nullable=True)
    is_replay: Mapped[bool] = mapped_column(Boolean, default=False)
    issued_at: Mapped[datetime] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    seconds_played: Mapped[float] = mapped_column(Float, default=0.0)
    outcome: Mapped[str | None] = mapped_column(
        String(12), nullable=True
    )  # "completed" / "skipped"


class SkipEvent(Base):
    """One skip a listener spent, for the per-station and daily skip limits."""

    __tablename__ = "skip_events"
    __table_args__ = (Index("ix_skip_events_listener_at", "listener_id", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    station_id: Mapped[int | None] = mapped_column(
        ForeignKey("stations.id", ondelete="SET NULL"), nullable=True
    )
    at: Mapped[datetime] = mapped_column(UTCDateTime)


class TiredTrack(Base):
    """A track the listener is tired of: off all their stations until `until`."""

    __tablename__ = "tired_tracks"

    listener_id: Mapped[int] = mapped_column(
        ForeignKey("listeners.id", ondelete="CASCADE"), primary_key=True
    )
    track_id: Mapped[int] = mapped_column(
        ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True
    )
    until: Mapped[datetime] = mapped_column(UTCDateTime)


class Artwork(Base):
    """One distinct picture (deduplicated by content hash): embedded in a file or an image file."""

    __tablename__ = "artwork"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    content_hash: Mapped[str] = mapped_column(String(40), unique=True)
    source_path: Mapped[str] = mapped_column(Text)
    embedded: Mapped[bool] = mapped_column(Boolean, default=False)
    width: Mapped[int] = mapped_column(Integer, default=0)
    height: Mapped[int] = mapped_column(Integer, default=0)
    dominant_color: Mapped[str] = mapped_column(String(6), default="808080")


class Artist(Base):
    __tablename__ = "artists"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(512))
    name_key: Mapped[str] = mapped_column(String(512), unique=True)
    sort_name: Mapped[str] = mapped_column(String(512))
    mbid: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    art_id: Mapped[int | None] = mapped_column(
        ForeignKey("artwork.id", ondelete="SET NULL"), nullable=True
    )
    folder: Mapped[str | None] = mapped_column(Text, nullable=True)
    is_composer: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Album(Base):
    __tablename__ = "albums"
    __table_args__ = (
        UniqueConstraint("artist_id", "title_key", name="uq_albums_artist_title"),
        Index("ix_albums_title_key", "title_key", "id"),  # alphabetical album lists
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(512))
    title_key: Mapped[str] = mapped_column(String(512))
    artist_id: Mapped[int] = mapped_column(ForeignKey("artists.id", ondelete="CASCADE"), index=True)
    year: Mapped[int | None] = mapped_column(Integer, nullable=True)
    is_compilation: Mapped[bool] = mapped_column(Boolean, default=False)
    mbid: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    art_id: Mapped[int | None] = mapped_column(
        ForeignKey("artwork.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class Genre(Base):
    __tablename__ = "genres"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    name_key: Mapped[str] = mapped_column(String(128), unique=True)
    category: Mapped[str] = mapped_column(String(64), index=True)


_POSTGRESQL_WHERE: list[tuple[Index, str]] = []


def _partial_index(name: str, *columns: str, where: str) -> Index:
    """An index of the rows that meet `where`, on both databases (PostgreSQL's condition is
    added by `postgresql_partial_indexes`)."""
    index = Index(name, *columns, sqlite_where=text(where))
    _POSTGRESQL_WHERE.append((index, where))
    return index


def postgresql_partial_indexes() -> None:
    """Give the partial indexes their PostgreSQL condition; run when a PostgreSQL database is
    opened. Not at import: naming a `postgresql_` argument loads SQLAlchemy's PostgreSQL dialect
    and its drivers' modules, ~15 ms of every process's start, on SQLite too."""
    while _POSTGRESQL_WHERE:
        index, where = _POSTGRESQL_WHERE.pop()
        index.dialect_kwargs["postgresql_where"] = text(where)


class Track(Base):
    """A song of the catalogue; kept (as missing) when its file vanishes so feedback survives a
    move."""

    __tablename__ = "tracks"
    # partial: nearly every track is present, and a full index on a mostly-NULL column lures
    # SQLite's
    # planner into whole-table plans for "missing_since IS NULL"
    __table_args__ = (
        _partial_index("ix_tracks_missing", "missing_since", where="missing_since IS NOT NULL"),
        # present tracks only: "has this album a present track" in one probe, and the newest
        # present tracks in order (album lists of Subsonic apps)
        _partial_index("ix_tracks_present_album", "album_id", where="missing_since IS NULL"),
        _partial_index(
            "ix_tracks_present_added", "added_at", "album_id", where="missing_since IS NULL"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(512))
    artist_id: Mapped[int] = mapped_column(ForeignKey("artists.id", ondelete="CASCADE"), index=True)
    album_id: Mapped[int] = mapped_column(ForeignKey("albums.id", ondelete="CASCADE"), index=True)
    track_no: Mapped[int | None] = mapped_column(Integer, nullable=True)
    disc_no: Mapped[int | None] = mapped_column(Integer, nullable=True)
    year: Mapped[int | None] = mapped_column(Integer, nullable=True)
    duration: Mapped[float] = mapped_column(Float, default=0.0)
    bitrate: Mapped[int] = mapped_column(Integer, default=0)
    sample_rate: Mapped[int] = mapped_column(Integer, default=0)
    channels: Mapped[int] = mapped_column(Integer, default=0)
    codec: Mapped[str] = mapped_column(String(16))
    composer: Mapped[str | None] = mapped_column(String(512), nullable=True)
    explicit: Mapped[bool] = mapped_column(Boolean, default=False)
    rg_track_gain: Mapped[float | None] = mapped_column(Float, nullable=True)
    rg_track_peak: Mapped[float | None] = mapped_column(Float, nullable=True)
    rg_album_gain: Mapped[float | None] = mapped_column(Float, nullable=True)
    mbid: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    isrc: Mapped[str | None] = mapped_column(String(16), nullable=True)
    fingerprint: Mapped[str] = mapped_column(String(40), index=True)
    lyrics: Mapped[str | None] = mapped_column(Text, nullable=True)
    lyrics_source: Mapped[str | None] = mapped_column(String(16), nullable=True)
    path: Mapped[str | None] = mapped_column(Text, nullable=True)
    missing_since: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    added_at: Mapped[datetime] = mapped_column(UTCDateTime)


class TrackGenre(Base):
    __tablename__ = "track_genres"
    __table_args__ = (Index("ix_track_genres_genre_track", "genre_id", "track_id"),)

    track_id: Mapped[int] = mapped_column(
        ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True
    )
    genre_id: Mapped[int] = mapped_column(
        ForeignKey("genres.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(Integer, default=0)


class LibraryFile(Base):
    """A file the scanner has seen: what it needs to tell changed files from unchanged ones."""

    __tablename__ = "library_files"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    path_hash: Mapped[str] = mapped_column(String(40), unique=True)
    size: Mapped[int] = mapped_column(BigInteger)
    mtime_ns: Mapped[int] = mapped_column(BigInteger)
    content_hash: Mapped[str | None] = mapped_column(String(40), nullable=True)
    track_id: Mapped[int | None] = mapped_column(
        ForeignKey("tracks.id", ondelete="SET NULL"), nullable=True, index=True
    )
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    scanned_at: Mapped[datetime] = mapped_column(UTCDateTime)


class LibraryRoot(Base):
    """A folder scanned into the catalogue: files the server reads must really live under one."""

    __tablename__ = "library_roots"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    path_hash: Mapped[str] = mapped_column(String(40), unique=True)
    scanned_at: Mapped[datetime] = mapped_column(UTCDateTime)


class SearchEntry(Base):
    """One searchable name (artist, album, track or genre); the full-text index is built on
    `key`."""

    __tablename__ = "search_entries"
    __table_args__ = (
        Index("ix_search_entries_kind_ref", "kind", "ref_id", unique=True),
        Index("ix_search_entries_kind_key", "kind", "key"),  # exact and prefix matches
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(2))
    ref_id: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(512))
    key: Mapped[str] = mapped_column(String(512))
    context: Mapped[str] = mapped_column(String(512), default="")
    weight: Mapped[int] = mapped_column(Integer, default=0)


class TrackProfile(Base):
    """A track's sound profile (library.analysis), or why it could not be analysed."""

    __tablename__ = "track_profiles"

    track_id: Mapped[int] = mapped_column(
        ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(
        String(40)
    )  # the file content the profile was made from
    profile: Mapped[str | None] = mapped_column(Text, nullable=True)  # SoundProfile JSON
    features: Mapped[bytes | None] = mapped_column(
        LargeBinary, nullable=True
    )  # float32 raw features
    gain_db: Mapped[float | None] = mapped_column(Float, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    analyzed_at: Mapped[datetime] = mapped_column(UTCDateTime)


class TrackNeighbors(Base):
    """A track's nearest neighbours in the similarity space, best first (int32 ids, float16
    similarities)."""

    __tablename__ = "track_neighbors"

    track_id: Mapped[int] = mapped_column(
        ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True
    )
    neighbor_ids: Mapped[bytes] = mapped_column(LargeBinary)
    similarities: Mapped[bytes] = mapped_column(LargeBinary)
    built_at: Mapped[datetime] = mapped_column(UTCDateTime)


class SimilarityIndex(Base):
    """What the neighbour table was built from, so a scan knows when to rebuild it."""

    __tablename__ = "similarity_index"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    signature: Mapped[str] = mapped_column(String(64))
    tracks: Mapped[int] = mapped_column(Integer)
    built_at: Mapped[datetime] = mapped_column(UTCDateTime)
    seconds: Mapped[float] = mapped_column(Float)


class Bookmark(Base):
    """A track or artist the listener saved (bookmark/*)."""

    __tablename__ = "bookmarks"
    __table_args__ = (
        UniqueConstraint("listener_id", "kind", "ref_id", name="uq_bookmarks_listener_kind_ref"),
        Index("ix_bookmarks_listener_created", "listener_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(2))  # "AR" artist, "TR" track
    ref_id: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class CollectionItem(Base):
    """An artist, album, track or playlist in a listener's collection ("My Collection").

    Row ids only grow: a page cursor of "newest first" is the last id seen, so items added
    meanwhile never shift the pages after it.
    """

    __tablename__ = "collection_items"
    __table_args__ = (
        UniqueConstraint(
            "listener_id", "kind", "ref_id", name="uq_collection_items_listener_kind_ref"
        ),
        Index("ix_collection_items_listener_id", "listener_id", "id"),
        Index("ix_collection_items_listener_name", "listener_id", "sort_name", "id"),
        Index(
            "ix_collection_items_listener_artist", "listener_id", "sort_artist", "sort_name", "id"
        ),
        Index("ix_collection_items_listener_touched", "listener_id", "touched_at", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(2))  # "AR", "AL", "TR", "PL"
    ref_id: Mapped[int] = mapped_column(Integer)
    sort_name: Mapped[str] = mapped_column(String(255))  # casefolded name, for name order
    sort_artist: Mapped[str] = mapped_column(String(255))  # casefolded artist (or owner) name
    added_at: Mapped[datetime] = mapped_column(UTCDateTime)
    touched_at: Mapped[datetime] = mapped_column(UTCDateTime)  # added, played or edited


class Playlist(Base):
    """A listener's playlist: a named, ordered list of tracks that edits version by version."""

    __tablename__ = "playlists"
    __table_args__ = (Index("ix_playlists_listener", "listener_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    version: Mapped[int] = mapped_column(Integer, default=1)
    total_tracks: Mapped[int] = mapped_column(Integer, default=0)
    duration: Mapped[float] = mapped_column(Float, default=0.0)  # seconds, of its tracks
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # a playlist file of the library folders it was made from (kept in step by scans)
    source_path: Mapped[str | None] = mapped_column(Text, nullable=True)
    source_mtime_ns: Mapped[int | None] = mapped_column(BigInteger, nullable=True)


class PlaylistItem(Base):
    """One entry of a playlist: a track at a position. Its id (the itemId) names this entry, so
    the same track twice is two entries, each movable and removable on its own."""

    __tablename__ = "playlist_items"
    __table_args__ = (Index("ix_playlist_items_position", "playlist_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    playlist_id: Mapped[int] = mapped_column(ForeignKey("playlists.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)  # 0-based, dense
    track_id: Mapped[int] = mapped_column(Integer)
    added_at: Mapped[datetime] = mapped_column(UTCDateTime)


class AutoplayFeedback(Base):
    """A thumb on a track autoplay chose after an album, playlist or track (its context)."""

    __tablename__ = "autoplay_feedback"
    __table_args__ = (
        UniqueConstraint(
            "listener_id",
            "context_kind",
            "context_id",
            "track_id",
            name="uq_autoplay_feedback_context_track",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    context_kind: Mapped[str] = mapped_column(String(2))  # "AL", "PL", "TR", "AR"
    context_id: Mapped[int] = mapped_column(Integer)
    track_id: Mapped[int] = mapped_column(Integer)
    is_positive: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PasswordReset(Base):
    """A single-use password reset token (stored as a hash), mailed by listener/emailPassword."""

    __tablename__ = "password_resets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(
        ForeignKey("listeners.id", ondelete="CASCADE"), index=True
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class AdCampaign(Base):
    """An operator's ad: an audio file, a title, a click-through URL, a flight window and a
    weight."""

    __tablename__ = "ad_campaigns"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(256))
    path: Mapped[str] = mapped_column(Text)  # copy kept under data_dir/ads
    codec: Mapped[str] = mapped_column(String(16))
    duration: Mapped[float] = mapped_column(Float, default=0.0)
    click_url: Mapped[str] = mapped_column(Text)
    art_id: Mapped[int | None] = mapped_column(
        ForeignKey("artwork.id", ondelete="SET NULL"), nullable=True
    )
    starts_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    ends_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    weight: Mapped[int] = mapped_column(Integer, default=1)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    broken_reports: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


class AdSpin(Base):
    """One ad handed to one listener (its adToken); the impression is counted once per token."""

    __tablename__ = "ad_spins"
    __table_args__ = (Index("ix_ad_spins_listener_issued", "listener_id", "issued_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token: Mapped[str] = mapped_column(String(32), unique=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("ad_campaigns.id", ondelete="CASCADE"), index=True
    )
    station_id: Mapped[int | None] = mapped_column(
        ForeignKey("stations.id", ondelete="SET NULL"), nullable=True
    )
    in_fragment: Mapped[bool] = mapped_column(Boolean, default=False)
    issued_at: Mapped[datetime] = mapped_column(UTCDateTime)
    impression_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    reported_broken: Mapped[bool] = mapped_column(Boolean, default=False)


class AdImpressionDay(Base):
    """Impressions per campaign and UTC day: the operator's report, kept when listeners leave."""

    __tablename__ = "ad_impression_days"

    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("ad_campaigns.id", ondelete="CASCADE"), primary_key=True
    )
    day: Mapped[str] = mapped_column(String(10), primary_key=True)  # YYYY-MM-DD
    impressions: Mapped[int] = mapped_column(Integer, default=0)


class AppPassword(Base):
    """A listener's app password (Subsonic apps): the secret only encrypted, with a key kept in
    the data dir (core/accounts/app_passwords.py), and an HMAC of it to find it by."""

    __tablename__ = "app_passwords"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(
        ForeignKey("listeners.id", ondelete="CASCADE"), index=True
    )
    label: Mapped[str] = mapped_column(String(64))
    lookup: Mapped[str] = mapped_column(String(64), unique=True)
    sealed: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class TrackRating(Base):
    """A listener's star rating of a track (Subsonic setRating, OpenSubsonic userRating), 1-5."""

    __tablename__ = "track_ratings"

    listener_id: Mapped[int] = mapped_column(
        ForeignKey("listeners.id", ondelete="CASCADE"), primary_key=True
    )
    track_id: Mapped[int] = mapped_column(
        ForeignKey("tracks.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    rating: Mapped[int] = mapped_column(Integer)
    rated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PlayQueue(Base):
    """The play queue an app saved (Subsonic savePlayQueue), one per listener, to resume on
    another device."""

    __tablename__ = "play_queues"

    listener_id: Mapped[int] = mapped_column(
        ForeignKey("listeners.id", ondelete="CASCADE"), primary_key=True
    )
    track_ids: Mapped[str] = mapped_column(Text, default="")  # comma-separated, in order
    current_track_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    position_ms: Mapped[int] = mapped_column(BigInteger, default=0)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    changed_by: Mapped[str] = mapped_column(String(64), default="")


class PositionBookmark(Base):
    """Where a listener stopped in a track (Subsonic bookmarks): not the REST bookmarks, which
    mark artists and songs the listener likes, with no position."""

    __tablename__ = "position_bookmarks"
    __table_args__ = (
        UniqueConstraint("listener_id", "track_id", name="uq_position_bookmarks_listener_track"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    track_id: Mapped[int] = mapped_column(ForeignKey("tracks.id", ondelete="CASCADE"), index=True)
    position_ms: Mapped[int] = mapped_column(BigInteger, default=0)
    comment: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime)


class CatalogStamp(Base):
    """One row whose stamp changes in every transaction that changes what the catalogue shows
    (tracks, albums, artists, their art, presence): a process may keep what it read of the
    catalogue while the stamp it read before is still the stamp (core/music.py)."""

    __tablename__ = "catalog_stamp"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    stamp: Mapped[int] = mapped_column(BigInteger, default=0)


class ClusterLease(Base):
    """A role one process at a time plays for the whole instance, across its worker processes
    and hosts (core/cluster.py): housekeeping, the library's scans and analysis. The holder
    renews it well before `expires_at`; past it, any process may take it over. `state` is what
    the holder publishes for the others (the scan's progress), `requested_at` asks the holder
    for work (a rescan asked of another process)."""

    __tablename__ = "cluster_leases"

    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    holder: Mapped[str | None] = mapped_column(String(200), nullable=True)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    state: Mapped[str | None] = mapped_column(Text, nullable=True)
    requested_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class ClusterMember(Base):
    """A running server process (`host/pid`), seen while it renews `seen_at`."""

    __tablename__ = "cluster_members"
    __table_args__ = (Index("ix_cluster_members_seen_at", "seen_at"),)

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime)


class SharedFingerprint(Base):
    """What every host of an instance must have alike (a key in the data dir, the library's
    folders), as one host recorded it: a keyed hash for secrets, never the secret itself."""

    __tablename__ = "shared_fingerprints"

    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(Text)
    recorded_by: Mapped[str] = mapped_column(String(200))
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime)
