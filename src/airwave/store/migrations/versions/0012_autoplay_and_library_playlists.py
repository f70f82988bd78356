"""thumbs on the tracks autoplay chose after an album, playlist or track; playlists made from
the library's playlist files

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

from airwave.store.models import UTCDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("playlists", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source_path", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("source_mtime_ns", sa.BigInteger(), nullable=True))
    op.create_table(
        "autoplay_feedback",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "listener_id",
            sa.Integer(),
            sa.ForeignKey("listeners.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("context_kind", sa.String(2), nullable=False),
        sa.Column("context_id", sa.Integer(), nullable=False),
        sa.Column("track_id", sa.Integer(), nullable=False),
        sa.Column("is_positive", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.UniqueConstraint(
            "listener_id",
            "context_kind",
            "context_id",
            "track_id",
            name="uq_autoplay_feedback_context_track",
        ),
    )


def downgrade() -> None:
    op.drop_table("autoplay_feedback")
    with op.batch_alter_table("playlists", schema=None) as batch_op:
        batch_op.drop_column("source_mtime_ns")
        batch_op.drop_column("source_path")
