"""Login, session resume, token checks and logout (spec §3); throttling is accounts/throttle.py."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.accounts import passwords, throttle
from airwave.core.accounts.accounts import DELETION_WAIT, find_listener, username_key
from airwave.errors import ApiError, ErrorCode
from airwave.store.db import Database, await_listener_deletion, wait_longer
from airwave.store.models import AuthSession, Listener, PasswordReset
from airwave.store.prepared import Columns, Prepared

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
    device_cookie: str | None = None  # new value of the device cookie, after a password login


@dataclass
class Authenticated:
    listener: Listener
    session: AuthSession
    needs_touch: bool


def reauthenticate(
    database: Database,
    settings: Settings,
    now: datetime,
    listener: Listener,
    password: str,
    address: str | None,
    device_cookie: str | None = None,
) -> None:
    """A logged-in listener proves it is them again (account changes): INVALID_PASSWORD, throttled
    like logins.

    Failures count where failed logins of that account from the same device and address count.
    """
    attempt = _reserve(
        database, settings, now, listener.username_key, listener.id, address, device_cookie
    )
    with database.read() as db:
        current = db.get(Listener, listener.id)
        stored = current.password_hash if current else None
    if not passwords.verify_password(stored, password, settings):
        raise ApiError(ErrorCode.INVALID_PASSWORD, "currentPassword is not the account's password")
    with database.write() as db:
        throttle.release(db, attempt)


def _reserve(
    database: Database,
    settings: Settings,
    now: datetime,
    name_key: str,
    listener_id: int | None,
    address: str | None,
    device_cookie: str | None,
) -> throttle.Attempt:
    """Count the attempt before the (slow) password check, in a short transaction of its own."""
    device = throttle.known_device(settings, now, device_cookie, listener_id)
    known = None if device is None or listener_id is None else (listener_id, device)
    with database.write() as db:
        return throttle.reserve_login(db, settings, now, name_key, address, known)


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
    """After a successful check of credentials (or a registration): open a session."""
    if listener.disabled:
        raise ApiError(
            ErrorCode.LISTENER_SUSPENDED, "this account has been disabled by an administrator"
        )
    is_new = listener.last_login_at is None
    listener.last_login_at = now
    token, cookie = new_secret(), new_secret()
    session = AuthSession(
        listener_id=listener.id,
        token_hash=_digest(token),
        cookie_hash=_digest(cookie),
        keep_logged_in=keep_logged_in,
        timeout_seconds=settings.keep_logged_in_timeout
        if keep_logged_in
        else settings.session_timeout,
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
    row = db.execute(_SESSION_ENTITIES_BY_TOKEN, {"token_hash": _digest(token)}).first()
    found = None if row is None or row[0].expires_at <= now else (row[0], row[1])
    if found is None:
        raise ApiError(
            ErrorCode.AUTH_INVALID_TOKEN, "existingAuthToken is unknown, expired or logged out"
        )
    session, listener = found
    if username and username_key(username) != listener.username_key:
        raise ApiError(
            ErrorCode.AUTH_INVALID_TOKEN, "existingAuthToken belongs to another listener"
        )
    if listener.disabled:
        raise ApiError(
            ErrorCode.LISTENER_SUSPENDED, "this account has been disabled by an administrator"
        )
    cookie = new_secret()
    session.cookie_hash = _digest(cookie)
    _extend(session, now)
    return Issued(listener, session, token, cookie, is_new=False)


# Built once: this lookup runs on every authenticated call. Plain columns, not entities: the
# row becomes two detached objects directly, without the ORM's loading machinery. On SQLite a
# connection remembers the rows it found until the database changes (any commit, by any process:
# a logout or a suspension counts from the next call on, everywhere).
_SESSION_TABLE = AuthSession.__table__
_LISTENER_TABLE = Listener.__table__
_SESSION_BY_TOKEN = Prepared(
    select(*_SESSION_TABLE.columns, *_LISTENER_TABLE.columns)
    .join_from(
        _SESSION_TABLE, _LISTENER_TABLE, _LISTENER_TABLE.c.id == _SESSION_TABLE.c.listener_id
    )
    .where(_SESSION_TABLE.c.token_hash == bindparam("token_hash")),
    remember=256,
)


# The same lookup for a write: the session is changed in the caller's transaction.
_SESSION_ENTITIES_BY_TOKEN = (
    select(AuthSession, Listener)
    .join(Listener, Listener.id == AuthSession.listener_id)
    .where(AuthSession.token_hash == bindparam("token_hash"))
)


_SESSION_COLUMNS = Columns(AuthSession)
_LISTENER_COLUMNS = Columns(Listener)
_SPLIT = _SESSION_COLUMNS.width


def _live_session(db: Session, now: datetime, token: str) -> tuple[AuthSession, Listener] | None:
    row = _SESSION_BY_TOKEN.first(db, token_hash=_digest(token))
    if row is None:
        return None
    session: AuthSession = _SESSION_COLUMNS.detached(row[:_SPLIT])
    if session.expires_at <= now:
        return None
    listener: Listener = _LISTENER_COLUMNS.detached(row[_SPLIT:])
    return session, listener


def authenticate(
    db: Session, now: datetime, token: str | None, cookie: str | None
) -> Authenticated:
    """The listener behind X-AuthToken (and the session cookie, when one is sent)."""
    if not token:
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "X-AuthToken header is required; log in first")
    found = _live_session(db, now, token)
    if found is None:
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "auth token is unknown, expired or logged out")
    session, listener = found
    if cookie and not hmac.compare_digest(_digest(cookie), session.cookie_hash):
        raise ApiError(
            ErrorCode.AUTH_INVALID_TOKEN, "session cookie belongs to a different session"
        )
    if listener.disabled:
        raise ApiError(
            ErrorCode.LISTENER_SUSPENDED, "this account has been disabled by an administrator"
        )
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


def still_exists(database: Database, session_id: int, listener_id: int) -> bool:
    """Whether the session exists once a deletion of its listener in flight has ended.

    On PostgreSQL the deletion holds an advisory lock (accounts.delete_listener) that this waits
    for; SQLite's writes are serialised, so a fresh read is enough.
    """
    if database.is_sqlite:
        with database.read() as db:
            return exists(db, session_id)
    with database.write() as db:
        wait_longer(db, DELETION_WAIT)
        await_listener_deletion(db, listener_id)
        return exists(db, session_id)


def _extend(session: AuthSession, now: datetime) -> None:
    session.last_seen_at = now
    session.expires_at = now + timedelta(seconds=session.timeout_seconds)


def end_session(db: Session, session_id: int) -> None:
    db.execute(delete(AuthSession).where(AuthSession.id == session_id))


def end_other_sessions(db: Session, listener_id: int, keep_session_id: int | None) -> None:
    """Log out every session of the listener but one (the caller's, after it changed the
    password)."""
    query = delete(AuthSession).where(AuthSession.listener_id == listener_id)
    if keep_session_id is not None:
        query = query.where(AuthSession.id != keep_session_id)
    db.execute(query)


def renew_cookie(db: Session, session_id: int, now: datetime) -> tuple[AuthSession, str]:
    """A new session cookie for a live session (same token, same timeout); the old cookie stops
    matching."""
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
    throttle.purge(db, now)
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
    device_cookie: str | None = None,
) -> Issued:
    """Reserve an attempt, check the password (outside any transaction), then open the session.

    The session comes with a new device cookie value: this device has now logged in successfully.
    """
    with database.read() as db:
        listener = find_listener(db, username)
    listener_id = listener.id if listener else None
    attempt = _reserve(
        database, settings, now, username_key(username), listener_id, address, device_cookie
    )
    # the same work whether or not the name exists (a dummy hash stands in)
    stored = listener.password_hash if listener else None
    if not passwords.verify_password(stored, password, settings) or listener is None:
        raise ApiError(ErrorCode.AUTH_INVALID_USERNAME_PASSWORD, "wrong username or password")
    rehashed = None
    if passwords.needs_rehash(
        listener.password_hash, settings
    ):  # hashed before the write lock is taken
        rehashed = passwords.hash_password(password, settings)
    with database.write() as db:
        throttle.release(db, attempt)
        current = db.get(Listener, listener.id, populate_existing=True)
        if current is None:  # deleted since the check (merging would insert it again)
            raise ApiError(ErrorCode.AUTH_INVALID_USERNAME_PASSWORD, "wrong username or password")
        listener = current
        if rehashed is not None:
            listener.password_hash = rehashed
        issued = start_session(
            db,
            settings,
            now,
            listener,
            keep_logged_in=keep_logged_in,
            address=address,
            user_agent=user_agent,
        )
    issued.device_cookie = throttle.device_cookie(settings, now, listener.id, device_cookie)
    return issued
