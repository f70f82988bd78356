"""library roots: the folders scanned into the catalogue

A server started without library folders serves files only from the folders that scans recorded.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

import airwave.store.models

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "library_roots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("path_hash", sa.String(length=40), nullable=False),
        sa.Column("scanned_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_library_roots")),
        sa.UniqueConstraint("path_hash", name=op.f("uq_library_roots_path_hash")),
    )


def downgrade() -> None:
    op.drop_table("library_roots")
