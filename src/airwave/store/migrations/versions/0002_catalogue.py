"""catalogue

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

import airwave.store.models

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "artwork",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(length=40), nullable=False),
        sa.Column("source_path", sa.Text(), nullable=False),
        sa.Column("embedded", sa.Boolean(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("dominant_color", sa.String(length=6), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_artwork")),
        sa.UniqueConstraint("content_hash", name=op.f("uq_artwork_content_hash")),
    )
    op.create_table(
        "genres",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("name_key", sa.String(length=128), nullable=False),
        sa.Column("category", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_genres")),
        sa.UniqueConstraint("name_key", name=op.f("uq_genres_name_key")),
    )
    with op.batch_alter_table("genres", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_genres_category"), ["category"], unique=False)

    op.create_table(
        "search_entries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=2), nullable=False),
        sa.Column("ref_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column("key", sa.String(length=512), nullable=False),
        sa.Column("context", sa.String(length=512), nullable=False),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_search_entries")),
    )
    with op.batch_alter_table("search_entries", schema=None) as batch_op:
        batch_op.create_index("ix_search_entries_kind_ref", ["kind", "ref_id"], unique=True)

    op.create_table(
        "artists",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column("name_key", sa.String(length=512), nullable=False),
        sa.Column("sort_name", sa.String(length=512), nullable=False),
        sa.Column("mbid", sa.String(length=36), nullable=True),
        sa.Column("art_id", sa.Integer(), nullable=True),
        sa.Column("folder", sa.Text(), nullable=True),
        sa.Column("is_composer", sa.Boolean(), nullable=False),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["art_id"], ["artwork.id"], name=op.f("fk_artists_art_id_artwork"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_artists")),
        sa.UniqueConstraint("name_key", name=op.f("uq_artists_name_key")),
    )
    with op.batch_alter_table("artists", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_artists_mbid"), ["mbid"], unique=False)

    op.create_table(
        "albums",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=512), nullable=False),
        sa.Column("title_key", sa.String(length=512), nullable=False),
        sa.Column("artist_id", sa.Integer(), nullable=False),
        sa.Column("year", sa.Integer(), nullable=True),
        sa.Column("is_compilation", sa.Boolean(), nullable=False),
        sa.Column("mbid", sa.String(length=36), nullable=True),
        sa.Column("art_id", sa.Integer(), nullable=True),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["art_id"], ["artwork.id"], name=op.f("fk_albums_art_id_artwork"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["artist_id"],
            ["artists.id"],
            name=op.f("fk_albums_artist_id_artists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_albums")),
        sa.UniqueConstraint("artist_id", "title_key", name="uq_albums_artist_title"),
    )
    with op.batch_alter_table("albums", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_albums_artist_id"), ["artist_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_albums_mbid"), ["mbid"], unique=False)

    op.create_table(
        "tracks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=512), nullable=False),
        sa.Column("artist_id", sa.Integer(), nullable=False),
        sa.Column("album_id", sa.Integer(), nullable=False),
        sa.Column("track_no", sa.Integer(), nullable=True),
        sa.Column("disc_no", sa.Integer(), nullable=True),
        sa.Column("year", sa.Integer(), nullable=True),
        sa.Column("duration", sa.Float(), nullable=False),
        sa.Column("bitrate", sa.Integer(), nullable=False),
        sa.Column("sample_rate", sa.Integer(), nullable=False),
        sa.Column("channels", sa.Integer(), nullable=False),
        sa.Column("codec", sa.String(length=16), nullable=False),
        sa.Column("composer", sa.String(length=512), nullable=True),
        sa.Column("explicit", sa.Boolean(), nullable=False),
        sa.Column("rg_track_gain", sa.Float(), nullable=True),
        sa.Column("rg_track_peak", sa.Float(), nullable=True),
        sa.Column("rg_album_gain", sa.Float(), nullable=True),
        sa.Column("mbid", sa.String(length=36), nullable=True),
        sa.Column("isrc", sa.String(length=16), nullable=True),
        sa.Column("fingerprint", sa.String(length=40), nullable=False),
        sa.Column("lyrics", sa.Text(), nullable=True),
        sa.Column("lyrics_source", sa.String(length=16), nullable=True),
        sa.Column("path", sa.Text(), nullable=True),
        sa.Column("missing_since", airwave.store.models.UTCDateTime(), nullable=True),
        sa.Column("added_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["album_id"], ["albums.id"], name=op.f("fk_tracks_album_id_albums"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["artist_id"],
            ["artists.id"],
            name=op.f("fk_tracks_artist_id_artists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tracks")),
    )
    with op.batch_alter_table("tracks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tracks_album_id"), ["album_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_tracks_artist_id"), ["artist_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_tracks_fingerprint"), ["fingerprint"], unique=False)
        batch_op.create_index(batch_op.f("ix_tracks_mbid"), ["mbid"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_tracks_missing_since"), ["missing_since"], unique=False
        )

    op.create_table(
        "library_files",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("path_hash", sa.String(length=40), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ns", sa.BigInteger(), nullable=False),
        sa.Column("content_hash", sa.String(length=40), nullable=True),
        sa.Column("track_id", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("scanned_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["track_id"],
            ["tracks.id"],
            name=op.f("fk_library_files_track_id_tracks"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_library_files")),
        sa.UniqueConstraint("path_hash", name=op.f("uq_library_files_path_hash")),
    )
    with op.batch_alter_table("library_files", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_library_files_track_id"), ["track_id"], unique=False)

    op.create_table(
        "track_genres",
        sa.Column("track_id", sa.Integer(), nullable=False),
        sa.Column("genre_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["genre_id"],
            ["genres.id"],
            name=op.f("fk_track_genres_genre_id_genres"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["track_id"],
            ["tracks.id"],
            name=op.f("fk_track_genres_track_id_tracks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("track_id", "genre_id", name=op.f("pk_track_genres")),
    )
    with op.batch_alter_table("track_genres", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_track_genres_genre_id"), ["genre_id"], unique=False)

    _create_search_index()


# The name index is backend-specific: FTS5 (word/prefix) and FTS5 trigram (fuzzy) tables kept
# in sync by triggers on SQLite; pg_trgm indexes on PostgreSQL.
SQLITE_SEARCH = [
    "CREATE VIRTUAL TABLE search_fts USING fts5(key, content='search_entries', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2', prefix='1 2 3')",
    "CREATE VIRTUAL TABLE search_tri USING fts5(key, content='search_entries', content_rowid='id', "
    "tokenize='trigram')",
    """CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN
         INSERT INTO search_fts(rowid, key) VALUES (new.id, new.key);
         INSERT INTO search_tri(rowid, key) VALUES (new.id, new.key);
       END""",
    """CREATE TRIGGER search_entries_ad AFTER DELETE ON search_entries BEGIN
         INSERT INTO search_fts(search_fts, rowid, key) VALUES ('delete', old.id, old.key);
         INSERT INTO search_tri(search_tri, rowid, key) VALUES ('delete', old.id, old.key);
       END""",
    """CREATE TRIGGER search_entries_au AFTER UPDATE ON search_entries BEGIN
         INSERT INTO search_fts(search_fts, rowid, key) VALUES ('delete', old.id, old.key);
         INSERT INTO search_tri(search_tri, rowid, key) VALUES ('delete', old.id, old.key);
         INSERT INTO search_fts(rowid, key) VALUES (new.id, new.key);
         INSERT INTO search_tri(rowid, key) VALUES (new.id, new.key);
       END""",
]
POSTGRES_SEARCH = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX ix_search_entries_key_trgm ON search_entries USING gin (key gin_trgm_ops)",
]


def _create_search_index() -> None:
    dialect = op.get_bind().dialect.name
    for statement in SQLITE_SEARCH if dialect == "sqlite" else POSTGRES_SEARCH:
        op.execute(statement)


def _drop_search_index() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("search_entries_ai", "search_entries_ad", "search_entries_au"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS search_fts")
        op.execute("DROP TABLE IF EXISTS search_tri")
    else:
        op.execute("DROP INDEX IF EXISTS ix_search_entries_key_trgm")


def downgrade() -> None:
    _drop_search_index()
    with op.batch_alter_table("track_genres", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_track_genres_genre_id"))

    op.drop_table("track_genres")
    with op.batch_alter_table("library_files", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_library_files_track_id"))

    op.drop_table("library_files")
    with op.batch_alter_table("tracks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tracks_missing_since"))
        batch_op.drop_index(batch_op.f("ix_tracks_mbid"))
        batch_op.drop_index(batch_op.f("ix_tracks_fingerprint"))
        batch_op.drop_index(batch_op.f("ix_tracks_artist_id"))
        batch_op.drop_index(batch_op.f("ix_tracks_album_id"))

    op.drop_table("tracks")
    with op.batch_alter_table("albums", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_albums_mbid"))
        batch_op.drop_index(batch_op.f("ix_albums_artist_id"))

    op.drop_table("albums")
    with op.batch_alter_table("artists", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_artists_mbid"))

    op.drop_table("artists")
    with op.batch_alter_table("search_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_search_entries_kind_ref")

    op.drop_table("search_entries")
    with op.batch_alter_table("genres", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_genres_category"))

    op.drop_table("genres")
    op.drop_table("artwork")
