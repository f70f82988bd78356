"""Audio delivery parts without a server: ranges and validators, URL signing, negotiation,
transcoding."""

from __future__ import annotations

import os
import stat
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import audiokit
import pytest
from hypothesis import given
from hypothesis import strategies as st

from airwave.api.http import ranges
from airwave.audio.formats import ENCODINGS, PROFILES, negotiate, original_content_type
from airwave.audio.signing import KEY_FILE, UrlSigner
from airwave.audio.transcode import output_rate, system_lame_available, transcode
from airwave.core.plays import seconds_played
from airwave.errors import ApiError

NOW = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)

# ---------------------------------------------------------------- ranges


@given(size=st.integers(1, 10**12), data=st.data())
def test_single_ranges_select_the_right_bytes(size: int, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, size - 1))
    end = data.draw(st.integers(start, size * 2))
    part = ranges.parse_range(f"bytes={start}-{end}", size)
    assert part is not None and (part.start, part.end) == (start, min(end, size - 1))
    assert part.content_range == f"bytes {start}-{min(end, size - 1)}/{size}"
    suffix = data.draw(st.integers(1, size * 2))
    tail = ranges.parse_range(f"bytes=-{suffix}", size)
    assert tail is not None and tail.length == min(suffix, size) and tail.end == size - 1
    opened = ranges.parse_range(f"Bytes = {start} -", size)
    assert opened is not None and (opened.start, opened.end) == (start, size - 1)


@given(header=st.text(max_size=80), size=st.integers(0, 10**9))
def test_any_range_header_is_parsed_or_ignored(header: str, size: int) -> None:
    try:
        part = ranges.parse_range(header, size)
    except ranges.RangeNotSatisfiable as exc:
        assert exc.size == size
    else:
        assert part is None or 0 <= part.start <= part.end < size


def test_unsatisfiable_and_ignored_ranges() -> None:
    for header in ("bytes=100-", "bytes=100-200", "bytes=-0"):
        with pytest.raises(ranges.RangeNotSatisfiable):
            ranges.parse_range(header, 100)
    with pytest.raises(ranges.RangeNotSatisfiable):
        ranges.parse_range("bytes=0-", 0)
    for header in (
        None,
        "",
        "bytes=5-1",
        "bytes=0-1,3-4",
        "pages=1-2",
        "bytes=a-",
        "bytes=-",
        "bytes=1-2-3",
        "bytes=" + "9" * 2000,
    ):
        assert ranges.parse_range(header, 100) is None


def test_validators() -> None:
    etag, modified = '"abc-1"', 1_700_000_000.5
    date = ranges.http_date(modified)
    assert date == "Tue, 14 Nov 2023 22:13:20 GMT"
    assert ranges.not_modified('"abc-1"', None, etag, modified)
    assert ranges.not_modified('W/"abc-1"', None, etag, modified)
    assert ranges.not_modified('"x", "abc-1"', None, etag, modified)
    assert ranges.not_modified("*", None, etag, modified)
    assert not ranges.not_modified('"x"', date, etag, modified)  # If-None-Match wins over the date
    assert not ranges.not_modified("garbage", None, etag, modified)
    assert ranges.not_modified(None, date, etag, modified)
    assert not ranges.not_modified(None, "Tue, 14 Nov 2023 22:13:19 GMT", etag, modified)
    assert not ranges.not_modified(None, "not a date", etag, modified)
    assert ranges.if_range_holds(None, etag, modified)
    assert ranges.if_range_holds(etag, etag, modified)
    assert not ranges.if_range_holds(f"W/{etag}", etag, modified)
    assert not ranges.if_range_holds('"other"', etag, modified)
    assert ranges.if_range_holds(date, etag, modified)
    assert not ranges.if_range_holds("Tue, 14 Nov 2023 22:13:21 GMT", etag, modified)
    assert ranges.file_etag(10, 255) == '"ff-a"'


# ---------------------------------------------------------------- signing


