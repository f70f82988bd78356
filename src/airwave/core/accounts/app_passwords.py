"""App passwords: per-app secrets a listener gives Subsonic apps instead of the account password.

Subsonic's token scheme needs the plain secret on the server (t = md5(secret + salt)), which an
Argon2 hash cannot answer. So each app password is kept encrypted (AES-GCM) with a key in the data
dir, beside the URL-signing keys: the database alone does not reveal it. An HMAC of the secret
under the same key finds it by value (`p`, OpenSubsonic `apiKey`) without decrypting every row.

`authenticate` is the one rule for every Subsonic credential scheme: app password or account
password in `p`, token and salt, or an API key; suspended accounts refused, failures counted by
the login throttle like REST logins.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.accounts import passwords, throttle
from airwave.core.accounts.accounts import find_listener, require_listener, username_key
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AppPassword, Listener
from airwave.store.private import secret_key_file

KEY_FILE = "app-password-key"
LABEL_LIMIT = 64
# last_used_at is refreshed at most this often: one write a minute, not one per request
USE_INTERVAL = timedelta(seconds=60)
# a verified account password is trusted this long before Argon2 checks it again
ACCOUNT_PASSWORD_TTL = 300.0
_NONCE = 12
_TAG = 16


@functools.lru_cache(maxsize=8)
def _master(data_dir: str) -> bytes:
    """The key in the data dir, made once (atomically: concurrent servers agree), mode 0600."""
    return secret_key_file(Path(data_dir) / KEY_FILE)


def _subkey(settings: Settings, purpose: bytes) -> bytes:
    return hmac.new(_master(str(settings.data_dir)), purpose, hashlib.sha256).digest()


def _lookup(settings: Settings, secret: str) -> str:
    return hmac.new(_subkey(settings, b"lookup"), secret.encode(), hashlib.sha256).hexdigest()


def _seal(settings: Settings, secret: str) -> bytes:
    from Crypto.Cipher import AES  # here: pycryptodome's import parses C declarations (~25 ms)

    nonce = secrets.token_bytes(_NONCE)
    cipher = AES.new(_subkey(settings, b"seal"), AES.MODE_GCM, nonce=nonce)
    sealed, tag = cipher.encrypt_and_digest(secret.encode())
    return nonce + tag + sealed


def _unseal(settings: Settings, blob: bytes) -> str | None:
    """The secret, or None when the blob was not sealed with this data dir's key."""
    from Crypto.Cipher import AES

    nonce, tag, sealed = blob[:_NONCE], blob[_NONCE : _NONCE + _TAG], blob[_NONCE + _TAG :]
    cipher = AES.new(_subkey(settings, b"seal"), AES.MODE_GCM, nonce=nonce)
    try:
        return cipher.decrypt_and_verify(sealed, tag).decode()
    except ValueError:
        return None


@dataclass(frozen=True)
class Summary:
    """An app password as listings show it: never the secret."""

    id: int
    label: str
    created_at: datetime
    last_used_at: datetime | None


@dataclass(frozen=True)
class Created:
    """A new app password: the secret is shown this once."""

    summary: Summary
    secret: str


def _summary(row: AppPassword) -> Summary:
    return Summary(row.id, row.label, row.created_at, row.last_used_at)


def create(services: Services, username: str, label: str = "") -> Created:
    """A new app password for the listener (labelled, e.g. with the app's name)."""
    label = label.strip()
    if len(label) > LABEL_LIMIT:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"label is longer than {LABEL_LIMIT} characters")
    secret = secrets.token_urlsafe(24)
    settings, now = services.settings, services.clock.now()
    with services.database.write() as db:
        listener = require_listener(db, username)
        if listener.is_anonymous:
            raise ApiError(
                ErrorCode.CALL_NOT_ALLOWED, "a guest listener cannot have app passwords: sign up"
            )
        row = AppPassword(
            listener_id=listener.id,
            label=label or "app password",
            lookup=_lookup(settings, secret),
            sealed=_seal(settings, secret),
            created_at=now,
        )
        db.add(row)
        db.flush()
        return Created(_summary(row), secret)


def list_for(services: Services, username: str) -> list[Summary]:
    """The listener's app passwords, oldest first."""
    with services.database.read() as db:
        listener = require_listener(db, username)
        rows = db.scalars(
            select(AppPassword)
            .where(AppPassword.listener_id == listener.id)
            .order_by(AppPassword.id)
        )
        return [_summary(row) for row in rows]


def revoke(services: Services, username: str, app_password_id: int) -> Summary:
    """The app password stops working at once (NOT_FOUND unless it is this listener's)."""
    with services.database.write() as db:
        listener = require_listener(db, username)
        row = db.get(AppPassword, app_password_id)
        if row is None or row.listener_id != listener.id:
            raise ApiError(ErrorCode.NOT_FOUND, f"{username} has no app password {app_password_id}")
        summary = _summary(row)
        db.delete(row)
        return summary


# --- authentication of Subsonic requests ----------------------------------------------------------


