"""HMAC-signed audio and receipt tokens (spec §8); the key lives in the data dir and rotates with
a grace period."""

from __future__ import annotations

import base64
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import struct
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from airwave.audio.formats import ENCODINGS
from airwave.audio.urls import audio_url, receipt_url, skip_url
from airwave.errors import ApiError, ErrorCode
from airwave.store.private import FILE_MODE, private_dir, private_file, tighten

__all__ = [
    "AudioGrant",
    "ReceiptGrant",
    "SigningKey",
    "UrlSigner",
    "audio_url",
    "receipt_url",
    "skip_url",
]

KEY_FILE = "url-signing-keys.json"
DEFAULT_GRACE = (
    24 * 3600
)  # longer than an audio URL lives (12 h), so URLs issued before a rotation keep working
_VERSION = 1
_AUDIO, _RECEIPT = (
    0x41,
    0x52,
)  # "A", "R": a receipt token never passes as an audio token, nor the reverse
_AD_AUDIO, _AD_RECEIPT = (
    0x44,
    0x49,
)  # "D", "I": the same for an ad (campaign audio; an impression receipt)
_MAC_BYTES = 16
# version, kind, key id, listener, track (ads: campaign), spin (ads: ad spin; 0 = none), encoding,
# expiry (epoch s)
_AUDIO_LAYOUT = struct.Struct(">BBHIIIBI")
# version, kind, key id, listener, spin, expiry
_RECEIPT_LAYOUT = struct.Struct(">BBHIII")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,128}")
_RELOAD_EVERY = 2.0  # seconds between checks whether another process rotated the key


@dataclass(frozen=True)
class AudioGrant:
    """What a valid audio token allows: this listener may fetch this track in this encoding until
    expiry."""

    listener_id: int
    track_id: int
    encoding: str
    expires_at: datetime
    spin_id: int | None
    campaign_id: int | None = (
        None  # set for an ad's audio (then track_id is 0 and spin_id names the ad spin)
    )


@dataclass(frozen=True)
class ReceiptGrant:
    """What a valid receipt token allows: recording how this listener's spin ended."""

    listener_id: int
    spin_id: int
    expires_at: datetime
    ad: bool = False  # spin_id names an ad spin: the receipt counts the ad's impression


@dataclass(frozen=True)
class SigningKey:
    """One HMAC key; a retired key still verifies for the grace period after `retired_at`."""

    id: int
    secret: bytes
    created_at: datetime
    retired_at: datetime | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "secret": self.secret.hex(),
            "created_at": self.created_at.isoformat(),
            "retired_at": self.retired_at.isoformat() if self.retired_at else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> SigningKey:
        retired = data.get("retired_at")
        return cls(
            int(str(data["id"])),
            bytes.fromhex(str(data["secret"])),
            datetime.fromisoformat(str(data["created_at"])),
            datetime.fromisoformat(str(retired)) if retired else None,
        )


