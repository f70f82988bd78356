"""collections ("My Collection") and playlists, for on-demand listening

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

from airwave.store.models import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("listeners", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("collection_version", sa.Integer(), nullable=False, server_default="0")
        )
    op.create_table(
        "collection_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "listener_id",
            sa.Integer(),
            sa.ForeignKey("listeners.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("kind", sa.String(2), nullable=False),
        sa.Column("ref_id", sa.Integer(), nullable=False),
        sa.Column("sort_name", sa.String(255), nullable=False),
        sa.Column("sort_artist", sa.String(255), nullable=False),
        sa.Column("added_at", UTCDateTime(), nullable=False),
        sa.Column("touched_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint(
            "listener_id", "kind", "ref_id", name="uq_collection_items_listener_kind_ref"
        ),
    )
    for name, columns in (
        ("ix_collection_items_listener_id", ["listener_id", "id"]),
        ("ix_collection_items_listener_name", ["listener_id", "sort_name", "id"]),
        ("ix_collection_items_listener_artist", ["listener_id", "sort_artist", "sort_name", "id"]),
        ("ix_collection_items_listener_touched", ["listener_id", "touched_at", "id"]),
    ):
        op.create_index(name, "collection_items", columns)
    op.create_table(
        "playlists",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "listener_id",
            sa.Integer(),
            sa.ForeignKey("listeners.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("total_tracks", sa.Integer(), nullable=False),
        sa.Column("duration", sa.Float(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_playlists_listener", "playlists", ["listener_id"])
    op.create_table(
        "playlist_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "playlist_id",
            sa.Integer(),
            sa.ForeignKey("playlists.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("track_id", sa.Integer(), nullable=False),
        sa.Column("added_at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_playlist_items_position", "playlist_items", ["playlist_id", "position"])


def downgrade() -> None:
    op.drop_table("playlist_items")
    op.drop_table("playlists")
    op.drop_table("collection_items")
    with op.batch_alter_table("listeners", schema=None) as batch_op:
        batch_op.drop_column("collection_version")
