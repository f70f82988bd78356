"""session ids are never reused

SQLite hands a deleted row's id to the next insert unless the table is AUTOINCREMENT; a new
session must never inherit what named an old one (the active player's claim). PostgreSQL's
sequences never reuse ids already.

Revision ID: 0008
Revises: 0007
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table(
            "auth_sessions", recreate="always", table_kwargs={"sqlite_autoincrement": True}
        ):
            pass


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table(
            "auth_sessions", recreate="always", table_kwargs={"sqlite_autoincrement": False}
        ):
            pass
