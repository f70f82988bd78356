"""Listener accounts: creation with validation, lookup, admin changes."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from airwave.config import TIERS, Settings
from airwave.core.accounts import passwords, throttle
from airwave.errors import ApiError, ErrorCode
from airwave.store.db import Database, lock_listener_for_deletion, wait_longer
from airwave.store.models import (
    Base,
    Bookmark,
    Feedback,
    Listener,
    ShuffleMember,
    Station,
    StationSeed,
)

# How long a deletion waits for the account's other calls, and a call that failed beside a
# deletion for its outcome (PostgreSQL; SQLite serialises writes anyway).
DELETION_WAIT = 60.0
GENDERS = ("male", "female", "nonbinary", "unspecified")
_USERNAME = re.compile(r"^[^\s\x00-\x1f\x7f]{1,64}$")
_POSTAL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 \-]{1,8}[A-Za-z0-9]$")
_EMAIL = re.compile(
    r"^[^@\s\x00-\x1f\x7f<>,;:\"]+@[^@\s\x00-\x1f\x7f<>,;:\"\[\]]+\.[^@\s\x00-\x1f\x7f<>,;:\"\[\]]+$"
)
_PIN = re.compile(r"^[0-9]{4}$", re.ASCII)
DISPLAY_NAME_MAX = 64
BIO_MAX = 2000
EMAIL_MAX = 254


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
        raise ApiError(
            ErrorCode.BIRTH_YEAR_INVALID, f"birthYear must be between 1900 and {now.year}"
        )
    if now.year - year < settings.minimum_age:
        raise ApiError(
            ErrorCode.BIRTH_YEAR_TOO_YOUNG,
            f"listeners must be at least {settings.minimum_age} years old",
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


@dataclass(frozen=True)
class CheckedListener:
    """A NewListener validated and with its password hashed, ready to insert without slow work."""

    username: str
    password_hash: str
    tier: str
    is_admin: bool
    birth_year: int | None
    zip_code: str | None
    gender: str | None
    email_opt_out: bool


def check_new_listener(
    settings: Settings, now: datetime, new: NewListener, *, enforce_strength: bool = True
) -> CheckedListener:
    """Validate a new account and hash its password; call before opening the write transaction."""
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
    return CheckedListener(
        name,
        passwords.hash_password(new.password, settings),
        tier,
        new.is_admin,
        new.birth_year,
        zip_code,
        gender,
        new.email_opt_out,
    )


def create_listener(db: Session, now: datetime, new: CheckedListener) -> Listener:
    """Insert a checked listener; the caller's transaction commits it."""
    name = new.username
    key = username_key(name)
    if db.scalar(select(Listener.id).where(Listener.username_key == key)) is not None:
        raise ApiError(ErrorCode.USERNAME_ALREADY_EXISTS, f"username {name!r} is taken")
    listener = Listener(
        username=name,
        username_key=key,
        webname=_unique_webname(db, name),
        password_hash=new.password_hash,
        tier=new.tier,
        is_admin=new.is_admin,
        disabled=False,
        birth_year=new.birth_year,
        zip_code=new.zip_code,
        gender=new.gender,
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
    base = re.sub(
        r"[^a-z0-9]+",
        "",
        unicodedata.normalize("NFKD", username).encode("ascii", "ignore").decode().lower(),
    )
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


def hash_new_password(password: str, settings: Settings) -> str:
    """The hash of an operator-set password (no strength rules), made outside any transaction."""
    if not password:
        raise ApiError(ErrorCode.INVALID_PASSWORD, "password must not be empty")
    return passwords.hash_password(password, settings)


def set_disabled(db: Session, listener: Listener, disabled: bool) -> None:
    listener.disabled = disabled


def set_tier(listener: Listener, tier: str) -> None:
    if tier not in TIERS:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"tier must be one of {', '.join(TIERS)}")
    listener.tier = tier


def is_email_address(value: str | None) -> bool:
    return bool(value) and len(value) <= EMAIL_MAX and _EMAIL.match(value) is not None  # type: ignore[arg-type]


def check_email(email: str | None) -> str | None:
    """An address for reset mails, or None to remove it (INVALID_REQUEST naming `email`)."""
    if email is None or not email.strip():
        return None
    value = email.strip()
    if not is_email_address(value):
        raise ApiError(
            ErrorCode.INVALID_REQUEST, "email: not an email address such as name@example.org"
        )
    return value


def mail_address(listener: Listener) -> str | None:
    """Where mail for the listener goes: their `email`, else their username when it is an
    address."""
    if listener.email:
        return listener.email
    return listener.username if is_email_address(listener.username) else None


def _clean_text(value: str, field: str, limit: int, *, multiline: bool) -> str:
    text = unicodedata.normalize("NFC", value).strip()
    allowed = "\n\t" if multiline else ""
    if any(unicodedata.category(c) == "Cc" and c not in allowed for c in text):
        raise ApiError(ErrorCode.INVALID_REQUEST, f"{field}: must not contain control characters")
    if len(text) > limit:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"{field}: at most {limit} characters")
    return text


