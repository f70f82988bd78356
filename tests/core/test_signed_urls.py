"""Signed audio and receipt URLs (spec §8): expiry, tampering and key rotation, on a fixed clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from airwave.audio.signing import UrlSigner
from airwave.core.clock import FixedClock
from airwave.errors import ApiError, ErrorCode

HOUR = 3600


def refused(call: Callable[..., object], *args: object) -> ErrorCode:
    with pytest.raises(ApiError) as caught:
        call(*args)
    return caught.value.error


@pytest.fixture
def signer(tmp_path: Path) -> UrlSigner:
    return UrlSigner.open(tmp_path, grace_seconds=24 * HOUR)


def audio(signer: UrlSigner, clock: FixedClock, hours: float = 12) -> str:
    """An audio token for listener 7, track 42 in mp3, spin 9, expiring `hours` from now."""
    expires = clock.now() + timedelta(hours=hours)
    return signer.audio_token(
        listener_id=7, track_id=42, encoding="mp3", spin_id=9, expires_at=expires
    )


def test_a_fresh_audio_token_grants_exactly_what_it_was_issued_for(
    signer: UrlSigner, clock: FixedClock
) -> None:
    grant = signer.verify_audio(audio(signer, clock), clock.now())
    assert (grant.listener_id, grant.track_id, grant.encoding, grant.spin_id) == (7, 42, "mp3", 9)
    assert grant.expires_at == clock.now() + timedelta(hours=12)
    assert grant.campaign_id is None


def test_an_audio_token_expires_at_its_expiry_second(signer: UrlSigner, clock: FixedClock) -> None:
    token = audio(signer, clock, hours=1)
    clock.advance(HOUR - 1)
    assert signer.verify_audio(token, clock.now()).track_id == 42
    clock.advance(1)
    assert refused(signer.verify_audio, token, clock.now()) is ErrorCode.CONTENT_HAS_EXPIRED


@pytest.mark.parametrize("position", [0, 5, 12, 20, -1])
def test_any_altered_character_is_refused_as_forged(
    signer: UrlSigner, clock: FixedClock, position: int
) -> None:
    token = audio(signer, clock)
    swapped = "A" if token[position] != "A" else "B"
    altered = token[:position] + swapped + (token[position + 1 :] if position != -1 else "")
    assert refused(signer.verify_audio, altered, clock.now()) is ErrorCode.USER_NOT_AUTHORIZED


def test_garbage_and_truncated_tokens_are_refused(signer: UrlSigner, clock: FixedClock) -> None:
    token = audio(signer, clock)
    for bad in ("", "x", "!!!!" * 10, token[:-4], token + "AAAA"):
        assert refused(signer.verify_audio, bad, clock.now()) is ErrorCode.USER_NOT_AUTHORIZED


def test_another_instances_key_does_not_verify(
    tmp_path: Path, signer: UrlSigner, clock: FixedClock
) -> None:
    other = UrlSigner.open(tmp_path / "other")
    assert (
        refused(other.verify_audio, audio(signer, clock), clock.now())
        is ErrorCode.USER_NOT_AUTHORIZED
    )


def test_receipt_and_audio_tokens_are_not_interchangeable(
    signer: UrlSigner, clock: FixedClock
) -> None:
    receipt = signer.receipt_token(
        listener_id=7, spin_id=9, expires_at=clock.now() + timedelta(hours=1)
    )
    assert signer.verify_receipt(receipt, clock.now()).spin_id == 9
    assert refused(signer.verify_audio, receipt, clock.now()) is ErrorCode.USER_NOT_AUTHORIZED
    assert (
        refused(signer.verify_receipt, audio(signer, clock), clock.now())
        is ErrorCode.USER_NOT_AUTHORIZED
    )


def test_ad_tokens_name_the_campaign_and_their_receipts_are_marked(
    signer: UrlSigner, clock: FixedClock
) -> None:
    later = clock.now() + timedelta(hours=1)
    grant = signer.verify_audio(
        signer.ad_audio_token(
            listener_id=7, campaign_id=3, ad_spin_id=11, encoding="aacplus", expires_at=later
        ),
        clock.now(),
    )
    assert (grant.track_id, grant.campaign_id, grant.spin_id) == (0, 3, 11)
    receipt = signer.verify_receipt(
        signer.ad_receipt_token(listener_id=7, ad_spin_id=11, expires_at=later), clock.now()
    )
    assert receipt.ad and receipt.spin_id == 11


def test_a_rotated_key_verifies_for_the_grace_period_only(
    signer: UrlSigner, clock: FixedClock
) -> None:
    token = audio(signer, clock, hours=48)  # outlives the grace period, so the key decides
    signer.rotate(clock.now())
    assert signer.verify_audio(token, clock.now()).track_id == 42
    clock.advance(24 * HOUR - 1)
    assert signer.verify_audio(token, clock.now()).track_id == 42
    clock.advance(1)
    assert refused(signer.verify_audio, token, clock.now()) is ErrorCode.USER_NOT_AUTHORIZED


def test_new_tokens_use_the_new_key_after_rotation(signer: UrlSigner, clock: FixedClock) -> None:
    old = signer.keys()[-1]
    fresh = signer.rotate(clock.now())
    assert fresh.id != old.id and signer.keys()[-1].id == fresh.id
    clock.advance(25 * HOUR)  # the old key is past its grace
    assert signer.verify_audio(audio(signer, clock), clock.now()).track_id == 42


def test_a_second_rotation_drops_keys_past_their_grace(
    signer: UrlSigner, clock: FixedClock
) -> None:
    signer.rotate(clock.now())
    clock.advance(25 * HOUR)
    signer.rotate(clock.now())
    assert len(signer.keys()) == 2  # the previous key (in its grace) and the current one


def test_another_process_sees_a_rotation(
    tmp_path: Path, signer: UrlSigner, clock: FixedClock
) -> None:
    signer.rotate(clock.now())
    token = audio(signer, clock)
    elsewhere = UrlSigner.open(tmp_path)  # a second server process on the same data dir
    assert elsewhere.verify_audio(token, clock.now()).listener_id == 7