@dataclass(frozen=True)
class SubsonicCredentials:
    """What a Subsonic request brought: `u` with `p`, or `u` with `t` and `s`, or `apiKey`."""

    username: str | None = None
    password: str | None = None
    token: str | None = None
    salt: str | None = None
    api_key: str | None = None


class _AccountPasswords:
    """Account passwords Argon2 accepted lately, so an app sending `p` on every call is not
    slowed by it: keyed by an HMAC of user and password, valid while the stored hash is the
    one checked (a password change drops the entry)."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[int, str, float]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(settings: Settings, name_key: str, password: str) -> str:
        message = f"{name_key}\0{password}".encode()
        return hmac.new(_subkey(settings, b"account-cache"), message, hashlib.sha256).hexdigest()

    def get(self, settings: Settings, listener: Listener, password: str) -> bool:
        key = self._key(settings, listener.username_key, password)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False
            listener_id, stored_hash, until = entry
            if until < time.monotonic() or stored_hash != listener.password_hash:
                del self._entries[key]
                return False
            return listener_id == listener.id

    def put(self, settings: Settings, listener: Listener, password: str) -> None:
        key = self._key(settings, listener.username_key, password)
        now = time.monotonic()
        with self._lock:
            if len(self._entries) > 10_000:
                self._entries = {k: v for k, v in self._entries.items() if v[2] >= now}
            self._entries[key] = (
                listener.id,
                listener.password_hash,
                now + ACCOUNT_PASSWORD_TTL,
            )


_ACCOUNT_PASSWORDS = _AccountPasswords()


def _md5(text: str) -> str:
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def _refused(listener: Listener) -> None:
    if listener.disabled:
        raise ApiError(
            ErrorCode.LISTENER_SUSPENDED, "this account has been disabled by an administrator"
        )


def _wrong() -> ApiError:
    return ApiError(ErrorCode.AUTH_INVALID_USERNAME_PASSWORD, "wrong username or password")


def authenticate(
    services: Services, credentials: SubsonicCredentials, address: str | None
) -> Listener:
    """The listener a Subsonic request speaks for, or AUTH_INVALID_USERNAME_PASSWORD,
    LISTENER_SUSPENDED, RATE_LIMITED.

    App passwords (192 random bits) are checked first, without Argon2. A `p` that is none of them
    is tried as the account password: throttled and checked like a REST login. A wrong token is
    counted as a failed login too, so guesses back off the same way.
    """
    settings, database, now = services.settings, services.database, services.clock.now()
    if credentials.api_key is not None:
        with database.read() as db:
            found = _by_secret(db, settings, credentials.api_key)
        if found is None:
            raise ApiError(ErrorCode.AUTH_INVALID_USERNAME_PASSWORD, "unknown API key")
        return _used(services, *found, now)
    username = credentials.username or ""
    with database.read() as db:
        listener = find_listener(db, username)
        if listener is not None and credentials.password is not None:
            found = _by_secret(db, settings, credentials.password)
            if found is not None and found[1].id == listener.id:
                return _used(services, *found, now)
        if listener is not None and credentials.token is not None:
            rows = db.scalars(select(AppPassword).where(AppPassword.listener_id == listener.id))
            expected = credentials.token.lower()
            for row in rows:
                secret = _unseal(settings, row.sealed)
                if secret is not None and hmac.compare_digest(
                    _md5(secret + (credentials.salt or "")), expected
                ):
                    return _used(services, row, listener, now)
    if listener is not None and credentials.password is not None:
        if _ACCOUNT_PASSWORDS.get(settings, listener, credentials.password):
            _refused(listener)
            return listener
    attempt = _reserve(services, username, listener, address)
    if credentials.password is None:
        raise _wrong()  # a token that matched none of the app passwords
    stored = listener.password_hash if listener else None
    if not passwords.verify_password(stored, credentials.password, settings) or listener is None:
        raise _wrong()
    with database.write() as db:
        throttle.release(db, attempt)
    _refused(listener)
    _ACCOUNT_PASSWORDS.put(settings, listener, credentials.password)
    return listener


def _reserve(
    services: Services, username: str, listener: Listener | None, address: str | None
) -> throttle.Attempt:
    """Count the attempt where REST logins of this name from this address count."""
    with services.database.write() as db:
        return throttle.reserve_login(
            db, services.settings, services.clock.now(), username_key(username), address, None
        )


def _by_secret(db: Session, settings: Settings, secret: str) -> tuple[AppPassword, Listener] | None:
    row = db.execute(
        select(AppPassword, Listener)
        .join(Listener, Listener.id == AppPassword.listener_id)
        .where(AppPassword.lookup == _lookup(settings, secret))
    ).first()
    return None if row is None else (row[0], row[1])


def _used(services: Services, row: AppPassword, listener: Listener, now: datetime) -> Listener:
    """A matching app password: refused for a suspended account, else its use recorded."""
    _refused(listener)
    if row.last_used_at is None or now - row.last_used_at >= USE_INTERVAL:
        try:
            with services.database.write() as db:
                current = db.get(AppPassword, row.id)
                if current is not None:
                    current.last_used_at = now
        except Exception as exc:
            if services.busy_error(exc) is None:
                raise
            # a busy database delays the bookkeeping (a later call records the use), not the call
    return listener