# --- profile
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    listener: Listener
    station_count: int
    thumbs_up_count: int
    bookmark_count: int


def profile_of(db: Session, listener: Listener) -> Profile:
    from airwave.core.radio.stations import count_stations

    thumbs = (
        db.scalar(
            select(func.count(Feedback.id)).where(
                Feedback.listener_id == listener.id, Feedback.is_positive.is_(True)
            )
        )
        or 0
    )
    bookmarks = (
        db.scalar(select(func.count(Bookmark.id)).where(Bookmark.listener_id == listener.id)) or 0
    )
    return Profile(listener, count_stations(db, listener.id), thumbs, bookmarks)


def visible_profile(db: Session, viewer: Listener, webname: str | None) -> Profile:
    """The viewer's own profile, or another listener's public one (NOT_FOUND,
    USER_NOT_AUTHORIZED)."""
    if not webname or webname == viewer.webname:
        return profile_of(db, viewer)
    other = db.scalar(select(Listener).where(Listener.webname == webname))
    if other is None or other.is_anonymous or other.disabled:
        raise ApiError(ErrorCode.NOT_FOUND, f"no listener with webname {webname[:80]!r}")
    if other.profile_private:
        raise ApiError(ErrorCode.USER_NOT_AUTHORIZED, "this listener's profile is private")
    return profile_of(db, other)


def set_profile(db: Session, listener_id: int, changes: dict[str, Any]) -> Profile:
    """Apply any of display_name, bio, profile_private (an empty display name removes it)."""
    row = _locked(db, listener_id)
    display_name = bio = None
    if "display_name" in changes:
        display_name = _clean_text(
            changes["display_name"] or "", "displayName", DISPLAY_NAME_MAX, multiline=False
        )
    if "bio" in changes:
        bio = _clean_text(changes["bio"] or "", "bio", BIO_MAX, multiline=True)
    if "display_name" in changes:
        row.display_name = display_name or None
    if "bio" in changes:
        row.bio = bio or ""
    if changes.get("profile_private") is not None:
        row.profile_private = changes["profile_private"]
    return profile_of(db, row)


def _locked(db: Session, listener_id: int) -> Listener:
    row = db.get(Listener, listener_id, with_for_update=True, populate_existing=True)
    if row is None:
        raise ApiError(ErrorCode.AUTH_INVALID_TOKEN, "the account no longer exists")
    return row


# --- settings and the explicit-content PIN
# ----------------------------------------------------------------

SETTING_FIELDS = (
    "explicit_filter",
    "high_quality_streaming",
    "email_opt_out",
    "artist_audio_messages",
    "zip_code",
    "birth_year",
    "gender",
    "email",
)


def check_pin_format(pin: str | None, field: str = "pin") -> str:
    if pin is None or not _PIN.match(pin):
        raise ApiError(ErrorCode.EXPLICIT_PIN_MALFORMED, f"{field} must be exactly 4 digits")
    return pin


def verify_pin(
    database: Database,
    settings: Settings,
    now: datetime,
    listener_id: int,
    pin: str | None,
    field: str = "pin",
) -> None:
    """The listener's PIN was given: EXPLICIT_PIN_MALFORMED / _INCORRECT; wrong PINs are throttled.

    Four digits are quickly guessed, so each check is counted before it runs, with the back-off
    of failed logins (`login_free_failures`, then doubling delays): RATE_LIMITED while a delay
    runs. A right PIN resets the count.
    """
    with database.read() as db:
        stored = db.scalar(select(Listener.explicit_pin_hash).where(Listener.id == listener_id))
    if stored is None:
        return
    if pin is None:
        raise ApiError(
            ErrorCode.EXPLICIT_PIN_INCORRECT,
            f"{field} is required: the explicit filter is locked by a PIN",
        )
    check_pin_format(pin, field)
    with database.write() as db:
        key = throttle.pin_key(listener_id)
        attempt = throttle.reserve(db, settings, now, key, what="wrong PINs")
    if not passwords.verify_password(stored, pin, settings):
        raise ApiError(
            ErrorCode.EXPLICIT_PIN_INCORRECT, f"{field} does not match the explicit filter PIN"
        )
    with database.write() as db:
        throttle.release(db, attempt)


def validate_settings(settings: Settings, now: datetime, changes: dict[str, Any]) -> dict[str, Any]:
    """Check every given setting before any is applied; values come back normalised."""
    clean = dict(changes)
    for flag in (
        "explicit_filter",
        "high_quality_streaming",
        "email_opt_out",
        "artist_audio_messages",
    ):
        if flag in clean and clean[flag] is None:
            raise ApiError(ErrorCode.INVALID_REQUEST, f"{_camel(flag)}: must be true or false")
    if "zip_code" in clean:
        clean["zip_code"] = check_zip_code(clean["zip_code"] or None)
    if "birth_year" in clean:
        check_birth_year(clean["birth_year"], settings, now)
    if "gender" in clean:
        clean["gender"] = check_gender(clean["gender"] or None)
    if "email" in clean:
        clean["email"] = check_email(clean["email"])
    return clean


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def needs_pin(listener: Listener, changes: dict[str, Any]) -> bool:
    """Turning the explicit filter off while a PIN is set needs the PIN."""
    return (
        changes.get("explicit_filter") is False
        and listener.explicit_filter
        and listener.explicit_pin_hash is not None
    )


