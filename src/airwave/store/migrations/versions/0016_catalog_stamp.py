"""the catalogue stamp: changes with every transaction that changes the catalogue

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "catalog_stamp",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("stamp", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalog_stamp")),
    )
    op.bulk_insert(table, [{"id": 1, "stamp": 0}])


def downgrade() -> None:
    op.drop_table("catalog_stamp")
