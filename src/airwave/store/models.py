"""SQLAlchemy models: the tables every backend (SQLite, PostgreSQL) shares."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out, whatever the backend keeps."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: object) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(timezone.utc).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: object) -> datetime | None:
        return None if value is None else value.replace(tzinfo=timezone.utc)


NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Listener(Base):
    """An account: credentials, tier and settings."""

    __tablename__ = "listeners"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64))
    username_key: Mapped[str] = mapped_column(String(64), unique=True)
    webname: Mapped[str] = mapped_column(String(80), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    tier: Mapped[str] = mapped_column(String(16), default="free")
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    display_name: Mapped[str | None] = mapped_column(String(128), nullable=True)
    birth_year: Mapped[int | None] = mapped_column(Integer, nullable=True)
    gender: Mapped[str | None] = mapped_column(String(16), nullable=True)
    zip_code: Mapped[str | None] = mapped_column(String(16), nullable=True)
    explicit_filter: Mapped[bool] = mapped_column(Boolean, default=False)
    high_quality_streaming: Mapped[bool] = mapped_column(Boolean, default=True)
    profile_private: Mapped[bool] = mapped_column(Boolean, default=False)
    email_opt_out: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_login_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class AuthSession(Base):
    """A logged-in client: token and session cookie, both kept only as hashes."""

    __tablename__ = "auth_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    cookie_hash: Mapped[str] = mapped_column(String(64))
    keep_logged_in: Mapped[bool] = mapped_column(Boolean, default=False)
    timeout_seconds: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    client_address: Mapped[str | None] = mapped_column(String(64), nullable=True)
    user_agent: Mapped[str | None] = mapped_column(String(256), nullable=True)


class LoginFailure(Base):
    """One failed login, counted per username and per client address for throttling."""

    __tablename__ = "login_failures"
    __table_args__ = (Index("ix_login_failures_key_at", "key", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(160))
    at: Mapped[datetime] = mapped_column(UTCDateTime)


class Station(Base):
    """A listener's station; the engine issue adds seeds, feedback and history beside it."""

    __tablename__ = "stations"
    __table_args__ = (Index("ix_stations_listener_order", "listener_id", "last_played_at", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    listener_id: Mapped[int] = mapped_column(ForeignKey("listeners.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    last_played_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)
    total_play_time: Mapped[int] = mapped_column(Integer, default=0)
    is_shuffle: Mapped[bool] = mapped_column(Boolean, default=False)
    is_thumbprint: Mapped[bool] = mapped_column(Boolean, default=False)
