"""Login, session resume, token checks, logout and login throttling (spec §3)."""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core import passwords
from airwave.core.accounts import find_listener, username_key
from airwave.errors import ApiError, ErrorCode
from airwave.store.db import Database
from airwave.store.models import AuthSession, Listener, LoginFailure

# Refresh last_seen at most this often: activity is tracked to the minute, not per request.
TOUCH_INTERVAL = timedelta(seconds=60)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    """192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


@dataclass
class Issued:
    """What a successful login hands back: the listener and the two secrets it alone sees."""

    listener: Listener
    session: AuthSession
    token: str
    cookie: str
    is_new: bool


@dataclass
class Authenticated:
    listener: Listener
    session: AuthSession
    needs_touch: bool


def check_throttle(db: Session, settings: Settings, now: datetime, username: str | None, address: str | None) -> None:
    """RATE_LIMITED with Retry-After while either the username or the address has too many failures."""
    since = now - timedelta(seconds=settings.login_window)
    for key, limit in _keys(settings, username, address):
        count, oldest = db.execute(
            select(func.count(LoginFailure.id), func.min(LoginFailure.at)).where(
                LoginFailure.key == key, LoginFailure.at > since
            )
        ).one()
        if count >= limit:
            retry = max(1, math.ceil((oldest + timedelta(seconds=settings.login_window) - now).total_seconds()))
            raise ApiError(
                ErrorCode.RATE_LIMITED,
                f"too many failed logins; try again in {retry} seconds",
                headers={"Retry-After": str(retry)},
            )


def _keys(settings: Settings, username: str | None, address: str | None) -> list[tuple[str, int]]:
    keys = []
    if username:
        keys.append(("user:" + username_key(username)[:150], settings.login_max_failures_per_user))
    if address:
        keys.append(("addr:" + address[:150], settings.login_max_failures_per_address))
    return keys


def record_failure(db: Session, settings: Settings, now: datetime, username: str | None, address: str | None) -> None:
    db.execute(delete(LoginFailure).where(LoginFailure.at <= now - timedelta(seconds=settings.login_window)))
    for key, _ in _keys(settings, username, address):
        db.add(LoginFailure(key=key, at=now))


def verify_credentials(db: Session, username: str, password: str) -> Listener | None:
    """The listener if the password matches; same work whether or not the name exists."""
    listener = find_listener(db, username)
    ok = passwords.verify_password(listener.password_hash if listener else None, password)
    return listener if ok and listener is not None else None


def start_session(
    db: Session,
    settings: Settings,
    now: datetime,
    listener: Listener,
    *,
    keep_logged_in: bool,
    address: str | None,
    user_agent: str | None,
) -> Issued:
    """After a successful check of credentials: clear failures, open a session."""
    if listener.disabled:
        raise ApiError(ErrorCode.LISTENER_SUSPENDED, "this account has been disabled by an administrator")
    db.execute(delete(LoginFailure).where(LoginFailure.key == "user:" + listener.username_key[:150]))
    is_new = listener.last_login_at is None
    listener.last_login_at = now
    token, cookie = new_secret(), new_secret()
    session = AuthSession(
        listener_id=listener.id,
        token_hash=_digest(token),
        cookie_hash=_digest(cookie),
        keep_logged_in=keep_logged_in,
        timeout_seconds=settings.keep_logged_in_timeout if keep_logged_in else settings.session_timeout,
        created_at=now,
        last_seen_at=now,
        expires_at=now,
        client_address=(address or "")[:64] or None,
        user_agent=(user_agent or "")[:256] or None,
    )
    _extend(session, now)
    db.add(session)
    db.flush()
    return Issued(listener, session, token, cookie, is_new)


def resume_session(db: Session, now: datetime, token: str, username: str | None) -> Issued:
    """Re-enter a live session by its token (login with existingAuthToken and no password)."""
    found = _live_session(db, now, token)
    if found is None:
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "existingAuthToken is unknown, expired or logged out")
    session, listener = found
    if username and username_key(username) != listener.username_key:
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "existingAuthToken belongs to another listener")
    if listener.disabled:
        raise ApiError(ErrorCode.LISTENER_SUSPENDED, "this account has been disabled by an administrator")
    cookie = new_secret()
    session.cookie_hash = _digest(cookie)
    _extend(session, now)
    return Issued(listener, session, token, cookie, is_new=False)


# Built once: this lookup runs on every authenticated call.
_SESSION_BY_TOKEN = (
    select(AuthSession, Listener)
    .join(Listener, Listener.id == AuthSession.listener_id)
    .where(AuthSession.token_hash == bindparam("token_hash"))
)


def _live_session(db: Session, now: datetime, token: str) -> tuple[AuthSession, Listener] | None:
    row = db.execute(_SESSION_BY_TOKEN, {"token_hash": _digest(token)}).first()
    if row is None:
        return None
    session, listener = row
    if session.expires_at <= now:
        return None
    return session, listener


def authenticate(db: Session, now: datetime, token: str | None, cookie: str | None) -> Authenticated:
    """The listener behind X-AuthToken (and the session cookie, when one is sent)."""
    if not token:
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "X-AuthToken header is required; log in first")
    found = _live_session(db, now, token)
    if found is None:
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "auth token is unknown, expired or logged out")
    session, listener = found
    if cookie and not hmac.compare_digest(_digest(cookie), session.cookie_hash):
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "session cookie belongs to a different session")
    if listener.disabled:
        raise ApiError(ErrorCode.LISTENER_SUSPENDED, "this account has been disabled by an administrator")
    return Authenticated(listener, session, now - session.last_seen_at > TOUCH_INTERVAL)


def touch(db: Session, session_id: int, now: datetime) -> None:
    """Record activity so an active session does not expire."""
    session = db.get(AuthSession, session_id)
    if session is not None:
        _extend(session, now)


def _extend(session: AuthSession, now: datetime) -> None:
    session.last_seen_at = now
    session.expires_at = now + timedelta(seconds=session.timeout_seconds)


def end_session(db: Session, session_id: int) -> None:
    db.execute(delete(AuthSession).where(AuthSession.id == session_id))


def purge_expired(db: Session, settings: Settings, now: datetime) -> int:
    """Delete sessions past their inactivity timeout and stale login failures; returns sessions removed."""
    db.execute(delete(LoginFailure).where(LoginFailure.at <= now - timedelta(seconds=settings.login_window)))
    return db.execute(delete(AuthSession).where(AuthSession.expires_at <= now)).rowcount or 0


def login(
    database: Database,
    settings: Settings,
    now: datetime,
    *,
    username: str,
    password: str,
    keep_logged_in: bool,
    address: str | None,
    user_agent: str | None,
) -> Issued:
    """Throttle check, password check (outside any write lock), then the session or a failure."""
    with database.read() as db:
        check_throttle(db, settings, now, username, address)
        listener = verify_credentials(db, username, password)
    if listener is None:
        with database.write() as db:
            record_failure(db, settings, now, username, address)
        raise ApiError(ErrorCode.AUTH_INVALID_USERNAME_PASSWORD, "wrong username or password")
    with database.write() as db:
        listener = db.merge(listener)
        if passwords.needs_rehash(listener.password_hash):
            listener.password_hash = passwords.hash_password(password)
        return start_session(
            db, settings, now, listener, keep_logged_in=keep_logged_in, address=address, user_agent=user_agent
        )
