"""Sound profiles: tempo, loudness, timbre and key of synthesised audio and of real files."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
from media import CODECS

from airwave.library.analysis import (
    FEATURE_DIM,
    FEATURE_GROUPS,
    FEATURE_NAMES,
    LISTEN_SECONDS,
    PROFILE_VERSION,
    AnalysisError,
    SoundProfile,
    _excerpt_starts,
    analyze,
    analyze_samples,
)

RATE = 22050
A, C = 9, 0


def sine(freq: float, seconds: float, dbfs: float = -20.0, rate: int = RATE) -> np.ndarray:
    """A pure tone whose peak is `dbfs`."""
    t = np.arange(round(seconds * rate)) / rate
    return (10 ** (dbfs / 20) * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def kicks(bpm: float, seconds: float, rate: int = RATE) -> np.ndarray:
    """A drum-machine kick (pitch-dropping thump plus click) on every beat over a quiet pad."""
    rng = np.random.default_rng(1)
    t = np.arange(round(0.3 * rate)) / rate
    kick = np.sin(2 * np.pi * (50 * t + 3 * (1 - np.exp(-t / 0.02)))) * np.exp(-t / 0.12)
    kick += 0.3 * rng.standard_normal(len(t)) * np.exp(-t / 0.004)
    out = 0.02 * sine(220, seconds, 0.0, rate) + 0.01 * rng.standard_normal(round(seconds * rate))
    for beat in np.arange(0, seconds - 0.3, 60 / bpm):
        start = round(beat * rate)
        out[start : start + len(kick)] += 0.5 * kick
    return out.astype(np.float32)


def pulses(bpm: float, seconds: float, rate: int = RATE) -> np.ndarray:
    """A beat of short, band-limited bursts (150 Hz and 2 kHz under a Hann window)."""
    out = np.zeros(round(seconds * rate))
    length = round(0.06 * rate)
    t = np.arange(length) / rate
    burst = np.hanning(length) * (np.sin(2 * np.pi * 150 * t) + 0.5 * np.sin(2 * np.pi * 2000 * t))
    for beat in np.arange(0, seconds - 0.1, 60.0 / bpm):
        start = round(beat * rate)
        out[start : start + length] += burst
    return (0.4 * out).astype(np.float32)


def chords(progression: list[list[int]], seconds_each: float = 2.0, rate: int = RATE) -> np.ndarray:
    """Chords of MIDI notes, each with a few harmonics, the root doubled an octave down."""
    t = np.arange(round(seconds_each * rate)) / rate
    envelope = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.02)
    parts = []
    for notes in progression:
        chord = np.zeros_like(t)
        for note in [notes[0] - 12, *notes]:
            freq = 440.0 * 2 ** ((note - 69) / 12)
            chord += sum(np.sin(2 * np.pi * h * freq * t) / h**1.5 for h in range(1, 5))
        parts.append(chord * envelope)
    out = np.concatenate(parts)
    return (0.5 * out / np.abs(out).max()).astype(np.float32)


class Unseekable:
    """A write-only sink: muxers cannot go back to fill in the duration."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, chunk: bytes) -> int:
        self.data += chunk
        return len(chunk)


def write(path: Path, samples: np.ndarray, rate: int = 44100) -> Path:
    """Encode (channels, n) samples in the format the extension names, as tests/media.py does."""
    encode_into(str(path), *CODECS[path.suffix], samples, rate)
    return path


def encode_into(
    target: str | Unseekable, container_format: str, codec: str, samples: np.ndarray, rate: int
) -> None:
    """Encode with PyAV into a file name or a file-like sink."""
    if codec == "libvorbis" and codec not in av.codecs_available:
        codec = "vorbis"
    samples = np.atleast_2d(samples).astype(np.float32)
    layout = "mono" if samples.shape[0] == 1 else "stereo"
    with av.open(target, "w", format=container_format) as out:
        stream = out.add_stream(codec, rate=rate)
        stream.layout = layout
        if codec == "vorbis":
            stream.codec_context.options = {"strict": "experimental"}
        fmt = stream.codec_context.format.name if stream.codec_context.format else "fltp"
        resampler = av.AudioResampler(format=fmt, layout=layout, rate=rate)
        for start in range(0, samples.shape[1], 1024):
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(samples[:, start : start + 1024]), format="fltp", layout=layout
            )
            frame.sample_rate, frame.pts, frame.time_base = rate, start, Fraction(1, rate)
            for converted in resampler.resample(frame):
                for packet in stream.encode(converted):
                    out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


