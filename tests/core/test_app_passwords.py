"""App passwords: kept encrypted, usable with every Subsonic scheme, revocable; account
passwords behind the login throttle."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import select

from airwave.config import Settings
from airwave.core.accounts import accounts, app_passwords, credentials
from airwave.core.accounts.app_passwords import SubsonicCredentials
from airwave.core.clock import FixedClock
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode
from airwave.store.db import Database
from airwave.store.models import AppPassword


@pytest.fixture
def services(settings: Settings, database: Database, clock: FixedClock) -> Services:
    cheap = settings.model_copy(
        update={
            "password_hash_memory_kib": 1024,
            "password_hash_iterations": 1,
            "login_free_failures": 2,
        }
    )
    services = Services(cheap, database, clock)
    now = clock.now()
    checked = accounts.check_new_listener(
        cheap, now, accounts.NewListener("alice", "correct horse"), enforce_strength=False
    )
    with database.write() as db:
        accounts.create_listener(db, now, checked)
    return services


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def test_secret_is_only_stored_encrypted(services: Services) -> None:
    made = app_passwords.create(services, "alice", "phone")
    with services.database.read() as db:
        row = db.scalars(select(AppPassword)).one()
        assert made.secret.encode() not in row.sealed
        assert made.secret not in row.lookup
    assert (services.settings.data_dir / app_passwords.KEY_FILE).stat().st_mode & 0o077 == 0
    listed = app_passwords.list_for(services, "alice")
    assert [(s.id, s.label, s.last_used_at) for s in listed] == [(made.summary.id, "phone", None)]


def test_every_scheme_with_an_app_password(services: Services, clock: FixedClock) -> None:
    secret = app_passwords.create(services, "alice", "phone").secret
    for given in (
        SubsonicCredentials(username="alice", password=secret),
        SubsonicCredentials(username="ALICE", token=_md5(secret + "s4lt"), salt="s4lt"),
        SubsonicCredentials(api_key=secret),
    ):
        assert app_passwords.authenticate(services, given, "10.0.0.1").username == "alice"
    assert app_passwords.list_for(services, "alice")[0].last_used_at == clock.now()


def test_account_password_works_with_p_but_not_as_token(services: Services) -> None:
    plain = SubsonicCredentials(username="alice", password="correct horse")
    assert app_passwords.authenticate(services, plain, None).username == "alice"
    assert app_passwords.authenticate(services, plain, None).username == "alice"  # cached
    token = SubsonicCredentials(username="alice", token=_md5("correct horse" + "x"), salt="x")
    with pytest.raises(ApiError) as raised:
        app_passwords.authenticate(services, token, None)
    assert raised.value.error is ErrorCode.AUTH_INVALID_USERNAME_PASSWORD


def test_password_change_drops_the_cached_account_password(services: Services) -> None:
    plain = SubsonicCredentials(username="alice", password="correct horse")
    app_passwords.authenticate(services, plain, None)
    credentials.set_password(services, "alice", "battery staple")
    with pytest.raises(ApiError):
        app_passwords.authenticate(services, plain, None)
    new = SubsonicCredentials(username="alice", password="battery staple")
    assert app_passwords.authenticate(services, new, None).username == "alice"


def test_revoked_and_wrong_secrets_fail(services: Services) -> None:
    made = app_passwords.create(services, "alice", "phone")
    app_passwords.revoke(services, "alice", made.summary.id)
    for given in (
        SubsonicCredentials(api_key=made.secret),
        SubsonicCredentials(username="alice", token=_md5(made.secret + "s"), salt="s"),
        SubsonicCredentials(username="nobody", password=made.secret),
    ):
        with pytest.raises(ApiError) as raised:
            app_passwords.authenticate(services, given, None)
        assert raised.value.error is ErrorCode.AUTH_INVALID_USERNAME_PASSWORD
    with pytest.raises(ApiError) as raised:
        app_passwords.revoke(services, "alice", made.summary.id)
    assert raised.value.error is ErrorCode.NOT_FOUND


def test_suspended_account_is_refused(services: Services) -> None:
    secret = app_passwords.create(services, "alice").secret
    with services.database.write() as db:
        accounts.set_disabled(db, accounts.require_listener(db, "alice"), True)
    with pytest.raises(ApiError) as raised:
        app_passwords.authenticate(services, SubsonicCredentials(api_key=secret), None)
    assert raised.value.error is ErrorCode.LISTENER_SUSPENDED


def test_failures_back_off_like_logins(services: Services) -> None:
    secret = app_passwords.create(services, "alice").secret
    wrong = SubsonicCredentials(username="alice", token=_md5("guess" + "s"), salt="s")
    for _ in range(3):
        with pytest.raises(ApiError):
            app_passwords.authenticate(services, wrong, "10.0.0.9")
    with pytest.raises(ApiError) as raised:
        right = SubsonicCredentials(username="alice", password="correct horse")
        app_passwords.authenticate(services, right, "10.0.0.9")
    assert raised.value.error is ErrorCode.RATE_LIMITED
    # app passwords are 192 random bits: they are not what the back-off protects
    assert app_passwords.authenticate(services, SubsonicCredentials(api_key=secret), None)
