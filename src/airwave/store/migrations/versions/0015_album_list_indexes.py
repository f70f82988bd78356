"""indexes for album lists: present tracks by album and by date added, albums by title key

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

PRESENT = sa.text("missing_since IS NULL")


def upgrade() -> None:
    op.create_index(
        "ix_tracks_present_album",
        "tracks",
        ["album_id"],
        sqlite_where=PRESENT,
        postgresql_where=PRESENT,
    )
    op.create_index(
        "ix_tracks_present_added",
        "tracks",
        ["added_at", "album_id"],
        sqlite_where=PRESENT,
        postgresql_where=PRESENT,
    )
    op.create_index("ix_albums_title_key", "albums", ["title_key", "id"])


def downgrade() -> None:
    op.drop_index("ix_albums_title_key", table_name="albums")
    op.drop_index("ix_tracks_present_added", table_name="tracks")
    op.drop_index("ix_tracks_present_album", table_name="tracks")