@pytest.mark.parametrize("bpm", [90, 120, 150])
def test_tempo_of_a_kick_track(bpm: float) -> None:
    profile = analyze_samples(kicks(bpm, 20), RATE)
    assert profile.tempo == pytest.approx(bpm, rel=0.03)
    assert profile.rhythm_strength > 0.5


def test_a_steady_tone_has_no_rhythm() -> None:
    profile = analyze_samples(sine(440, 10), RATE)
    assert profile.rhythm_strength == 0.0
    assert 60 <= profile.tempo <= 200


@pytest.mark.parametrize("rate", [22050, 44100, 48000])
def test_loudness_of_a_sine(rate: int) -> None:
    profile = analyze_samples(sine(1000, 10, -20.0, rate), rate)
    # full scale would be -3.01 LUFS; the K-weighting is exact, so far tighter than 1 LU holds
    assert profile.loudness_lufs == pytest.approx(-23.01, abs=0.1)
    assert profile.gain_db == pytest.approx(-18.0 - profile.loudness_lufs, abs=1e-3)
    assert profile.peak == pytest.approx(0.1, rel=1e-3)
    assert profile.crest_db == pytest.approx(3.01, abs=0.05)
    assert profile.duration == pytest.approx(10.0)


def test_stereo_loudness_sums_the_channels() -> None:
    tone = sine(1000, 10, -20.0)
    assert analyze_samples(np.stack([tone, tone]), RATE).loudness_lufs == pytest.approx(
        -20.0, abs=0.1
    )


def test_gating_ignores_silence_and_gain_is_clamped() -> None:
    tone_then_silence = np.concatenate([sine(1000, 5, -20.0), np.zeros(15 * RATE, np.float32)])
    assert analyze_samples(tone_then_silence, RATE).loudness_lufs == pytest.approx(-23.01, abs=0.2)
    quiet = analyze_samples(sine(1000, 5, -60.0), RATE)
    assert quiet.loudness_lufs == pytest.approx(-63.0, abs=0.2)
    assert quiet.gain_db == 24.0
    loud = analyze_samples(np.sign(sine(1000, 5, 0.0)) * 1.0, RATE)
    assert loud.gain_db == pytest.approx(-18.0 - loud.loudness_lufs, abs=1e-3)


def test_dynamics_see_loudness_changes() -> None:
    steady = analyze_samples(sine(1000, 20, -20.0), RATE)
    changing = analyze_samples(np.concatenate([sine(1000, 10, -30.0), sine(1000, 10, -10.0)]), RATE)
    assert steady.dynamics_db < 0.1
    assert changing.dynamics_db > 5.0


def test_bright_noisy_sound_outranks_a_low_sine() -> None:
    rng = np.random.default_rng(2)
    t = np.arange(10 * RATE) / RATE
    saw = 0.3 * (2 * ((2000 * t) % 1.0) - 1) + 0.1 * rng.standard_normal(len(t))
    bright = analyze_samples(saw.astype(np.float32), RATE)
    dark = analyze_samples(sine(110, 10), RATE)
    assert bright.centroid_hz > 4 * dark.centroid_hz
    assert bright.rolloff_hz > 4 * dark.rolloff_hz
    assert bright.flatness > 100 * dark.flatness
    assert bright.zero_crossing_rate > dark.zero_crossing_rate
    assert dark.centroid_hz == pytest.approx(110, rel=0.1)


A_MINOR = [[57, 60, 64], [62, 65, 69], [64, 68, 71], [57, 60, 64]]  # Am Dm E Am
C_MAJOR = [[60, 64, 67], [65, 69, 72], [67, 71, 74], [60, 64, 67]]  # C F G C


