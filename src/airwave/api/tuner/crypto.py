"""The tuner interface's Blowfish: request bodies arrive Blowfish-ECB encrypted as hex (with the
partner's encrypt key); syncTime leaves encrypted with its decrypt key."""

from __future__ import annotations

import secrets
from functools import cache
from typing import Any

BLOCK = 8


@cache
def _blowfish() -> Any:  # noqa: ANN401
    """pycryptodome's Blowfish, imported on the first tuner call: its import parses C
    declarations (about 25 ms of a server's start otherwise)."""
    from Crypto.Cipher import Blowfish

    return Blowfish


class Undecryptable(ValueError):
    pass


def decrypt_body(hex_text: bytes, key: str) -> bytes:
    """The plain body: hex → Blowfish-ECB → without its padding. Clients pad with NULs
    (pianobar, Pithos) or PKCS#5 (pydora); both are taken off."""
    try:
        data = bytes.fromhex(hex_text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise Undecryptable("the body is not hex") from None
    if not data or len(data) % BLOCK:
        raise Undecryptable("the body is not whole Blowfish blocks")
    plain = _blowfish().new(key.encode("latin-1"), _blowfish().MODE_ECB).decrypt(data)
    pad = plain[-1]
    if 1 <= pad <= BLOCK and plain.endswith(bytes([pad]) * pad):
        return plain[:-pad]
    return plain.rstrip(b"\0")


def encrypt(plain: bytes, key: str) -> str:
    """Blowfish-ECB of NUL-padded bytes, as lowercase hex (what clients send)."""
    padded = plain + b"\0" * (-len(plain) % BLOCK)
    return _blowfish().new(key.encode("latin-1"), _blowfish().MODE_ECB).encrypt(padded).hex()


def sync_time(now: int, key: str) -> str:
    """partnerLogin's syncTime: 4 random bytes, the seconds in ASCII, then 2 bytes of padding,
    encrypted with the partner's decrypt key (clients read `[4:-2]` or `[4:14]` of it)."""
    plain = secrets.token_bytes(4) + str(now).encode() + b"\x02\x02"
    return _blowfish().new(key.encode("latin-1"), _blowfish().MODE_ECB).encrypt(plain).hex()