def apply_settings(
    db: Session, listener_id: int, clean: dict[str, Any], *, pin_checked: bool
) -> Listener:
    """Apply validated settings; the PIN rule is checked again on the locked row (a PIN set
    meanwhile)."""
    row = _locked(db, listener_id)
    if needs_pin(row, clean) and not pin_checked:
        raise ApiError(
            ErrorCode.EXPLICIT_PIN_INCORRECT,
            "pin is required: the explicit filter is locked by a PIN",
        )
    for name in SETTING_FIELDS:
        if name in clean:
            setattr(row, name, clean[name])
    return row


def hash_pin(pin: str, settings: Settings) -> str:
    """A checked PIN's hash; computed outside any write transaction."""
    return passwords.hash_password(check_pin_format(pin), settings)


def set_explicit_pin(db: Session, listener_id: int, pin_hash: str) -> Listener:
    """Store a new PIN (hashed by hash_pin) and turn the explicit filter on: a PIN locks it."""
    row = _locked(db, listener_id)
    row.explicit_pin_hash = pin_hash
    row.explicit_filter = True
    return row


# --- account changes
# ------------------------------------------------------------------------------------


def check_account_changes(
    db: Session,
    settings: Settings,
    listener: Listener,
    *,
    new_username: str | None,
    new_password: str | None,
) -> str | None:
    """Check a rename and a new password before any write; the new password's hash, if any.

    Runs on a read session: hashing must not happen while the write lock is held.
    """
    name = listener.username
    if new_username is not None:
        name = check_username(new_username)
        _check_name_free(db, name, listener.username_key)
    if new_password is None:
        return None
    passwords.check_strength(new_password, name, settings.password_min_length)
    return passwords.hash_password(new_password, settings)


def _check_name_free(db: Session, name: str, own_key: str) -> None:
    key = username_key(name)
    taken = db.scalar(select(Listener.id).where(Listener.username_key == key)) is not None
    if key != own_key and taken:
        raise ApiError(ErrorCode.USERNAME_ALREADY_EXISTS, f"username {name!r} is taken")


def update_account(
    db: Session, listener_id: int, *, new_username: str | None, explicit_filter: bool | None
) -> Listener:
    """Rename and explicit filter (checked by check_account_changes); the locked row.

    The caller has re-authenticated with the account password, which outranks the explicit filter
    PIN. A new password goes through credentials.change_password.
    """
    row = _locked(db, listener_id)
    if new_username is not None:
        name = check_username(new_username)
        _check_name_free(db, name, row.username_key)  # again: a registration may have taken it
        if name != row.username:
            old_key = row.username_key
            row.username, row.username_key = name, username_key(name)
            throttle.forget_name(db, old_key)
            try:
                db.flush()
            except IntegrityError as exc:  # a concurrent registration took the name
                raise ApiError(
                    ErrorCode.USERNAME_ALREADY_EXISTS, f"username {name!r} is taken"
                ) from exc
    if explicit_filter is not None:
        row.explicit_filter = explicit_filter
    return row


def delete_listener(db: Session, listener: Listener) -> None:
    """Remove the listener and every row of theirs, in the caller's transaction.

    Every table with a `listener_id` column is swept (so tables added later are covered without a
    change here), children of the listener's stations first, then the throttling records that name
    them. Calls failing meanwhile wait for the outcome (sessions.still_exists).
    """
    wait_longer(db, DELETION_WAIT)  # the account's own calls in flight must not make it fail
    lock_listener_for_deletion(db, listener.id)
    # the stations' rows first, the order the listener's own calls take them in (getFragment,
    # trackStarted, addFeedback): a call in flight waits for the deletion instead of deadlocking
    db.execute(
        select(Station.id)
        .where(Station.listener_id == listener.id)
        .order_by(Station.id)
        .with_for_update()
    )
    stations = select(Station.id).where(Station.listener_id == listener.id).scalar_subquery()
    db.execute(
        delete(ShuffleMember).where(
            or_(ShuffleMember.shuffle_id.in_(stations), ShuffleMember.station_id.in_(stations))
        )
    )
    db.execute(delete(StationSeed).where(StationSeed.station_id.in_(stations)))
    for table in reversed(Base.metadata.sorted_tables):
        if table.name != Station.__tablename__ and "listener_id" in table.c:
            db.execute(table.delete().where(table.c.listener_id == listener.id))
    db.execute(delete(Station).where(Station.listener_id == listener.id))
    throttle.forget_listener(db, listener.username_key, listener.id)
    db.execute(delete(Listener).where(Listener.id == listener.id))
    if listener in db:
        db.expunge(listener)
