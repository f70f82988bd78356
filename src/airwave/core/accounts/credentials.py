"""Signing in and what needs the password: the use cases of auth/* and the account's own changes.

One rule lives here for every interface: what a new password does (`change_password`), used by
listener/updateAccount, listener/resetPassword and `airwave user passwd` alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from airwave.core.accounts import (
    accounts,
    anonymous,
    app_passwords,
    passwords,
    resets,
    sessions,
    throttle,
)
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.store.models import AuthSession, Listener


@dataclass(frozen=True)
class Client:
    """Who is calling, as throttling and new sessions need to know."""

    address: str | None = None
    user_agent: str | None = None
    device_cookie: str | None = None


@dataclass
class SignedIn:
    """A session just opened or renewed, with what the listener object shows beside it."""

    issued: sessions.Issued
    station_count: int


def change_password(
    db: Session,
    now: datetime,
    listener: Listener,
    password_hash: str,
    *,
    keep_session_id: int | None = None,
) -> None:
    """The one rule for a new password, hashed beforehand outside the transaction.

    Outstanding password reset links stop working, every session but `keep_session_id` (the
    caller's own, when it changed its password) ends, and the login throttling of the username
    is lifted.
    """
    listener.password_hash = password_hash
    listener.password_changed_at = now
    resets.retire_all(db, listener.id, now)
    sessions.end_other_sessions(db, listener.id, keep_session_id)
    throttle.forget_name(db, listener.username_key)


def _station_count(db: Session, listener_id: int) -> int:
    from airwave.core.radio.stations import count_stations

    return count_stations(db, listener_id)


def log_in(
    services: Services,
    *,
    username: str | None,
    password: str | None,
    keep_logged_in: bool,
    existing_auth_token: str | None,
    client: Client,
) -> SignedIn:
    """auth/login: a password login, or the resumption of a session by its token."""
    now = services.clock.now()
    if existing_auth_token and not password:
        with services.database.write() as db:
            issued = sessions.resume_session(db, now, existing_auth_token, username)
            return SignedIn(issued, _station_count(db, issued.listener.id))
    if not username:
        raise ApiError(ErrorCode.INVALID_REQUEST, "username: field required")
    if not password:
        raise ApiError(ErrorCode.INVALID_REQUEST, "password: field required")
    issued = sessions.login(
        services.database,
        services.settings,
        now,
        username=username,
        password=password,
        keep_logged_in=keep_logged_in,
        address=client.address,
        user_agent=client.user_agent,
        device_cookie=client.device_cookie,
    )
    with services.database.read() as db:
        return SignedIn(issued, _station_count(db, issued.listener.id))


def register(
    services: Services, new: accounts.NewListener, *, keep_logged_in: bool, client: Client
) -> SignedIn:
    """listener/register: a new account, logged in (checked and hashed before the write lock)."""
    settings, now = services.settings, services.clock.now()
    checked = accounts.check_new_listener(settings, now, new)
    with services.database.write() as db:
        listener = accounts.create_listener(db, now, checked)
        issued = sessions.start_session(
            db,
            settings,
            now,
            listener,
            keep_logged_in=keep_logged_in,
            address=client.address,
            user_agent=client.user_agent,
        )
    issued.device_cookie = throttle.device_cookie(settings, now, listener.id, client.device_cookie)
    return SignedIn(issued, 0)


def log_in_anonymously(services: Services, client: Client) -> SignedIn:
    """auth/anonymousLogin: a throw-away free-tier listener, logged in."""
    settings, now = services.settings, services.clock.now()
    password_hash = anonymous.unusable_password_hash(settings)
    with services.database.write() as db:
        listener = anonymous.create(db, settings, now, client.address, password_hash)
        issued = sessions.start_session(
            db,
            settings,
            now,
            listener,
            keep_logged_in=False,
            address=client.address,
            user_agent=client.user_agent,
        )
    return SignedIn(issued, 0)


def log_out(services: Services, session: AuthSession) -> None:
    """auth/logout: this session ends at once."""
    with services.database.write() as db:
        sessions.end_session(db, session.id)


def log_out_everywhere(
    services: Services, listener: Listener, current_password: str, client: Client
) -> None:
    """auth/logoutAll: after the password again, every session of the account ends."""
    _reauthenticate(services, listener, current_password, client)
    with services.database.write() as db:
        sessions.end_other_sessions(db, listener.id, None)


def _reauthenticate(services: Services, listener: Listener, password: str, client: Client) -> None:
    sessions.reauthenticate(
        services.database,
        services.settings,
        services.clock.now(),
        listener,
        password,
        client.address,
        client.device_cookie,
    )


def confirm_password(services: Services, listener: Listener, password: str, client: Client) -> None:
    """The account's password again before a change that needs it, throttled like a login."""
    _reauthenticate(services, listener, password, client)


def create_app_password(
    services: Services, listener: Listener, current_password: str, client: Client, label: str
) -> app_passwords.Created:
    """A new app password for a Subsonic app, after the account's password again: a stolen session
    token alone cannot mint a credential that outlives it."""
    _reauthenticate(services, listener, current_password, client)
    return app_passwords.create(services, listener.username, label)


def update_account(
    services: Services,
    listener: Listener,
    session: AuthSession,
    auth_token: str,
    *,
    current_username: str,
    current_password: str,
    new_username: str | None,
    new_password: str | None,
    explicit_filter: bool | None,
    client: Client,
) -> SignedIn:
    """listener/updateAccount: rename, new password or explicit filter, after the password again.

    Every change is checked (and a new password hashed) before the write; the caller's session
    stays (same token) with a new cookie.
    """
    if accounts.username_key(current_username) != listener.username_key:
        raise ApiError(
            ErrorCode.USER_NOT_AUTHORIZED, "currentUsername is not the username of this account"
        )
    _reauthenticate(services, listener, current_password, client)
    now = services.clock.now()
    with services.database.read() as db:
        password_hash = accounts.check_account_changes(
            db, services.settings, listener, new_username=new_username, new_password=new_password
        )
    with services.database.write() as db:
        row = accounts.update_account(
            db, listener.id, new_username=new_username, explicit_filter=explicit_filter
        )
        if password_hash is not None:
            change_password(db, now, row, password_hash, keep_session_id=session.id)
        renewed, cookie = sessions.renew_cookie(db, session.id, now)
        issued = sessions.Issued(row, renewed, auth_token, cookie, is_new=False)
        return SignedIn(issued, _station_count(db, listener.id))


def update_settings(
    services: Services, listener: Listener, changes: dict[str, Any], pin: str | None
) -> Listener:
    """listener/updateSettings: check every change, the PIN where the filter goes off, then
    apply."""
    if not changes:
        return listener
    settings, now = services.settings, services.clock.now()
    clean = accounts.validate_settings(settings, now, changes)
    pin_checked = False
    if accounts.needs_pin(listener, clean):
        accounts.verify_pin(services.database, settings, now, listener.id, pin)
        pin_checked = True
    with services.database.write() as db:
        return accounts.apply_settings(db, listener.id, clean, pin_checked=pin_checked)


def set_explicit_pin(
    services: Services,
    listener: Listener,
    pin: str,
    *,
    current_pin: str | None,
    current_password: str | None,
    client: Client,
) -> None:
    """listener/setExplicitPIN: a first PIN freely; a new one with the old PIN or the password."""
    accounts.check_pin_format(pin)
    if listener.explicit_pin_hash is not None:
        if current_password is not None:
            _reauthenticate(services, listener, current_password, client)
        else:
            accounts.verify_pin(
                services.database,
                services.settings,
                services.clock.now(),
                listener.id,
                current_pin,
                field="currentPin",
            )
    pin_hash = accounts.hash_pin(pin, services.settings)
    with services.database.write() as db:
        accounts.set_explicit_pin(db, listener.id, pin_hash)


def delete_account(
    services: Services, listener: Listener, current_password: str, client: Client
) -> None:
    """listener/deleteListener: after the password again, the account and all its data go."""
    _reauthenticate(services, listener, current_password, client)
    with services.database.write() as db:
        accounts.delete_listener(db, listener)


def reset_password(services: Services, token: str, new_password: str) -> Listener:
    """listener/resetPassword: a new password by a mailed token, which is spent by the change."""
    now = services.clock.now()
    with services.database.read() as db:
        password_hash = resets.hash_for_reset(db, services.settings, now, token, new_password)
    with services.database.write() as db:
        listener = resets.holder(db, now, token)
        change_password(db, now, listener, password_hash)
        return listener


def set_password(services: Services, username: str, password: str) -> Listener:
    """`airwave user passwd`: the operator sets a password (no strength rules, same effects)."""
    password_hash = accounts.hash_new_password(password, services.settings)
    now = services.clock.now()
    with services.database.write() as db:
        listener = accounts.require_listener(db, username)
        change_password(db, now, listener, password_hash)
        return listener


def ensure_account(services: Services, username: str, password: str, *, tier: str) -> None:
    """A known account (the demo's) exists, is enabled and has this password.

    The stored hash is checked, and a new one made, outside the write transaction.
    """
    now = services.clock.now()
    with services.database.read() as db:
        found = accounts.find_listener(db, username)
    password_hash = None
    if found is None or not passwords.verify_password(
        found.password_hash, password, services.settings
    ):
        password_hash = accounts.hash_new_password(password, services.settings)
    with services.database.write() as db:
        listener = accounts.find_listener(db, username)
        if listener is None:
            new = accounts.NewListener(username, password, tier=tier)
            checked = accounts.check_new_listener(
                services.settings, now, new, enforce_strength=False
            )
            accounts.create_listener(db, now, checked)
            return
        listener.disabled = False
        if password_hash is not None:
            change_password(db, now, listener, password_hash)


def purge_expired(services: Services) -> tuple[int, int]:
    """Housekeeping: expired sessions, and anonymous listeners idle past their timeout, go.

    Returns how many of each were removed.
    """
    now = services.clock.now()
    with services.database.write() as db:
        sessions_removed = sessions.purge_expired(db, services.settings, now)
    with services.database.write() as db:
        idle_removed = anonymous.purge_idle(db, services.settings, now)
    return sessions_removed, idle_removed
