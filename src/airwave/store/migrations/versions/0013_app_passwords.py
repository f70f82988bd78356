"""app passwords for Subsonic apps, stored encrypted

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

from airwave.store.models import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "app_passwords",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "listener_id",
            sa.Integer(),
            sa.ForeignKey("listeners.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("label", sa.String(64), nullable=False),
        sa.Column("lookup", sa.String(64), nullable=False),
        sa.Column("sealed", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        sa.UniqueConstraint("lookup", name="uq_app_passwords_lookup"),
    )
    op.create_index("ix_app_passwords_listener_id", "app_passwords", ["listener_id"])


def downgrade() -> None:
    op.drop_index("ix_app_passwords_listener_id", table_name="app_passwords")
    op.drop_table("app_passwords")
