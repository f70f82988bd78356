"""Argon2id password hashing and the strength rules for new passwords."""

from __future__ import annotations

import functools

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from airwave.config import Settings
from airwave.errors import ApiError, ErrorCode

PARALLELISM = 4  # lanes of every hash (RFC 9106's recommendation)


@functools.cache
def _hasher(memory_kib: int, iterations: int) -> PasswordHasher:
    return PasswordHasher(time_cost=iterations, memory_cost=memory_kib, parallelism=PARALLELISM)


def hasher(settings: Settings) -> PasswordHasher:
    """Argon2id at the operator's cost (`password_hash_memory_kib`, `password_hash_iterations`)."""
    return _hasher(settings.password_hash_memory_kib, settings.password_hash_iterations)


@functools.cache
def _dummy_hash(memory_kib: int, iterations: int) -> str:
    """Verified against when the account does not exist, so both cases cost the same."""
    return _hasher(memory_kib, iterations).hash("airwave-timing-equaliser")


# A few of the most common passwords; enough to refuse the obvious ones.
_COMMON = frozenset(
    {
        "password",
        "password1",
        "password123",
        "12345678",
        "123456789",
        "1234567890",
        "qwertyui",
        "qwerty123",
        "iloveyou",
        "11111111",
        "00000000",
        "abcdefgh",
        "abc12345",
        "letmein1",
        "welcome1",
        "sunshine",
        "princess",
        "football",
        "baseball",
        "starwars",
        "trustno1",
        "passw0rd",
        "whatever",
        "superman",
        "1q2w3e4r",
        "qwertyuiop",
        "airwave1",
    }
)


def hash_password(password: str, settings: Settings) -> str:
    return hasher(settings).hash(password)


def verify_password(stored_hash: str | None, password: str, settings: Settings) -> bool:
    """Constant work whether or not the account exists (the dummy hash stands in).

    A hash keeps the cost it was made with; `needs_rehash` tells when it differs from today's.
    """
    dummy = _dummy_hash(settings.password_hash_memory_kib, settings.password_hash_iterations)
    try:
        return hasher(settings).verify(stored_hash or dummy, password) and stored_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored_hash: str, settings: Settings) -> bool:
    """The hash was made at another cost than the configured one: rehash at the next login."""
    return hasher(settings).check_needs_rehash(stored_hash)


def check_strength(password: str, username: str, min_length: int) -> None:
    """Refuse passwords a listener should not be allowed to choose (INVALID_PASSWORD)."""
    if len(password) < min_length:
        raise ApiError(
            ErrorCode.INVALID_PASSWORD, f"password must be at least {min_length} characters"
        )
    if len(password) > 1024:
        raise ApiError(ErrorCode.INVALID_PASSWORD, "password must be at most 1024 characters")
    if password.strip() == "":
        raise ApiError(ErrorCode.INVALID_PASSWORD, "password must not be blank")
    if password.casefold() == username.casefold():
        raise ApiError(ErrorCode.INVALID_PASSWORD, "password must differ from the username")
    if password.casefold() in _COMMON or len(set(password)) < 3:
        raise ApiError(ErrorCode.INVALID_PASSWORD, "password is too easy to guess")