def test_tokens_round_trip_and_refuse_any_change(tmp_path: Path) -> None:
    signer = UrlSigner.open(tmp_path)
    token = signer.audio_token(
        listener_id=7, track_id=42, encoding="opus", expires_at=NOW + timedelta(hours=1), spin_id=99
    )
    grant = signer.verify_audio(token, NOW)
    assert (grant.listener_id, grant.track_id, grant.encoding, grant.spin_id) == (7, 42, "opus", 99)
    assert grant.expires_at == NOW + timedelta(hours=1)
    assert token.isascii() and all(c.isalnum() or c in "-_" for c in token)
    plain = signer.audio_token(
        listener_id=7, track_id=42, encoding="original", expires_at=NOW + timedelta(hours=1)
    )
    assert signer.verify_audio(plain, NOW).spin_id is None
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for i in range(len(token)):
        position = alphabet.index(token[i])
        for replacement in (alphabet[(position + 1) % 64], alphabet[(position + 17) % 64]):
            changed = token[:i] + replacement + token[i + 1 :]
            with pytest.raises(ApiError) as refused:
                signer.verify_audio(changed, NOW)
            assert refused.value.error.name == "USER_NOT_AUTHORIZED"
    for junk in ("", "a", token + "=", token[:-1], "ü" * 50, token + token):
        with pytest.raises(ApiError):
            signer.verify_audio(junk, NOW)
    with pytest.raises(ApiError) as expired:
        signer.verify_audio(token, NOW + timedelta(hours=1))
    assert expired.value.error.name == "CONTENT_HAS_EXPIRED" and expired.value.http_status == 410
    receipt = signer.receipt_token(listener_id=7, spin_id=99, expires_at=NOW + timedelta(hours=1))
    assert signer.verify_receipt(receipt, NOW).spin_id == 99
    with pytest.raises(ApiError):
        signer.verify_audio(receipt, NOW)
    with pytest.raises(ApiError):
        signer.verify_receipt(token, NOW)


def test_key_file_is_private_shared_and_rotates_with_grace(tmp_path: Path) -> None:
    made: list[UrlSigner] = [UrlSigner.open(tmp_path, grace_seconds=3600) for _ in range(8)]
    threads = [threading.Thread(target=s.keys) for s in made]  # first use everywhere at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({s.keys()[-1].secret for s in made}) == 1
    assert stat.S_IMODE(os.stat(tmp_path / KEY_FILE).st_mode) == 0o600
    one, two = made[0], made[1]
    old = one.audio_token(
        listener_id=1, track_id=2, encoding="mp3", expires_at=NOW + timedelta(days=3)
    )
    fresh_key = one.rotate(NOW)
    assert stat.S_IMODE(os.stat(tmp_path / KEY_FILE).st_mode) == 0o600
    assert (
        two.verify_audio(old, NOW + timedelta(minutes=59)).track_id == 2
    )  # the other process sees the rotation
    assert [k.id for k in two.keys()] == [1, fresh_key.id]
    new = two.audio_token(
        listener_id=1, track_id=3, encoding="mp3", expires_at=NOW + timedelta(days=3)
    )
    with pytest.raises(ApiError) as refused:
        one.verify_audio(old, NOW + timedelta(minutes=61))
    assert refused.value.error.name == "USER_NOT_AUTHORIZED"
    assert one.verify_audio(new, NOW + timedelta(hours=2)).track_id == 3
    one.rotate(NOW + timedelta(hours=2))  # the key retired over an hour ago is dropped
    assert [k.id for k in one.keys()] == [fresh_key.id, fresh_key.id + 1]


# ---------------------------------------------------------------- formats and play time


def test_negotiation() -> None:
    assert negotiate(None, high_quality=False, source_codec="flac") == "aacplus"
    assert negotiate("mp3-hifi", high_quality=False, source_codec="mp3") == "mp3"
    assert negotiate("mp3-hifi", high_quality=True, source_codec="mp3") == "mp3-hifi"
    for encoding in ENCODINGS:
        assert negotiate(encoding, high_quality=True, source_codec="vorbis") == encoding
    with pytest.raises(ApiError):
        negotiate("wav", high_quality=True, source_codec="flac")
    assert original_content_type("/m/a.FLAC") == "audio/flac"
    assert original_content_type("/m/a.m4a", "alac") == "audio/mp4"
    assert original_content_type("/m/noext", "vorbis") == "audio/ogg"
    assert original_content_type("/m/noext", "strange") == "application/octet-stream"


