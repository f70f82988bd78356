"""search entries' inserts reach the SQLite full-text tables by batch, not by a per-row trigger

On SQLite, new search entries are copied into search_fts and search_tri by one INSERT ... SELECT
per batch (airwave.store.search_entries.add); a per-row trigger made a large first scan's
full-text indexing about four times as costly. Deletes and updates keep their triggers.

Revision ID: 0019
Revises: 0018
"""

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS search_entries_ai")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            """CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN
                 INSERT INTO search_fts(rowid, key) VALUES (new.id, new.key);
                 INSERT INTO search_tri(rowid, key) VALUES (new.id, new.key);
               END"""
        )
