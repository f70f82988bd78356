"""Listener accounts: creation with validation, lookup, admin changes."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from airwave.config import TIERS, Settings
from airwave.core import passwords
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AuthSession, Listener, Station

GENDERS = ("male", "female", "nonbinary", "unspecified")
_USERNAME = re.compile(r"^[^\s\x00-\x1f\x7f]{1,64}$")
_POSTAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 \-]{1,8}[A-Za-z0-9]$")


def username_key(username: str) -> str:
    """The form two usernames are compared in: NFKC, case-folded."""
    return unicodedata.normalize("NFKC", username).casefold()


def check_username(username: str) -> str:
    name = unicodedata.normalize("NFKC", username)
    if len(name) < 2:
        raise ApiError(ErrorCode.INVALID_USERNAME, "username must be at least 2 characters")
    if not _USERNAME.match(name) or len(username_key(name)) > 64:
        raise ApiError(
            ErrorCode.INVALID_USERNAME,
            "username must be at most 64 characters, without spaces or control characters",
        )
    return name


def check_birth_year(year: int | None, settings: Settings, now: datetime) -> None:
    if year is None:
        return
    if year < 1900 or year > now.year:
        raise ApiError(ErrorCode.BIRTH_YEAR_INVALID, f"birthYear must be between 1900 and {now.year}")
    if now.year - year < settings.minimum_age:
        raise ApiError(
            ErrorCode.BIRTH_YEAR_TOO_YOUNG, f"listeners must be at least {settings.minimum_age} years old"
        )


def check_zip_code(zip_code: str | None) -> str | None:
    if zip_code is None:
        return None
    value = zip_code.strip()
    if not _POSTAL.match(value) or not any(c.isdigit() for c in value):
        raise ApiError(ErrorCode.ZIP_CODE_INVALID, "zipCode must be a postal code such as 94612")
    return value.upper()


def check_gender(gender: str | None) -> str | None:
    if gender is None:
        return None
    value = gender.strip().lower().replace("-", "").replace("_", "")
    if value not in GENDERS:
        raise ApiError(ErrorCode.INVALID_GENDER, f"gender must be one of {', '.join(GENDERS)}")
    return value


def is_minor(listener: Listener, now: datetime) -> bool:
    return listener.birth_year is not None and now.year - listener.birth_year < 18


@dataclass(frozen=True)
class NewListener:
    username: str
    password: str
    tier: str | None = None
    is_admin: bool = False
    birth_year: int | None = None
    zip_code: str | None = None
    gender: str | None = None
    email_opt_out: bool = False


def create_listener(
    db: Session, settings: Settings, now: datetime, new: NewListener, *, enforce_strength: bool = True
) -> Listener:
    """Validate and insert a listener; the caller's transaction commits it."""
    name = check_username(new.username)
    if enforce_strength:
        passwords.check_strength(new.password, name, settings.password_min_length)
    elif not new.password:
        raise ApiError(ErrorCode.INVALID_PASSWORD, "password must not be empty")
    check_birth_year(new.birth_year, settings, now)
    zip_code = check_zip_code(new.zip_code)
    gender = check_gender(new.gender)
    tier = new.tier or settings.default_tier
    if tier not in TIERS:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"tier must be one of {', '.join(TIERS)}")
    key = username_key(name)
    if db.scalar(select(Listener.id).where(Listener.username_key == key)) is not None:
        raise ApiError(ErrorCode.USERNAME_ALREADY_EXISTS, f"username {name!r} is taken")
    listener = Listener(
        username=name,
        username_key=key,
        webname=_unique_webname(db, name),
        password_hash=passwords.hash_password(new.password),
        tier=tier,
        is_admin=new.is_admin,
        disabled=False,
        birth_year=new.birth_year,
        zip_code=zip_code,
        gender=gender,
        explicit_filter=False,
        high_quality_streaming=True,
        profile_private=False,
        email_opt_out=new.email_opt_out,
        created_at=now,
    )
    db.add(listener)
    try:
        db.flush()
    except IntegrityError as exc:  # a concurrent registration won the race
        raise ApiError(ErrorCode.USERNAME_ALREADY_EXISTS, f"username {name!r} is taken") from exc
    return listener


def _unique_webname(db: Session, username: str) -> str:
    base = re.sub(r"[^a-z0-9]+", "", unicodedata.normalize("NFKD", username).encode("ascii", "ignore").decode().lower())
    base = (base or "listener")[:60]
    taken = set(db.scalars(select(Listener.webname).where(Listener.webname.like(f"{base}%"))))
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}{n}"
    return candidate


def find_listener(db: Session, username: str) -> Listener | None:
    return db.scalar(select(Listener).where(Listener.username_key == username_key(username)))


def require_listener(db: Session, username: str) -> Listener:
    listener = find_listener(db, username)
    if listener is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no listener named {username!r}")
    return listener


def list_listeners(db: Session) -> list[Listener]:
    return list(db.scalars(select(Listener).order_by(Listener.id)))


def set_password(db: Session, listener: Listener, password: str) -> None:
    """New password; every session of the listener ends with it."""
    if not password:
        raise ApiError(ErrorCode.INVALID_PASSWORD, "password must not be empty")
    listener.password_hash = passwords.hash_password(password)
    db.execute(delete(AuthSession).where(AuthSession.listener_id == listener.id))


def set_disabled(db: Session, listener: Listener, disabled: bool) -> None:
    listener.disabled = disabled


def set_tier(listener: Listener, tier: str) -> None:
    if tier not in TIERS:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"tier must be one of {', '.join(TIERS)}")
    listener.tier = tier


def delete_listener(db: Session, listener: Listener) -> None:
    """Remove the listener and everything of theirs (rows cascade by foreign key)."""
    db.execute(delete(AuthSession).where(AuthSession.listener_id == listener.id))
    db.execute(delete(Station).where(Station.listener_id == listener.id))
    db.delete(listener)
