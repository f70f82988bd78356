"""search entries by kind and key: exact and prefix matches from an index range

Revision ID: 0017
Revises: 0016
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_search_entries_kind_key", "search_entries", ["kind", "key"])


def downgrade() -> None:
    op.drop_index("ix_search_entries_kind_key", table_name="search_entries")