class UrlSigner:
    """Signs and verifies the tokens inside audio, receipt and skip URLs."""

    def __init__(self, path: Path, grace_seconds: int = DEFAULT_GRACE) -> None:
        self.path = path
        self.grace = timedelta(seconds=grace_seconds)
        self._keys: tuple[SigningKey, ...] = ()
        self._stamp: tuple[int, int] | None = None
        self._checked = 0.0
        self._lock = threading.Lock()

    @classmethod
    def open(cls, data_dir: Path, *, grace_seconds: int = DEFAULT_GRACE) -> UrlSigner:
        """The signer of an instance; its key file is created (mode 0600) on first use."""
        path = Path(data_dir) / KEY_FILE
        tighten(path, FILE_MODE)  # one written before keys were made owner-only
        return cls(path, grace_seconds)

    # ------------------------------------------------------------------ signing

    def audio_token(
        self,
        *,
        listener_id: int,
        track_id: int,
        encoding: str,
        expires_at: datetime,
        spin_id: int | None = None,
    ) -> str:
        """Token for /audio/{token}: listener, track, encoding and expiry, HMAC-signed."""
        key = self._current()
        payload = _AUDIO_LAYOUT.pack(
            _VERSION,
            _AUDIO,
            key.id,
            listener_id,
            track_id,
            spin_id or 0,
            ENCODINGS.index(encoding),
            _epoch(expires_at),
        )
        return _encode(payload + _mac(key.secret, payload))

    def receipt_token(self, *, listener_id: int, spin_id: int, expires_at: datetime) -> str:
        """Token for the receipt and skip URLs of one spin."""
        key = self._current()
        payload = _RECEIPT_LAYOUT.pack(
            _VERSION, _RECEIPT, key.id, listener_id, spin_id, _epoch(expires_at)
        )
        return _encode(payload + _mac(key.secret, payload))

    def ad_audio_token(
        self,
        *,
        listener_id: int,
        campaign_id: int,
        ad_spin_id: int,
        encoding: str,
        expires_at: datetime,
    ) -> str:
        """Token for /audio/{token} delivering an ad campaign's audio to the listener it was
        issued to."""
        key = self._current()
        payload = _AUDIO_LAYOUT.pack(
            _VERSION,
            _AD_AUDIO,
            key.id,
            listener_id,
            campaign_id,
            ad_spin_id,
            ENCODINGS.index(encoding),
            _epoch(expires_at),
        )
        return _encode(payload + _mac(key.secret, payload))

    def ad_receipt_token(self, *, listener_id: int, ad_spin_id: int, expires_at: datetime) -> str:
        """Token for the receipt and skip URLs of one ad spin."""
        key = self._current()
        payload = _RECEIPT_LAYOUT.pack(
            _VERSION, _AD_RECEIPT, key.id, listener_id, ad_spin_id, _epoch(expires_at)
        )
        return _encode(payload + _mac(key.secret, payload))

    # ------------------------------------------------------------------ verifying

    def verify_audio(self, token: str, now: datetime) -> AudioGrant:
        """The grant of an audio token: USER_NOT_AUTHORIZED when forged or altered,
        CONTENT_HAS_EXPIRED when old."""
        fields = self._open(token, (_AUDIO, _AD_AUDIO), _AUDIO_LAYOUT, now)
        _, kind, _, listener_id, track_id, spin_id, encoding, expiry = fields
        if encoding >= len(ENCODINGS):
            raise _forged()
        if kind == _AD_AUDIO:
            return AudioGrant(
                listener_id, 0, ENCODINGS[encoding], _datetime(expiry), spin_id or None, track_id
            )
        return AudioGrant(
            listener_id, track_id, ENCODINGS[encoding], _datetime(expiry), spin_id or None
        )

    def verify_receipt(self, token: str, now: datetime) -> ReceiptGrant:
        """The grant of a receipt token, with the same refusals as verify_audio."""
        _, kind, _, listener_id, spin_id, expiry = self._open(
            token, (_RECEIPT, _AD_RECEIPT), _RECEIPT_LAYOUT, now
        )
        return ReceiptGrant(listener_id, spin_id, _datetime(expiry), ad=kind == _AD_RECEIPT)

    def _open(
        self, token: str, kinds: tuple[int, ...], layout: struct.Struct, now: datetime
    ) -> tuple[int, ...]:
        raw = _decode(token)
        if raw is None or len(raw) != layout.size + _MAC_BYTES:
            raise _forged()
        payload, mac = raw[: layout.size], raw[layout.size :]
        fields = layout.unpack(payload)
        if fields[0] != _VERSION or fields[1] not in kinds:
            raise _forged()
        key = self._key(fields[2], now)
        if key is None or not hmac.compare_digest(mac, _mac(key.secret, payload)):
            raise _forged()
        if _epoch(now) >= fields[-1]:
            raise ApiError(
                ErrorCode.CONTENT_HAS_EXPIRED,
                f"this URL expired at {_datetime(fields[-1]).isoformat()}; ask for a new "
                "playlist fragment",
            )
        return fields

    # ------------------------------------------------------------------ keys

    def keys(self) -> tuple[SigningKey, ...]:
        """All keys on file, the current one last."""
        self._refresh(force=True)
        return self._keys

    def rotate(self, now: datetime) -> SigningKey:
        """Start signing with a fresh key; the previous one verifies for the grace period, older
        ones are dropped."""
        private_dir(self.path.parent)
        with open(private_file(self.path.with_suffix(".lock")), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._refresh(force=True)
            kept = [
                k if k.retired_at else SigningKey(k.id, k.secret, k.created_at, now)
                for k in self._keys
                if k.retired_at is None or now - k.retired_at < self.grace
            ]
            fresh = SigningKey(
                (max((k.id for k in self._keys), default=0) + 1) % 65536,
                secrets.token_bytes(32),
                now,
            )
            _write_keys(self.path, [*kept, fresh], replace=True)
            self._refresh(force=True)
        return fresh

    def _current(self) -> SigningKey:
        self._refresh()
        return self._keys[-1]

    def _key(self, key_id: int, now: datetime) -> SigningKey | None:
        self._refresh()
        key = next((k for k in self._keys if k.id == key_id), None)
        if key is None:  # perhaps rotated by another process since we last looked
            self._refresh(force=True)
            key = next((k for k in self._keys if k.id == key_id), None)
        if key is not None and key.retired_at is not None and now - key.retired_at >= self.grace:
            return None
        return key

    def _refresh(self, force: bool = False) -> None:
        """Load the key file when it changed (at most every couple of seconds unless forced);
        create it if absent."""
        if not force and self._keys and time.monotonic() - self._checked < _RELOAD_EVERY:
            return
        with self._lock:
            self._checked = time.monotonic()
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                self._create()
                st = os.stat(self.path)
            if self._keys and (st.st_ino, st.st_mtime_ns) == self._stamp:
                return
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
            keys = tuple(SigningKey.from_json(k) for k in data["keys"])
            if not keys or keys[-1].retired_at is not None:
                raise ValueError(f"{self.path} has no current key")
            self._keys, self._stamp = keys, (st.st_ino, st.st_mtime_ns)

    def _create(self) -> None:
        private_dir(self.path.parent)
        now = datetime.now(UTC)
        _write_keys(self.path, [SigningKey(1, secrets.token_bytes(32), now)], replace=False)


def _write_keys(path: Path, keys: list[SigningKey], *, replace: bool) -> None:
    """Write the key file (0600) through a temporary file: replaced atomically, or created only
    if absent."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"keys": [k.as_json() for k in keys]}, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # fails if another process created it first: theirs wins
            except FileExistsError:
                pass
    finally:
        tmp.unlink(missing_ok=True)


def _mac(secret: bytes, payload: bytes) -> bytes:
    return hmac.new(secret, payload, hashlib.sha256).digest()[:_MAC_BYTES]


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode(token: str) -> bytes | None:
    """Bytes of a token in canonical unpadded base64url, else None."""
    if not _TOKEN.fullmatch(token):
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except ValueError:
        return None
    return raw if _encode(raw) == token else None


def _epoch(value: datetime) -> int:
    return max(0, min(int(value.timestamp()), 2**32 - 1))


def _datetime(epoch: int) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _forged() -> ApiError:
    return ApiError(
        ErrorCode.USER_NOT_AUTHORIZED, "this URL's signature is not valid for this server"
    )
