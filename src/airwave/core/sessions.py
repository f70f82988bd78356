"""Login, session resume, token checks, logout and login throttling (spec §3)."""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core import passwords
from airwave.core.accounts import find_listener, username_key
from airwave.errors import ApiError, ErrorCode
from airwave.store.db import Database
from airwave.store.models import AuthSession, Listener, LoginFailure, PasswordReset

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
    check_limit(db, now, _keys(settings, username, address), settings.login_window, "failed logins")


def check_limit(db: Session, now: datetime, keys: list[tuple[str, int]], window: int, what: str) -> None:
    """RATE_LIMITED with Retry-After while any key has `limit` or more events in the last `window` seconds."""
    since = now - timedelta(seconds=window)
    for key, limit in keys:
        count, oldest = db.execute(
            select(func.count(LoginFailure.id), func.min(LoginFailure.at)).where(
                LoginFailure.key == key, LoginFailure.at > since
            )
        ).one()
        if count >= limit:
            retry = max(1, math.ceil((oldest + timedelta(seconds=window) - now).total_seconds()))
            raise ApiError(
                ErrorCode.RATE_LIMITED,
                f"too many {what}; try again in {retry} seconds",
                retry_after=retry,
            )


def throttle_key(prefix: str, value: str) -> str:
    """A LoginFailure key: the kind of event, then what it is counted against (fits the column)."""
    return (prefix + value)[:160]


def user_key(username: str) -> str:
    return throttle_key("user:", username_key(username)[:150])


def _keys(settings: Settings, username: str | None, address: str | None) -> list[tuple[str, int]]:
    keys = []
    if username:
        keys.append((user_key(username), settings.login_max_failures_per_user))
    if address:
        keys.append((throttle_key("addr:", address[:150]), settings.login_max_failures_per_address))
    return keys


def _retention(settings: Settings) -> timedelta:
    """How long throttling events are kept: the longest window any of them is counted over."""
    return timedelta(seconds=max(settings.login_window, settings.password_reset_window))


def record_events(db: Session, settings: Settings, now: datetime, keys: list[str]) -> None:
    """Count one event against each key (and drop events no window looks at any more)."""
    db.execute(delete(LoginFailure).where(LoginFailure.at <= now - _retention(settings)))
    for key in keys:
        db.add(LoginFailure(key=key, at=now))


def record_failure(db: Session, settings: Settings, now: datetime, username: str | None, address: str | None) -> None:
    record_events(db, settings, now, [key for key, _ in _keys(settings, username, address)])


def clear_failures(db: Session, listener: Listener) -> None:
    """Forget the failed logins counted against the listener's name (after a password change or reset)."""
    db.execute(delete(LoginFailure).where(LoginFailure.key == user_key(listener.username)))


def reauthenticate(
    database: Database, settings: Settings, now: datetime, listener: Listener, password: str, address: str | None
) -> None:
    """A logged-in listener proves it is them again (account changes): INVALID_PASSWORD, throttled like logins.

    Failures count towards the same limits as failed logins of that username and client address.
    """
    with database.read() as db:
        check_throttle(db, settings, now, listener.username, address)
        current = db.get(Listener, listener.id)
        ok = passwords.verify_password(current.password_hash if current else None, password)
    if not ok:
        with database.write() as db:
            record_failure(db, settings, now, listener.username, address)
        raise ApiError(ErrorCode.INVALID_PASSWORD, "currentPassword is not the account's password")


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
    clear_failures(db, listener)
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


def touch(db: Session, session: AuthSession, now: datetime) -> None:
    """Record activity so an active session does not expire; AUTH_INVALID_TOKEN if it ended."""
    extended = db.execute(
        update(AuthSession)
        .where(AuthSession.id == session.id)
        .values(last_seen_at=now, expires_at=now + timedelta(seconds=session.timeout_seconds))
    )
    if not extended.rowcount:
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "the session ended while the call ran")


def exists(db: Session, session_id: int) -> bool:
    return db.scalar(select(AuthSession.id).where(AuthSession.id == session_id)) is not None


def _extend(session: AuthSession, now: datetime) -> None:
    session.last_seen_at = now
    session.expires_at = now + timedelta(seconds=session.timeout_seconds)


def end_session(db: Session, session_id: int) -> None:
    db.execute(delete(AuthSession).where(AuthSession.id == session_id))


def end_other_sessions(db: Session, listener_id: int, keep_session_id: int | None) -> None:
    """Log out every session of the listener but one (the caller's, after it changed the password)."""
    query = delete(AuthSession).where(AuthSession.listener_id == listener_id)
    if keep_session_id is not None:
        query = query.where(AuthSession.id != keep_session_id)
    db.execute(query)


def renew_cookie(db: Session, session_id: int, now: datetime) -> tuple[AuthSession, str]:
    """A new session cookie for a live session (same token, same timeout); the old cookie stops matching."""
    session = db.get(AuthSession, session_id, with_for_update=True)
    if session is None:
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "the session ended while the call ran")
    cookie = new_secret()
    session.cookie_hash = _digest(cookie)
    _extend(session, now)
    return session, cookie


def purge_expired(db: Session, settings: Settings, now: datetime) -> int:
    """Delete sessions past their inactivity timeout, stale throttling events and dead reset tokens.

    Returns the number of sessions removed.
    """
    db.execute(delete(LoginFailure).where(LoginFailure.at <= now - _retention(settings)))
    db.execute(delete(PasswordReset).where(PasswordReset.expires_at <= now))
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
    rehashed = None
    if passwords.needs_rehash(listener.password_hash):  # hashed before the write lock is taken
        rehashed = passwords.hash_password(password)
    with database.write() as db:
        current = db.get(Listener, listener.id, populate_existing=True)
        if current is None:  # deleted since the check (merging would insert it again)
            raise ApiError(ErrorCode.AUTH_INVALID_USERNAME_PASSWORD, "wrong username or password")
        listener = current
        if rehashed is not None:
            listener.password_hash = rehashed
        return start_session(
            db, settings, now, listener, keep_logged_in=keep_logged_in, address=address, user_agent=user_agent
        )
