"""Anonymous listening: throw-away free listeners for operators who allow them, removed after
inactivity."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.accounts import accounts, passwords
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AuthSession, Listener

PER_ADDRESS_PER_HOUR = 30


def unusable_password_hash(settings: Settings) -> str:
    """The hash of a random, forgotten password; computed before create() opens its transaction."""
    return passwords.hash_password(secrets.token_urlsafe(32), settings)


def create(
    db: Session, settings: Settings, now: datetime, address: str | None, password_hash: str
) -> Listener:
    """A fresh free-tier listener with a random name and an unusable_password_hash()."""
    if not settings.anonymous_login:
        raise ApiError(
            ErrorCode.CALL_NOT_ALLOWED, "anonymous listening is not enabled on this server"
        )
    if address:
        hour_ago = now - timedelta(hours=1)
        recent = (
            select(func.count(AuthSession.id))
            .join(Listener, Listener.id == AuthSession.listener_id)
            .where(
                Listener.is_anonymous.is_(True),
                AuthSession.client_address == address[:64],
                AuthSession.created_at > hour_ago,
            )
        )
        if (db.scalar(recent) or 0) >= PER_ADDRESS_PER_HOUR:
            raise ApiError(
                ErrorCode.RATE_LIMITED,
                "too many anonymous sessions from this address; try later",
                retry_after=600,
            )
    name = f"anonymous-{secrets.token_hex(6)}"
    listener = Listener(
        username=name,
        username_key=accounts.username_key(name),
        webname=name,
        password_hash=password_hash,
        tier="free",
        is_admin=False,
        disabled=False,
        explicit_filter=False,
        high_quality_streaming=True,
        profile_private=True,
        email_opt_out=True,
        is_anonymous=True,
        created_at=now,
    )
    db.add(listener)
    db.flush()
    return listener


def purge_idle(db: Session, settings: Settings, now: datetime) -> int:
    """Delete anonymous listeners (and everything of theirs) idle for `anonymous_idle_timeout`."""
    cutoff = now - timedelta(seconds=settings.anonymous_idle_timeout)
    recent = exists().where(
        AuthSession.listener_id == Listener.id, AuthSession.last_seen_at > cutoff
    )
    idle = list(
        db.scalars(
            select(Listener)
            .where(Listener.is_anonymous.is_(True), Listener.created_at <= cutoff, ~recent)
            .limit(500)
        )
    )
    for listener in idle:
        accounts.delete_listener(db, listener)
    return len(idle)
