"""the active player's claim lasts as long as the music it was handed

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

import airwave.store.models

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("listeners", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("active_until", airwave.store.models.UTCDateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("listeners", schema=None) as batch_op:
        batch_op.drop_column("active_until")
