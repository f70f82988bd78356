"""Throttling of logins, PINs and reset mails, and device cookies (README "Login throttling").

Every counter is one `ThrottleCounter` row, locked while it is checked and counted, so concurrent
attempts cannot slip past a limit. An attempt is reserved (counted as a failure) before the slow
password check, which runs outside any transaction; a success then releases what it reserved.
The domain raises RATE_LIMITED with `retry_after`; only the HTTP edge turns it into a header.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import math
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from airwave.config import Settings
from airwave.errors import ApiError, ErrorCode
from airwave.store import sql
from airwave.store.models import ThrottleCounter
from airwave.store.private import secret_key_file

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
DEVICE_KEY_FILE = "device-cookie-key"
DEVICE_TOKENS_KEPT = 5  # accounts one browser remembers as logged in before
_KEY_MAX = 160


# --- keys -----------------------------------------------------------------------------------------


def key(kind: str, *parts: object) -> str:
    """The one key builder: `kind:part:part`, cut to the column (long parts are hashed, not cut)."""
    text = ":".join([kind, *(str(part) for part in parts)])
    if len(text) <= _KEY_MAX:
        return text
    return f"{kind}:#" + hashlib.sha256(text.encode()).hexdigest()


def login_key(name_key: str) -> str:
    """Failed logins of an account from unknown devices (by normalised name, existing or not)."""
    return key("login", name_key)


def device_key(listener_id: int) -> str:
    """Failed logins of an account from its known devices; the device is the row's subject."""
    return key("device", listener_id)


def address_key(address: str) -> str:
    """The accounts that failed logins from one client address; each account is a subject."""
    return key("addr", address)


def pin_key(listener_id: int) -> str:
    return key("pin", listener_id)


def reset_name_key(name_key: str) -> str:
    return key("reset-name", name_key)


def reset_address_key(address: str) -> str:
    return key("reset-addr", address)


def _subject(value: str) -> str:
    """A set member kept short and uniform (an account's name key as an address-spread subject)."""
    return hashlib.sha256(value.encode()).hexdigest()[:32]


# --- locked rows ----------------------------------------------------------------------------------


