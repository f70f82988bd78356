"""spins name the session they were handed to, so a player that lost the claim learns it at once

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("spins", schema=None) as batch_op:
        batch_op.add_column(sa.Column("session_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("spins", schema=None) as batch_op:
        batch_op.drop_column("session_id")
