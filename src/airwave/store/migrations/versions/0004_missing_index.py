"""partial index on tracks.missing_since

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tracks", schema=None) as batch_op:
        batch_op.drop_index("ix_tracks_missing_since")
    op.create_index(
        "ix_tracks_missing",
        "tracks",
        ["missing_since"],
        unique=False,
        sqlite_where=sa.text("missing_since IS NOT NULL"),
        postgresql_where=sa.text("missing_since IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_tracks_missing", table_name="tracks")
    with op.batch_alter_table("tracks", schema=None) as batch_op:
        batch_op.create_index("ix_tracks_missing_since", ["missing_since"], unique=False)