def test_seconds_played() -> None:
    started = NOW - timedelta(seconds=40)
    assert seconds_played("completed", None, started, 200.0, NOW) == 200.0
    assert seconds_played("skipped", None, started, 200.0, NOW) == 40.0
    assert seconds_played("skipped", None, started, 30.0, NOW) == 30.0
    assert seconds_played("skipped", 12.25, started, 200.0, NOW) == 12.25
    assert seconds_played("completed", 999.0, started, 200.0, NOW) == 200.0
    assert seconds_played("completed", None, started, 0.0, NOW) == 40.0  # duration unknown
    assert seconds_played("skipped", None, NOW + timedelta(seconds=5), 100.0, NOW) == 0.0


# ---------------------------------------------------------------- transcoding


def _transcode(source: Path, encoding: str, out: Path, **kwargs: object) -> audiokit.Decoded:
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        written = transcode(str(source), fd, PROFILES[encoding], **kwargs)  # type: ignore[arg-type]
    finally:
        os.close(fd)
    assert written == out.stat().st_size
    return audiokit.decode(out.read_bytes())


def test_rates_and_channels_follow_the_source(tmp_path: Path) -> None:
    assert output_rate(96000, PROFILES["mp3"].rates) == 48000
    assert output_rate(88200, PROFILES["mp3"].rates) == 44100
    assert output_rate(22050, PROFILES["aacplus"].rates) == 22050
    assert output_rate(44100, PROFILES["opus"].rates) == 48000
    mono = audiokit.music(5.0, rate=22050)[:1]
    source = tmp_path / "mono.wav"
    audiokit.write_audio(source, mono, rate=22050, fmt="wav", codec="pcm_s16le")
    for encoding, rate in (("mp3", 44100), ("aacplus", 22050), ("opus", 48000)):
        decoded = _transcode(source, encoding, tmp_path / f"out.{encoding}")
        assert decoded.sample_rate == rate and decoded.channels == 1, (encoding, decoded)
        assert abs(decoded.seconds - 5.0) < 0.1, (
            encoding,
            decoded,
        )  # AAC priming: 1024 samples at 22 kHz


@pytest.mark.parametrize("system_lame", [True, False])
def test_mp3_with_and_without_the_system_lame(tmp_path: Path, system_lame: bool) -> None:
    if system_lame and not system_lame_available():
        pytest.skip("no system libmp3lame")
    source = audiokit.write_audio(tmp_path / "src.flac", audiokit.music(10.0))
    decoded = _transcode(source, "mp3", tmp_path / "out.mp3", system_lame=system_lame)
    assert decoded.codec == "mp3" and abs(decoded.seconds - 10.0) < 0.01
    assert 124_000 < decoded.bitrate < 132_000


def test_an_mp3_still_being_written_already_tells_its_length(tmp_path: Path) -> None:
    """A player that opens the file while it is transcoded (pianobar's ffmpeg) reads the length
    from the provisional Info tag; the finished file carries LAME's own tag."""
    if not system_lame_available():
        pytest.skip("no system libmp3lame")
    import av

    source = audiokit.write_audio(tmp_path / "src.flac", audiokit.music(30.0))
    out = tmp_path / "out.mp3"
    early: list[bytes] = []
    fd = os.open(out, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        transcode(
            str(source), fd, PROFILES["mp3"], lambda _n: early or early.append(out.read_bytes())
        )
    finally:
        os.close(fd)
    partial = tmp_path / "partial.mp3"
    partial.write_bytes(early[0])
    assert len(early[0]) < out.stat().st_size // 10  # truly early
    with av.open(str(partial)) as container:
        assert abs(container.duration / 1e6 - 30.0) < 0.2
    with av.open(str(out)) as container:
        assert abs(container.duration / 1e6 - 30.0) < 0.1


def test_undecodable_sources_raise(tmp_path: Path) -> None:
    from airwave.audio.transcode import TranscodeError

    garbage = tmp_path / "garbage.flac"
    garbage.write_bytes(os.urandom(20_000))
    with pytest.raises(TranscodeError):
        _transcode(garbage, "opus", tmp_path / "out.opus")
