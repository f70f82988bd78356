"""Password reset by mail: throttled requests, single-use expiring tokens kept only as hashes."""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.message import EmailMessage

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.core.accounts import mail, passwords, throttle
from airwave.core.accounts.accounts import find_listener, mail_address, username_key
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import Listener, PasswordReset

log = logging.getLogger("airwave.resets")

ADDRESS_FACTOR = 10  # a client address may ask this many times more often than one username


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """256 random bits, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


def _limits(settings: Settings, username: str, address: str | None) -> list[tuple[str, int]]:
    keys = [(throttle.reset_name_key(username_key(username)), settings.password_reset_limit)]
    if address:
        per_address = settings.password_reset_limit * ADDRESS_FACTOR
        keys.append((throttle.reset_address_key(address), per_address))
    return keys


@dataclass(frozen=True)
class ResetMail:
    to: str
    message: EmailMessage


def request_reset(
    db: Session,
    settings: Settings,
    now: datetime,
    username: str,
    address: str | None,
    base_url: str,
) -> ResetMail | None:
    """Count the request, and when a mail can go out, issue a token and compose the mail.

    Requests are counted per name and per client address whether or not the name exists, so the
    limits (RATE_LIMITED with Retry-After) say nothing about which names are accounts. A new token
    retires the listener's earlier unused ones: only the newest link works.
    """
    limits = _limits(settings, username, address)
    window = settings.password_reset_window
    throttle.count_in_window(db, now, limits, window, "password reset requests")
    listener = find_listener(db, username)
    if listener is None or listener.is_anonymous:
        log.info("password reset for an unknown username: no mail")
        return None
    if listener.disabled:
        log.info(
            "password reset for a disabled account: no mail", extra={"listener_id": listener.id}
        )
        return None
    to = mail_address(listener)
    if to is None:
        log.info(
            "password reset: the account has no email address; no mail",
            extra={"listener_id": listener.id},
        )
        return None
    if not mail.configured(settings):
        log.warning(
            "password reset requested but smtp_host is not set; no mail",
            extra={"listener_id": listener.id},
        )
        return None
    db.execute(
        delete(PasswordReset).where(
            PasswordReset.listener_id == listener.id, PasswordReset.expires_at <= now
        )
    )
    _retire(db, listener.id, now)
    token = new_token()
    lifetime = settings.password_reset_lifetime
    db.add(
        PasswordReset(
            listener_id=listener.id,
            token_hash=_digest(token),
            created_at=now,
            expires_at=now + timedelta(seconds=lifetime),
        )
    )
    return ResetMail(to, _message(settings, listener, to, token, base_url, lifetime))


def mail_reset_link(services: Services, username: str, address: str | None, base_url: str) -> None:
    """listener/emailPassword: count the request and, when the account has an address, mail a link.

    The mail goes out in the background: a slow or dead mail server never delays the answer.
    """
    with services.database.write() as db:
        outgoing = request_reset(
            db, services.settings, services.clock.now(), username, address, base_url
        )
    if outgoing is not None:
        mail.send_later(services.settings, outgoing.message, "password reset")


def _message(
    settings: Settings, listener: Listener, to: str, token: str, base_url: str, lifetime: int
) -> EmailMessage:
    link = f"{base_url.rstrip('/')}/#/reset?token={token}"
    minutes = max(1, lifetime // 60)
    text = (
        f"Hello {listener.display_name or listener.username},\n\n"
        f"someone, hopefully you, asked to reset the password of the Airwave account "
        f'"{listener.username}".\n\n'
        f"To choose a new password, open this link within {minutes} minutes:\n\n"
        f"    {link}\n\n"
        f"or enter this reset code in your player:\n\n"
        f"    {token}\n\n"
        "The link works once. If you did not ask for it, ignore this mail: your password "
        "stays as it is.\n"
    )
    return mail.compose(settings, to, "Reset your Airwave password", text)


def _retire(db: Session, listener_id: int, now: datetime) -> None:
    """Mark the listener's unused tokens as spent."""
    db.execute(
        update(PasswordReset)
        .where(PasswordReset.listener_id == listener_id, PasswordReset.used_at.is_(None))
        .values(used_at=now)
    )


def check_token(
    db: Session, now: datetime, token: str, *, for_update: bool = False
) -> PasswordReset:
    """The live reset a token names: NOT_FOUND when unknown, CONTENT_HAS_EXPIRED when used,
    replaced or expired."""
    query = select(PasswordReset).where(PasswordReset.token_hash == _digest(token))
    if for_update:
        query = query.with_for_update()
    reset = db.scalar(query)
    if reset is None:
        raise ApiError(ErrorCode.NOT_FOUND, "unknown password reset token")
    if reset.used_at is not None:
        raise ApiError(
            ErrorCode.CONTENT_HAS_EXPIRED,
            "this password reset token was already used or replaced by a newer one",
        )
    if reset.expires_at <= now:
        raise ApiError(
            ErrorCode.CONTENT_HAS_EXPIRED,
            "this password reset token has expired; ask for a new one",
        )
    return reset


def hash_for_reset(
    db: Session, settings: Settings, now: datetime, token: str, new_password: str
) -> str:
    """Check the token and the new password's strength on a read session; the new password's hash.

    Hashing is slow, so it happens here, before the write transaction of the change.
    """
    reset = check_token(db, now, token)
    listener = db.get(Listener, reset.listener_id)
    if listener is None:  # cannot happen while the foreign key cascades; kept for a clear answer
        raise ApiError(ErrorCode.NOT_FOUND, "unknown password reset token")
    passwords.check_strength(new_password, listener.username, settings.password_min_length)
    return passwords.hash_password(new_password, settings)


def holder(db: Session, now: datetime, token: str) -> Listener:
    """The listener a usable token belongs to, locked for the password change that spends it."""
    reset = check_token(db, now, token, for_update=True)
    listener = db.get(Listener, reset.listener_id, with_for_update=True, populate_existing=True)
    if listener is None:  # cannot happen while the foreign key cascades; kept for a clear answer
        raise ApiError(ErrorCode.NOT_FOUND, "unknown password reset token")
    return listener


def retire_all(db: Session, listener_id: int, now: datetime) -> None:
    """A new password (credentials.change_password) makes outstanding reset links useless."""
    _retire(db, listener_id, now)
