"""track ratings, saved play queues and position bookmarks (Subsonic apps)

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

from airwave.store.models import UTCDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def _listener() -> sa.Column:
    return sa.Column(
        "listener_id",
        sa.Integer(),
        sa.ForeignKey("listeners.id", ondelete="CASCADE"),
        nullable=False,
    )


def _track() -> sa.Column:
    return sa.Column(
        "track_id", sa.Integer(), sa.ForeignKey("tracks.id", ondelete="CASCADE"), nullable=False
    )


def upgrade() -> None:
    op.create_table(
        "track_ratings",
        _listener(),
        _track(),
        sa.Column("rating", sa.Integer(), nullable=False),
        sa.Column("rated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("listener_id", "track_id", name="pk_track_ratings"),
    )
    op.create_index("ix_track_ratings_track_id", "track_ratings", ["track_id"])
    op.create_table(
        "play_queues",
        _listener(),
        sa.Column("track_ids", sa.Text(), nullable=False),
        sa.Column("current_track_id", sa.Integer(), nullable=True),
        sa.Column("position_ms", sa.BigInteger(), nullable=False),
        sa.Column("changed_at", UTCDateTime(), nullable=False),
        sa.Column("changed_by", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("listener_id", name="pk_play_queues"),
    )
    op.create_table(
        "position_bookmarks",
        sa.Column("id", sa.Integer(), primary_key=True),
        _listener(),
        _track(),
        sa.Column("position_ms", sa.BigInteger(), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("changed_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint("listener_id", "track_id", name="uq_position_bookmarks_listener_track"),
    )
    op.create_index("ix_position_bookmarks_track_id", "position_bookmarks", ["track_id"])


def downgrade() -> None:
    op.drop_index("ix_position_bookmarks_track_id", table_name="position_bookmarks")
    op.drop_table("position_bookmarks")
    op.drop_table("play_queues")
    op.drop_index("ix_track_ratings_track_id", table_name="track_ratings")
    op.drop_table("track_ratings")