def _locked(db: Session, row_key: str, subject: str = "") -> ThrottleCounter:
    """The counter row, created if missing and locked until the write transaction ends.

    PostgreSQL: INSERT ... ON CONFLICT DO NOTHING then SELECT ... FOR UPDATE. SQLite: the write
    transaction already holds the database's write lock (BEGIN IMMEDIATE).
    """
    db.execute(
        sql.insert_for(db, ThrottleCounter)
        .values(
            key=row_key,
            subject=subject,
            count=0,
            started_at=EPOCH,
            blocked_until=None,
            expires_at=EPOCH,
        )
        .on_conflict_do_nothing(index_elements=["key", "subject"])
    )
    query = (
        select(ThrottleCounter)
        .where(ThrottleCounter.key == row_key, ThrottleCounter.subject == subject)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    row = db.scalars(query).one()
    return row


def _fresh(row: ThrottleCounter, now: datetime) -> None:
    """A row past its expiry starts over."""
    if row.expires_at <= now:
        row.count, row.started_at, row.blocked_until = 0, now, None


def _seconds(until: datetime, now: datetime) -> int:
    return max(1, math.ceil((until - now).total_seconds()))


def _limited(what: str, retry: int) -> ApiError:
    return ApiError(
        ErrorCode.RATE_LIMITED, f"too many {what}; try again in {retry} seconds", retry_after=retry
    )


# --- exponential back-off -------------------------------------------------------------------------


def backoff_delay(settings: Settings, failures: int) -> float:
    """Seconds to wait after `failures` failures: none while free, then doubling up to the cap."""
    extra = failures - settings.login_free_failures
    if extra < 0:
        return 0.0
    return min(
        float(settings.login_backoff_max), settings.login_backoff_base * 2.0 ** min(extra, 40)
    )


def _check_backoff(row: ThrottleCounter, now: datetime, what: str) -> None:
    _fresh(row, now)
    if row.blocked_until is not None and row.blocked_until > now:
        raise _limited(what, _seconds(row.blocked_until, now))


def _count_failure(row: ThrottleCounter, settings: Settings, now: datetime) -> None:
    """One more failure: the delay doubles; the count is forgotten `login_window` after it ends."""
    row.count += 1
    delay = backoff_delay(settings, row.count)
    row.blocked_until = now + timedelta(seconds=delay) if delay else None
    row.expires_at = (row.blocked_until or now) + timedelta(seconds=settings.login_window)


@dataclass
class Attempt:
    """What a reservation counted; a success releases it (deletes those rows)."""

    rows: list[tuple[str, str]] = field(default_factory=list)


def reserve(
    db: Session,
    settings: Settings,
    now: datetime,
    row_key: str,
    subject: str = "",
    what: str = "failed attempts",
) -> Attempt:
    """Count one attempt against a back-off counter, or RATE_LIMITED while its delay runs."""
    row = _locked(db, row_key, subject)
    _check_backoff(row, now, what)
    _count_failure(row, settings, now)
    return Attempt([(row_key, subject)])


def reserve_login(
    db: Session,
    settings: Settings,
    now: datetime,
    name_key: str,
    address: str | None,
    device: tuple[int, str] | None,
) -> Attempt:
    """Count a login attempt (or a re-entered password) before the password is checked.

    A known device (listener id, device id) is counted in its own bucket only: others' failures
    never block it. An unknown device is counted against the account, and the account joins the
    address's spread unless it is in it already; too many accounts failing from one address
    limit it.
    """
    if device is not None:
        return reserve(
            db, settings, now, device_key(device[0]), device[1], "failed logins from this device"
        )
    attempt = Attempt()
    spread: tuple[str, str] | None = None
    if address:
        spread = (address_key(address), _subject(name_key))
        _locked(db, spread[0])  # the anchor: one reservation per address at a time
        _check_spread(db, settings, now, *spread)
    account = _locked(db, login_key(name_key))
    _check_backoff(account, now, "failed logins for this account")
    _count_failure(account, settings, now)
    attempt.rows.append((account.key, ""))
    if spread is not None:
        member = _locked(db, *spread)
        _fresh(member, now)
        member.count += 1
        member.expires_at = now + timedelta(seconds=settings.login_window)
        attempt.rows.append(spread)
    return attempt


def _check_spread(db: Session, settings: Settings, now: datetime, addr: str, subject: str) -> None:
    """RATE_LIMITED when the address has its number of failing accounts (this one not in it)."""
    live = (
        ThrottleCounter.key == addr,
        ThrottleCounter.subject != "",
        ThrottleCounter.expires_at > now,
    )
    mine = db.scalar(
        select(ThrottleCounter.subject).where(*live, ThrottleCounter.subject == subject)
    )
    if mine is not None:
        return
    count, oldest = db.execute(
        select(func.count(), func.min(ThrottleCounter.expires_at)).where(*live)
    ).one()
    if count >= settings.login_max_accounts_per_address:
        raise _limited("accounts with failed logins from this address", _seconds(oldest, now))


def release(db: Session, attempt: Attempt) -> None:
    """A success: forget what the attempt counted (delay of account or device, address spread)."""
    for row_key, subject in attempt.rows:
        db.execute(
            delete(ThrottleCounter).where(
                ThrottleCounter.key == row_key, ThrottleCounter.subject == subject
            )
        )


# --- fixed windows (reset mails) ------------------------------------------------------------------


def count_in_window(
    db: Session, now: datetime, limits: list[tuple[str, int]], window: int, what: str
) -> None:
    """Count an event against each key, or RATE_LIMITED (counting none) when one is at its limit."""
    rows = []
    for row_key, limit in limits:
        row = _locked(db, row_key)
        _fresh(row, now)
        if row.count >= limit:
            raise _limited(what, _seconds(row.expires_at, now))
        rows.append(row)
    for row in rows:
        if row.count == 0:
            row.started_at, row.expires_at = now, now + timedelta(seconds=window)
        row.count += 1


# --- forgetting -----------------------------------------------------------------------------------


def forget_name(db: Session, name_key: str) -> None:
    """Drop the counters kept under a username (after a password change, reset or rename)."""
    db.execute(
        delete(ThrottleCounter).where(
            ThrottleCounter.key.in_([login_key(name_key), reset_name_key(name_key)])
        )
    )


def forget_listener(db: Session, name_key: str, listener_id: int) -> None:
    """Drop every counter that names a deleted listener."""
    forget_name(db, name_key)
    db.execute(
        delete(ThrottleCounter).where(
            ThrottleCounter.key.in_([device_key(listener_id), pin_key(listener_id)])
        )
    )


def purge(db: Session, now: datetime) -> int:
    """Delete counters past their expiry (housekeeping)."""
    return (
        db.execute(delete(ThrottleCounter).where(ThrottleCounter.expires_at <= now)).rowcount or 0
    )


# --- device cookies -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _secret(data_dir: str) -> bytes:
    """The device cookie key in the data dir, made once (atomically: concurrent servers agree)."""
    return secret_key_file(Path(data_dir) / DEVICE_KEY_FILE)


def _mac(settings: Settings, listener_id: int, issued: int, device: str) -> str:
    message = f"airwave-device-v1|{listener_id}|{issued}|{device}".encode()
    digest = hmac.new(_secret(str(settings.data_dir)), message, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


_DEVICE_TOKEN = re.compile(
    r"([0-9]{1,12})\.([0-9]{1,12})\.([A-Za-z0-9_-]{1,32})\.([A-Za-z0-9_-]{22})", re.ASCII
)


def _parse(token: str) -> tuple[int, int, str, str] | None:
    """listener id, issued-at (epoch seconds), device id, MAC of a well-formed token."""
    match = _DEVICE_TOKEN.fullmatch(token)
    if match is None:
        return None
    return int(match[1]), int(match[2]), match[3], match[4]


def known_device(
    settings: Settings, now: datetime, cookie: str | None, listener_id: int | None
) -> str | None:
    """The device id when the cookie holds a valid, unexpired token for this listener, else None."""
    if not cookie or listener_id is None:
        return None
    for token in cookie.split("~")[:DEVICE_TOKENS_KEPT]:
        parsed = _parse(token)
        if parsed is None or parsed[0] != listener_id:
            continue
        _, issued, device, mac = parsed
        age = now.timestamp() - issued
        expected = _mac(settings, listener_id, issued, device)
        if -300 <= age < settings.device_cookie_lifetime and hmac.compare_digest(mac, expected):
            return device
    return None


def device_cookie(settings: Settings, now: datetime, listener_id: int, previous: str | None) -> str:
    """The device cookie after a successful login: a fresh token first, other accounts' kept."""
    issued, device = int(now.timestamp()), secrets.token_urlsafe(9)
    tokens = [f"{listener_id}.{issued}.{device}.{_mac(settings, listener_id, issued, device)}"]
    for token in (previous or "").split("~")[:DEVICE_TOKENS_KEPT]:
        parsed = _parse(token)
        if parsed is not None and parsed[0] != listener_id and len(tokens) < DEVICE_TOKENS_KEPT:
            tokens.append(token)
    return "~".join(tokens)