@pytest.mark.parametrize(
    ("progression", "key", "mode"), [(A_MINOR, A, "minor"), (C_MAJOR, C, "major")]
)
def test_key_of_a_chord_progression(progression: list[list[int]], key: int, mode: str) -> None:
    profile = analyze_samples(chords(progression * 2), RATE)
    assert (profile.key, profile.mode) == (key, mode)
    assert profile.key_strength > 0.6
    assert sum(profile.chroma) == pytest.approx(1.0, abs=1e-4)
    assert np.argmax(profile.chroma) in (
        key,
        (key + 7) % 12,
        (key + (3 if mode == "minor" else 4)) % 12,
    )


def test_features_are_finite_float32_in_a_fixed_order() -> None:
    profile = analyze_samples(kicks(120, 10) + chords(C_MAJOR, 2.5), RATE)
    features = profile.features()
    assert features.dtype == np.float32
    assert features.shape == (FEATURE_DIM,) == (len(FEATURE_NAMES),)
    assert len(set(FEATURE_NAMES)) == FEATURE_DIM
    assert np.isfinite(features).all()
    assert features[FEATURE_NAMES.index("mode_strength")] == pytest.approx(
        profile.key_strength, abs=1e-6
    )
    assert features[FEATURE_NAMES.index("log2_tempo")] == pytest.approx(
        np.log2(profile.tempo), abs=1e-5
    )
    assert len(profile.mfcc) == len(profile.mfcc_std) == 13 and len(profile.chroma) == 12
    assert len(FEATURE_GROUPS) == FEATURE_DIM and FEATURE_GROUPS[0] == "rhythm"
    assert profile.onset_rate == pytest.approx(2.0, rel=0.35)  # a kick on every beat at 120 BPM


def test_excerpts_of_one_track_are_profiled_together() -> None:
    track = kicks(120, 10) + chords(C_MAJOR, 2.5)
    whole = analyze_samples(track, RATE)
    parts = analyze_samples([track[: 5 * RATE], track[5 * RATE :]], RATE)
    assert parts.duration == pytest.approx(whole.duration)
    assert parts.tempo == pytest.approx(whole.tempo, rel=0.03)
    assert parts.loudness_lufs == pytest.approx(whole.loudness_lufs, abs=0.5)
    assert (parts.key, parts.mode) == (whole.key, whole.mode)
    quiet = analyze_samples([sine(440, 0.5), track], RATE)  # a too-short excerpt is left out
    assert quiet.duration == pytest.approx(whole.duration)


def test_json_round_trip() -> None:
    profile = analyze_samples(chords(A_MINOR), RATE)
    text = profile.to_json()
    assert "\n" not in text and ", " not in text
    assert json.loads(text)["v"] == PROFILE_VERSION
    assert SoundProfile.from_json(text) == profile
    assert SoundProfile.from_json(text).features().tobytes() == profile.features().tobytes()
    stale = json.loads(text) | {"v": PROFILE_VERSION + 1}
    with pytest.raises(ValueError):
        SoundProfile.from_json(json.dumps(stale))
    with pytest.raises(ValueError):
        SoundProfile.from_json(json.dumps({"v": PROFILE_VERSION, "tempo": 120.0}))


def test_silent_or_too_short_audio_is_refused() -> None:
    with pytest.raises(AnalysisError):
        analyze_samples(np.zeros(10 * RATE, np.float32), RATE)
    with pytest.raises(AnalysisError):
        analyze_samples(sine(1000, 0.5), RATE)
    with pytest.raises(AnalysisError):
        analyze_samples(np.full(5 * RATE, np.nan, np.float32), RATE)


def test_undecodable_files_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.mp3"
    empty.write_bytes(b"")
    garbage = tmp_path / "garbage.flac"
    garbage.write_bytes(np.random.default_rng(3).integers(0, 256, 50_000, dtype=np.uint8).tobytes())
    text = tmp_path / "notes.ogg"
    text.write_text("not audio at all\n" * 100)
    truncated = tmp_path / "truncated.flac"
    whole = write(tmp_path / "whole.flac", sine(440, 5, rate=44100))
    truncated.write_bytes(whole.read_bytes()[:200])
    silent = write(tmp_path / "silent.wav", np.zeros((2, 10 * 44100), np.float32))
    for path in (empty, garbage, text, truncated, silent, tmp_path / "missing.mp3"):
        with pytest.raises(AnalysisError):
            analyze(path)


