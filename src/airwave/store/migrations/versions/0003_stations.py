"""stations

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

import airwave.store.models

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "similarity_index",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=False),
        sa.Column("tracks", sa.Integer(), nullable=False),
        sa.Column("built_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_similarity_index")),
    )
    op.create_table(
        "shuffle_members",
        sa.Column("shuffle_id", sa.Integer(), nullable=False),
        sa.Column("station_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["shuffle_id"],
            ["stations.id"],
            name=op.f("fk_shuffle_members_shuffle_id_stations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_shuffle_members_station_id_stations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("shuffle_id", "station_id", name=op.f("pk_shuffle_members")),
    )
    with op.batch_alter_table("shuffle_members", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_shuffle_members_station_id"), ["station_id"], unique=False
        )

    op.create_table(
        "skip_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("listener_id", sa.Integer(), nullable=False),
        sa.Column("station_id", sa.Integer(), nullable=True),
        sa.Column("at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["listener_id"],
            ["listeners.id"],
            name=op.f("fk_skip_events_listener_id_listeners"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_skip_events_station_id_stations"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_skip_events")),
    )
    with op.batch_alter_table("skip_events", schema=None) as batch_op:
        batch_op.create_index("ix_skip_events_listener_at", ["listener_id", "at"], unique=False)

    op.create_table(
        "station_seeds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("station_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=2), nullable=False),
        sa.Column("ref_id", sa.Integer(), nullable=False),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_station_seeds_station_id_stations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_station_seeds")),
        sa.UniqueConstraint(
            "station_id", "kind", "ref_id", name="uq_station_seeds_station_kind_ref"
        ),
    )
    with op.batch_alter_table("station_seeds", schema=None) as batch_op:
        batch_op.create_index("ix_station_seeds_kind_ref", ["kind", "ref_id"], unique=False)

    op.create_table(
        "feedback",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("listener_id", sa.Integer(), nullable=False),
        sa.Column("station_id", sa.Integer(), nullable=False),
        sa.Column("track_id", sa.Integer(), nullable=False),
        sa.Column("is_positive", sa.Boolean(), nullable=False),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["listener_id"],
            ["listeners.id"],
            name=op.f("fk_feedback_listener_id_listeners"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_feedback_station_id_stations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["track_id"],
            ["tracks.id"],
            name=op.f("fk_feedback_track_id_tracks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_feedback")),
        sa.UniqueConstraint("station_id", "track_id", name="uq_feedback_station_track"),
    )
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.create_index(
            "ix_feedback_listener_positive",
            ["listener_id", "is_positive", "created_at"],
            unique=False,
        )
        batch_op.create_index(batch_op.f("ix_feedback_track_id"), ["track_id"], unique=False)

    op.create_table(
        "spins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.Column("listener_id", sa.Integer(), nullable=False),
        sa.Column("station_id", sa.Integer(), nullable=True),
        sa.Column("origin_station_id", sa.Integer(), nullable=True),
        sa.Column("track_id", sa.Integer(), nullable=False),
        sa.Column("artist_id", sa.Integer(), nullable=False),
        sa.Column("album_id", sa.Integer(), nullable=False),
        sa.Column("seed_music_id", sa.String(length=16), nullable=True),
        sa.Column("reason", sa.String(length=16), nullable=False),
        sa.Column("audio_encoding", sa.String(length=16), nullable=True),
        sa.Column("is_replay", sa.Boolean(), nullable=False),
        sa.Column("issued_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("started_at", airwave.store.models.UTCDateTime(), nullable=True),
        sa.Column("ended_at", airwave.store.models.UTCDateTime(), nullable=True),
        sa.Column("seconds_played", sa.Float(), nullable=False),
        sa.Column("outcome", sa.String(length=12), nullable=True),
        sa.ForeignKeyConstraint(
            ["listener_id"],
            ["listeners.id"],
            name=op.f("fk_spins_listener_id_listeners"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["origin_station_id"],
            ["stations.id"],
            name=op.f("fk_spins_origin_station_id_stations"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_spins_station_id_stations"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["track_id"], ["tracks.id"], name=op.f("fk_spins_track_id_tracks"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_spins")),
        sa.UniqueConstraint("token", name=op.f("uq_spins_token")),
    )
    with op.batch_alter_table("spins", schema=None) as batch_op:
        batch_op.create_index(
            "ix_spins_listener_issued", ["listener_id", "issued_at"], unique=False
        )
        batch_op.create_index("ix_spins_station_issued", ["station_id", "issued_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_spins_track_id"), ["track_id"], unique=False)

    op.create_table(
        "tired_tracks",
        sa.Column("listener_id", sa.Integer(), nullable=False),
        sa.Column("track_id", sa.Integer(), nullable=False),
        sa.Column("until", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["listener_id"],
            ["listeners.id"],
            name=op.f("fk_tired_tracks_listener_id_listeners"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["track_id"],
            ["tracks.id"],
            name=op.f("fk_tired_tracks_track_id_tracks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("listener_id", "track_id", name=op.f("pk_tired_tracks")),
    )
    op.create_table(
        "track_neighbors",
        sa.Column("track_id", sa.Integer(), nullable=False),
        sa.Column("neighbor_ids", sa.LargeBinary(), nullable=False),
        sa.Column("similarities", sa.LargeBinary(), nullable=False),
        sa.Column("built_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["track_id"],
            ["tracks.id"],
            name=op.f("fk_track_neighbors_track_id_tracks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("track_id", name=op.f("pk_track_neighbors")),
    )
    op.create_table(
        "track_profiles",
        sa.Column("track_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=40), nullable=False),
        sa.Column("profile", sa.Text(), nullable=True),
        sa.Column("features", sa.LargeBinary(), nullable=True),
        sa.Column("gain_db", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("analyzed_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["track_id"],
            ["tracks.id"],
            name=op.f("fk_track_profiles_track_id_tracks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("track_id", name=op.f("pk_track_profiles")),
    )
    with op.batch_alter_table("listeners", schema=None) as batch_op:
        batch_op.add_column(sa.Column("active_session_id", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("active_at", airwave.store.models.UTCDateTime(), nullable=True)
        )

    with op.batch_alter_table("stations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("initial_kind", sa.String(length=2), nullable=True))
        batch_op.add_column(sa.Column("initial_ref", sa.Integer(), nullable=True))

    with op.batch_alter_table("track_genres", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_track_genres_genre_id"))
        batch_op.create_index("ix_track_genres_genre_track", ["genre_id", "track_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("track_genres", schema=None) as batch_op:
        batch_op.drop_index("ix_track_genres_genre_track")
        batch_op.create_index(batch_op.f("ix_track_genres_genre_id"), ["genre_id"], unique=False)

    with op.batch_alter_table("stations", schema=None) as batch_op:
        batch_op.drop_column("initial_ref")
        batch_op.drop_column("initial_kind")

    with op.batch_alter_table("listeners", schema=None) as batch_op:
        batch_op.drop_column("active_at")
        batch_op.drop_column("active_session_id")

    op.drop_table("track_profiles")
    op.drop_table("track_neighbors")
    op.drop_table("tired_tracks")
    with op.batch_alter_table("spins", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_spins_track_id"))
        batch_op.drop_index("ix_spins_station_issued")
        batch_op.drop_index("ix_spins_listener_issued")

    op.drop_table("spins")
    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_feedback_track_id"))
        batch_op.drop_index("ix_feedback_listener_positive")

    op.drop_table("feedback")
    with op.batch_alter_table("station_seeds", schema=None) as batch_op:
        batch_op.drop_index("ix_station_seeds_kind_ref")

    op.drop_table("station_seeds")
    with op.batch_alter_table("skip_events", schema=None) as batch_op:
        batch_op.drop_index("ix_skip_events_listener_at")

    op.drop_table("skip_events")
    with op.batch_alter_table("shuffle_members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_shuffle_members_station_id"))

    op.drop_table("shuffle_members")
    op.drop_table("similarity_index")
