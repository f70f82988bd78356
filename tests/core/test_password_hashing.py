"""The operator sets the cost of password hashing; stored hashes move to it at their next login."""

from __future__ import annotations

from sqlalchemy import select

from airwave.config import Settings
from airwave.core.accounts import passwords, sessions
from airwave.core.clock import FixedClock
from airwave.store.db import Database
from airwave.store.models import Listener

from .conftest import Rows


def test_the_configured_cost_is_the_cost_of_new_hashes(settings: Settings) -> None:
    cheap = settings.model_copy(
        update={"password_hash_memory_kib": 2048, "password_hash_iterations": 2}
    )
    stored = passwords.hash_password("a secret", cheap)
    assert "m=2048,t=2,p=4" in stored
    assert passwords.verify_password(stored, "a secret", cheap)
    assert not passwords.verify_password(stored, "not it", cheap)
    assert not passwords.verify_password(None, "a secret", cheap)  # no account: same work, no
    assert not passwords.needs_rehash(stored, cheap)
    dearer = cheap.model_copy(update={"password_hash_memory_kib": 4096})
    assert passwords.verify_password(stored, "a secret", dearer)  # a hash keeps its own cost
    assert passwords.needs_rehash(stored, dearer)


def test_a_login_moves_the_stored_hash_to_the_configured_cost(
    database: Database, settings: Settings, clock: FixedClock
) -> None:
    old = settings.model_copy(
        update={"password_hash_memory_kib": 1024, "password_hash_iterations": 1}
    )
    new = old.model_copy(update={"password_hash_memory_kib": 2048})
    with database.write() as db:
        listener = Rows(db, clock.now()).listener()
        listener.password_hash = passwords.hash_password("a long secret", old)
        name = listener.username
    sessions.login(
        database,
        new,
        clock.now(),
        username=name,
        password="a long secret",
        keep_logged_in=False,
        address=None,
        user_agent=None,
    )
    with database.read() as db:
        stored = db.scalar(select(Listener.password_hash).where(Listener.username == name))
    assert stored is not None and "m=2048,t=1,p=4" in stored