@pytest.mark.parametrize("suffix", [".flac", ".mp3"])
def test_a_long_file_is_profiled_from_excerpts_spread_over_it(tmp_path: Path, suffix: str) -> None:
    low, high = sine(200, 35, rate=44100), sine(3000, 30, rate=44100)
    path = write(tmp_path / f"long{suffix}", np.concatenate([low, high, low]))  # 100 s
    profile = analyze(path)
    assert profile.duration == pytest.approx(15.0, abs=0.1)
    # 5 s at 22.5-27.5 s (low), 47.5-52.5 s (high), 72.5-77.5 s (low): a third of it is high
    assert 700 < profile.centroid_hz < 2000
    assert analyze(path, max_seconds=5).duration == pytest.approx(5.0, abs=0.1)
    # up to 2 x max_seconds long: read from the start, so the low part
    short = write(tmp_path / "short.flac", np.concatenate([low[: 20 * 44100], high[: 10 * 44100]]))
    assert analyze(short).duration == pytest.approx(15.0, abs=0.05)
    assert analyze(short).centroid_hz < 1500
    edges = low[: 20 * 44100]
    only_high = write(tmp_path / "high.flac", np.concatenate([edges, high, high, high, edges]))
    # 130 s, high from 20 to 110 s: excerpts at 30-35, 62.5-67.5 and 95-100 s hear no intro/outro
    assert analyze(only_high, max_seconds=15).centroid_hz == pytest.approx(3000, rel=0.05)


def test_a_file_of_unknown_duration_is_read_from_the_start(tmp_path: Path) -> None:
    sink = Unseekable()
    low_then_high = np.concatenate([sine(200, 35, rate=44100), sine(3000, 35, rate=44100)])
    encode_into(sink, "matroska", "flac", low_then_high, 44100)
    path = tmp_path / "streamed.mka"
    path.write_bytes(bytes(sink.data))
    with av.open(str(path)) as container:
        assert container.duration is None and container.streams.audio[0].duration is None
    profile = analyze(path)
    assert profile.duration == pytest.approx(15.0, abs=0.05)
    assert profile.centroid_hz == pytest.approx(200, rel=0.1)


def test_excerpt_starts() -> None:
    assert _excerpt_starts(None, LISTEN_SECONDS) == [0.0]
    assert _excerpt_starts(200.0, LISTEN_SECONDS) == pytest.approx([47.5, 97.5, 147.5])
    assert _excerpt_starts(None, 30.0) == [0.0]
    assert _excerpt_starts(60.0, 30.0) == [0.0]
    assert _excerpt_starts(200.0, 30.0) == pytest.approx([45.0, 95.0, 145.0])


@pytest.mark.parametrize("suffix", sorted(CODECS))
def test_every_format_the_suite_writes(tmp_path: Path, suffix: str) -> None:
    rate = 48000 if suffix == ".opus" else 44100
    mono = kicks(120, 12, rate) + chords(A_MINOR, 3.0, rate) * 0.5
    left_right = np.stack([mono, 0.8 * mono])
    reference = analyze(write(tmp_path / "reference.wav", left_right, rate))
    assert reference.loudness_lufs == pytest.approx(
        analyze_samples(left_right, rate).loudness_lufs, abs=0.3
    )
    profile = analyze(write(tmp_path / f"track{suffix}", left_right, rate))
    assert profile.duration == pytest.approx(12.0, abs=0.1)
    assert profile.tempo == pytest.approx(120, rel=0.03)
    assert (profile.key, profile.mode) == (A, "minor")
    assert profile.loudness_lufs == pytest.approx(reference.loudness_lufs, abs=1.0)
    assert profile.centroid_hz == pytest.approx(reference.centroid_hz, rel=0.15)


