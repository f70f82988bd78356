"""cluster leases, members and shared fingerprints: several processes and hosts on one database

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

import airwave.store.models

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cluster_leases",
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=True),
        sa.Column("expires_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("state", sa.Text(), nullable=True),
        sa.Column("requested_at", airwave.store.models.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cluster_leases")),
    )
    op.create_table(
        "cluster_members",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("started_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("seen_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cluster_members")),
    )
    with op.batch_alter_table("cluster_members", schema=None) as batch_op:
        batch_op.create_index("ix_cluster_members_seen_at", ["seen_at"], unique=False)
    op.create_table(
        "shared_fingerprints",
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("fingerprint", sa.Text(), nullable=False),
        sa.Column("recorded_by", sa.String(length=200), nullable=False),
        sa.Column("recorded_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_shared_fingerprints")),
    )


def downgrade() -> None:
    op.drop_table("shared_fingerprints")
    with op.batch_alter_table("cluster_members", schema=None) as batch_op:
        batch_op.drop_index("ix_cluster_members_seen_at")
    op.drop_table("cluster_members")
    op.drop_table("cluster_leases")
