"""throttle counters replace login failures

The old table kept one row per failed login, wrong PIN or reset mail; the new one keeps one
locked, atomically updated counter per key. Old rows are short-lived throttling state and are
not carried over.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

import airwave.store.models

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "throttle_counters",
        sa.Column("key", sa.String(length=160), nullable=False),
        sa.Column("subject", sa.String(length=64), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("started_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("blocked_until", airwave.store.models.UTCDateTime(), nullable=True),
        sa.Column("expires_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("key", "subject", name=op.f("pk_throttle_counters")),
    )
    with op.batch_alter_table("throttle_counters", schema=None) as batch_op:
        batch_op.create_index("ix_throttle_counters_expires_at", ["expires_at"], unique=False)

    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.drop_index("ix_login_failures_key_at")
    op.drop_table("login_failures")


def downgrade() -> None:
    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=160), nullable=False),
        sa.Column("at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
    )
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.create_index("ix_login_failures_key_at", ["key", "at"], unique=False)

    with op.batch_alter_table("throttle_counters", schema=None) as batch_op:
        batch_op.drop_index("ix_throttle_counters_expires_at")
    op.drop_table("throttle_counters")
