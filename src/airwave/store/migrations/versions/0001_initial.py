"""initial schema

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

import airwave.store.models

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "listeners",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("username_key", sa.String(length=64), nullable=False),
        sa.Column("webname", sa.String(length=80), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("tier", sa.String(length=16), nullable=False),
        sa.Column("is_admin", sa.Boolean(), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("display_name", sa.String(length=128), nullable=True),
        sa.Column("birth_year", sa.Integer(), nullable=True),
        sa.Column("gender", sa.String(length=16), nullable=True),
        sa.Column("zip_code", sa.String(length=16), nullable=True),
        sa.Column("explicit_filter", sa.Boolean(), nullable=False),
        sa.Column("high_quality_streaming", sa.Boolean(), nullable=False),
        sa.Column("profile_private", sa.Boolean(), nullable=False),
        sa.Column("email_opt_out", sa.Boolean(), nullable=False),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("last_login_at", airwave.store.models.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_listeners")),
        sa.UniqueConstraint("username_key", name=op.f("uq_listeners_username_key")),
        sa.UniqueConstraint("webname", name=op.f("uq_listeners_webname")),
    )
    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=160), nullable=False),
        sa.Column("at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
    )
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.create_index("ix_login_failures_key_at", ["key", "at"], unique=False)

    op.create_table(
        "auth_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("listener_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("cookie_hash", sa.String(length=64), nullable=False),
        sa.Column("keep_logged_in", sa.Boolean(), nullable=False),
        sa.Column("timeout_seconds", sa.Integer(), nullable=False),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("last_seen_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("expires_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("client_address", sa.String(length=64), nullable=True),
        sa.Column("user_agent", sa.String(length=256), nullable=True),
        sa.ForeignKeyConstraint(
            ["listener_id"],
            ["listeners.id"],
            name=op.f("fk_auth_sessions_listener_id_listeners"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_auth_sessions")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_auth_sessions_token_hash")),
    )
    with op.batch_alter_table("auth_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_auth_sessions_expires_at"), ["expires_at"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_auth_sessions_listener_id"), ["listener_id"], unique=False
        )

    op.create_table(
        "stations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("listener_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", airwave.store.models.UTCDateTime(), nullable=False),
        sa.Column("last_played_at", airwave.store.models.UTCDateTime(), nullable=True),
        sa.Column("total_play_time", sa.Integer(), nullable=False),
        sa.Column("is_shuffle", sa.Boolean(), nullable=False),
        sa.Column("is_thumbprint", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["listener_id"],
            ["listeners.id"],
            name=op.f("fk_stations_listener_id_listeners"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_stations")),
    )
    with op.batch_alter_table("stations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_stations_listener_order",
            ["listener_id", "last_played_at", "created_at"],
            unique=False,
        )


def downgrade() -> None:
    with op.batch_alter_table("stations", schema=None) as batch_op:
        batch_op.drop_index("ix_stations_listener_order")

    op.drop_table("stations")
    with op.batch_alter_table("auth_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_auth_sessions_listener_id"))
        batch_op.drop_index(batch_op.f("ix_auth_sessions_expires_at"))

    op.drop_table("auth_sessions")
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.drop_index("ix_login_failures_key_at")

    op.drop_table("login_failures")
    op.drop_table("listeners")