def write_channels(path: Path, samples: np.ndarray, rate: int, layout: str) -> Path:
    """16-bit WAV of (channels, n) samples in any channel layout (encode_into knows two)."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("pcm_s16le", rate=rate)
        stream.layout = layout
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(samples, np.float32), format="fltp", layout=layout
        )
        frame.sample_rate, frame.pts, frame.time_base = rate, 0, Fraction(1, rate)
        for converted in av.AudioResampler(format="s16", layout=layout, rate=rate).resample(frame):
            for packet in stream.encode(converted):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path


@pytest.mark.parametrize("rate", [22050, 32000, 44100, 48000, 96000])
def test_a_sound_has_one_profile_at_whatever_sample_rate_its_file_has(
    tmp_path: Path, rate: int
) -> None:
    """Files are brought to the analysis rate first (soxr): the profile of a sound does not
    depend on the rate it was stored at (band-limited to the analysis rate's 11 kHz)."""
    seconds = 12

    def sound(at: int) -> np.ndarray:  # nothing above 5 kHz: the same sound at every rate
        return np.stack([pulses(120, seconds, at) + chords(A_MINOR, 3.0, at) * 0.5] * 2)

    heard = analyze_samples(sound(RATE), RATE)
    stored = write_channels(tmp_path / f"at{rate}.wav", sound(rate), rate, "stereo")
    profile = analyze(stored)
    assert profile.duration == pytest.approx(seconds, abs=0.01)
    assert profile.tempo == pytest.approx(heard.tempo, rel=0.02)
    assert (profile.key, profile.mode) == (A, "minor")
    assert profile.loudness_lufs == pytest.approx(heard.loudness_lufs, abs=0.3)
    assert profile.centroid_hz == pytest.approx(heard.centroid_hz, rel=0.05)


def test_more_than_two_channels_are_heard_as_stereo(tmp_path: Path) -> None:
    tone = sine(1000, 8, -20.0, 48000)
    silent = np.zeros_like(tone)
    # 5.1: front left and right carry the tone, the rest is silent
    surround = np.stack([tone, tone, silent, silent, silent, silent])
    profile = analyze(write_channels(tmp_path / "surround.wav", surround, 48000, "5.1"))
    stereo = analyze(write_channels(tmp_path / "stereo.wav", surround[:2], 48000, "stereo"))
    assert profile.duration == pytest.approx(8.0, abs=0.01)
    assert profile.loudness_lufs == pytest.approx(stereo.loudness_lufs, abs=0.5)
    assert profile.centroid_hz == pytest.approx(1000, rel=0.05)


def test_a_stream_that_changes_its_rate_and_channels_midway_is_heard_whole(
    tmp_path: Path,
) -> None:
    """Raw MP3 may change its sample rate and channels from one frame to the next (joined
    files): each run of one kind is converted on its own, and nothing is lost between them."""
    codec = CODECS[".mp3"]
    low, high = tmp_path / "low.mp3", tmp_path / "high.mp3"
    encode_into(str(low), *codec, np.stack([sine(300, 6, rate=44100)] * 2), 44100)
    encode_into(str(high), *codec, sine(3000, 6, rate=48000)[np.newaxis, :], 48000)
    joined = tmp_path / "joined.mp3"
    joined.write_bytes(low.read_bytes() + high.read_bytes())
    with av.open(str(joined)) as container:  # the premise: three kinds of frames, one stream
        kinds = {
            (frame.layout.nb_channels, frame.sample_rate)
            for packet in container.demux(container.streams.audio[0])
            for frame in _decoded(packet)
        }
    assert kinds == {(2, 44100), (1, 44100), (1, 48000)}
    profile = analyze(joined)
    assert profile.duration == pytest.approx(12.0, abs=0.1)
    assert 1000 < profile.centroid_hz < 2500  # half at 300 Hz, half at 3 kHz


def _decoded(packet: av.Packet) -> list[av.AudioFrame]:
    try:
        return packet.decode()
    except av.FFmpegError:  # where the two files meet
        return []
