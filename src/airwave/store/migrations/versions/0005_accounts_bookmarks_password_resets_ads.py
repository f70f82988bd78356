"""accounts, bookmarks, password resets, ads

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

import airwave.store.models

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ad_campaigns",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=256), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("codec", sa.String(length=16), nullable=False),
        sa.Column("duration", sa.Float(), nullable=False),
        sa.Column("click_url", sa.Text(), nullable=False),
        sa.Column("art_id", sa.Integer(), nullable=True),
        sa.Column("starts_at", airwave.store.models.UTCDateTime(), nullable=True),
        sa.Column("ends_at", airwave.store.models.UTCDateTime(), nullable=True),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("broken_reports", sa.Integer(), nullable=False),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["art_id"],
            ["artwork.id"],
            name=op.f("fk_ad_campaigns_art_id_artwork"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ad_campaigns")),
    )
    op.create_table(
        "bookmarks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("listener_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=2), nullable=False),
        sa.Column("ref_id", sa.Integer(), nullable=False),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["listener_id"],
            ["listeners.id"],
            name=op.f("fk_bookmarks_listener_id_listeners"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bookmarks")),
        sa.UniqueConstraint("listener_id", "kind", "ref_id", name="uq_bookmarks_listener_kind_ref"),
    )
    with op.batch_alter_table("bookmarks", schema=None) as batch_op:
        batch_op.create_index(
            "ix_bookmarks_listener_created", ["listener_id", "created_at"], unique=False
        )

    op.create_table(
        "password_resets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("listener_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("expires_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("used_at", airwave.store.models.UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["listener_id"],
            ["listeners.id"],
            name=op.f("fk_password_resets_listener_id_listeners"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_password_resets")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_password_resets_token_hash")),
    )
    with op.batch_alter_table("password_resets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_password_resets_expires_at"), ["expires_at"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_password_resets_listener_id"), ["listener_id"], unique=False
        )

    op.create_table(
        "ad_impression_days",
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("impressions", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["ad_campaigns.id"],
            name=op.f("fk_ad_impression_days_campaign_id_ad_campaigns"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("campaign_id", "day", name=op.f("pk_ad_impression_days")),
    )
    op.create_table(
        "ad_spins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=32), nullable=False),
        sa.Column("listener_id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("station_id", sa.Integer(), nullable=True),
        sa.Column("in_fragment", sa.Boolean(), nullable=False),
        sa.Column("issued_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("impression_at", airwave.store.models.UTCDateTime(), nullable=True),
        sa.Column("reported_broken", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["ad_campaigns.id"],
            name=op.f("fk_ad_spins_campaign_id_ad_campaigns"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["listener_id"],
            ["listeners.id"],
            name=op.f("fk_ad_spins_listener_id_listeners"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["station_id"],
            ["stations.id"],
            name=op.f("fk_ad_spins_station_id_stations"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ad_spins")),
        sa.UniqueConstraint("token", name=op.f("uq_ad_spins_token")),
    )
    with op.batch_alter_table("ad_spins", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ad_spins_campaign_id"), ["campaign_id"], unique=False)
        batch_op.create_index(
            "ix_ad_spins_listener_issued", ["listener_id", "issued_at"], unique=False
        )

    with op.batch_alter_table("listeners", schema=None) as batch_op:
        batch_op.add_column(sa.Column("bio", sa.Text(), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("email", sa.String(length=254), nullable=True))
        batch_op.add_column(sa.Column("explicit_pin_hash", sa.String(length=255), nullable=True))
        batch_op.add_column(
            sa.Column(
                "artist_audio_messages", sa.Boolean(), nullable=False, server_default=sa.true()
            )
        )
        batch_op.add_column(
            sa.Column("is_anonymous", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(
            sa.Column("password_changed_at", airwave.store.models.UTCDateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("listeners", schema=None) as batch_op:
        batch_op.drop_column("password_changed_at")
        batch_op.drop_column("is_anonymous")
        batch_op.drop_column("artist_audio_messages")
        batch_op.drop_column("explicit_pin_hash")
        batch_op.drop_column("email")
        batch_op.drop_column("bio")

    with op.batch_alter_table("ad_spins", schema=None) as batch_op:
        batch_op.drop_index("ix_ad_spins_listener_issued")
        batch_op.drop_index(batch_op.f("ix_ad_spins_campaign_id"))

    op.drop_table("ad_spins")
    op.drop_table("ad_impression_days")
    with op.batch_alter_table("password_resets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_password_resets_listener_id"))
        batch_op.drop_index(batch_op.f("ix_password_resets_expires_at"))

    op.drop_table("password_resets")
    with op.batch_alter_table("bookmarks", schema=None) as batch_op:
        batch_op.drop_index("ix_bookmarks_listener_created")

    op.drop_table("bookmarks")
    op.drop_table("ad_campaigns")
