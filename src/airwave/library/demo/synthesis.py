"""Audio synthesis: one track of a genre's sub-style from wavetable parts, drums and a mix."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from airwave.library.demo.styles import SCALES, Timbre, style_of


@dataclass(frozen=True)
class Sound:
    """What one track's synthesiser is told: the genre plus this artist's and track's variation."""

    style: int
    bpm: float
    tonic: int
    brightness: float  # scales harmonic count and rolloff around the genre's timbre
    loudness: float
    seed: int
    substyle: int = 0  # index into SUBSTYLES


_TABLE = 2048


def _wavetable(timbre: Timbre, brightness: float) -> np.ndarray:
    """One period of the timbre's waveform; brightness adds harmonics and flattens their rolloff."""
    count = max(1, round(timbre.harmonics * brightness))
    k = np.arange(1, count + 1)
    amp = k ** -(timbre.rolloff / brightness)
    if timbre.odd_only:
        amp[k % 2 == 0] = 0.0
    phase = np.arange(_TABLE) * (2 * np.pi / _TABLE)
    table = (amp[:, None] * np.sin(k[:, None] * phase[None, :])).sum(axis=0)
    return (table / np.abs(table).max()).astype(np.float32)


def _hz(midi: np.ndarray | float) -> np.ndarray:
    return 440.0 * 2.0 ** ((np.asarray(midi, dtype=np.float64) - 69.0) / 12.0)


@dataclass
class _Line:
    """A part as contiguous segments covering its whole span; rests have zero amplitude."""

    starts: np.ndarray  # sample of each segment's start
    lengths: np.ndarray
    amps: np.ndarray
    pitches: np.ndarray  # (voices, segments) MIDI notes


def _line(
    notes: list[tuple[int, int, tuple[float, ...], float]], onsets: np.ndarray, n: int, voices: int
) -> _Line:
    """Notes (start step, end step, pitches, velocity) on the 16th grid -> segments over [0, n)."""
    starts, amps, pitches = [0], [0.0], [notes[0][2] if notes else (60.0,) * voices]
    for a, b, chord, velocity in notes:
        start, end = (
            int(onsets[min(a, len(onsets) - 1)]),
            int(min(onsets[min(b, len(onsets) - 1)], n)),
        )
        if start >= n or end <= start:
            continue
        if start > starts[-1]:
            starts.append(start)
            amps.append(velocity)
            pitches.append(chord)
        else:  # the rest before this note has no length: the note takes its place
            amps[-1], pitches[-1] = velocity, chord
        starts.append(end)
        amps.append(0.0)
        pitches.append(chord)
    starts_a = np.asarray(starts, dtype=np.int64)
    keep = np.append(np.diff(starts_a) > 0, starts_a[-1] < n)
    starts_a = starts_a[keep]
    lengths = np.diff(np.append(starts_a, n))
    return _Line(
        starts_a,
        lengths,
        np.asarray(amps, dtype=np.float32)[keep],
        np.asarray(pitches, dtype=np.float64)[keep].T,
    )


def _render_line(line: _Line, timbre: Timbre, table: np.ndarray, rate: int) -> np.ndarray:
    """(voices, n) float32 audio of one part read from its wavetable under a per-note envelope."""
    n = int(line.lengths.sum())
    out = np.zeros((line.pitches.shape[0], n), dtype=np.float32)
    notes: dict[tuple[int, tuple[float, ...]], np.ndarray] = {}  # repeated notes are rendered once
    for start, length, amp, pitches in zip(
        line.starts.tolist(), line.lengths.tolist(), line.amps.tolist(), line.pitches.T.tolist()
    ):
        if amp == 0.0:
            continue
        key = (length, tuple(pitches))
        note = notes.get(key)
        if note is None:
            pos = np.arange(length, dtype=np.float32)
            env = np.minimum(pos * np.float32(1.0 / (timbre.attack * rate)), np.float32(1.0))
            if timbre.decay:
                env *= np.exp(pos * np.float32(-1.0 / (timbre.decay * rate)))
            gate = np.float32(length * timbre.legato)
            env *= np.clip((gate - pos) * np.float32(1.0 / (timbre.release * rate)), 0.0, 1.0)
            increments = _hz(pitches) * (_TABLE / rate)
            if timbre.vibrato:
                wobble = 1.0 + timbre.vibrato * np.sin(np.arange(length) * (2 * np.pi * 5.5 / rate))
                phase = np.cumsum(increments[:, None] * wobble[None, :], axis=1)
            elif (
                length * increments.max() < 2**23
            ):  # float32 still counts whole table steps exactly
                phase = pos[None, :] * increments.astype(np.float32)[:, None]
            else:
                phase = np.arange(length)[None, :] * increments[:, None]
            note = table[phase.astype(np.int64) & (_TABLE - 1)] * env
            notes[key] = note
        out[:, start : start + length] = note * np.float32(amp)
    return out


def _drum_kit(rate: int, rng: np.random.Generator, genre: str) -> dict[str, np.ndarray]:
    """Short one-shot samples, synthesised per track."""

    def time(seconds: float) -> np.ndarray:
        return np.arange(int(seconds * rate)) / rate

    t = time(0.6 if genre == "Hip-Hop" else 0.35)
    kick_decay = 0.35 if genre == "Hip-Hop" else 0.12
    freq = 48 + 110 * np.exp(-t / 0.035)
    kick = np.sin(2 * np.pi * np.cumsum(freq) / rate) * np.exp(-t / kick_decay)
    t = time(0.25)
    noise = rng.standard_normal(t.size)
    snare = 0.35 * np.diff(noise, prepend=0) * np.exp(-t / 0.09) + 0.5 * np.sin(
        2 * np.pi * 185 * t
    ) * np.exp(-t / 0.04)
    brush = 0.4 * noise * np.exp(-t / 0.07)
    t = time(0.3)
    hiss = np.diff(rng.standard_normal(t.size + 1)) / 2
    hat = hiss * np.exp(-t / 0.018)
    open_hat = hiss * np.exp(-t / 0.12)
    t = time(0.2)
    burst = sum(np.exp(-np.clip(t - d, 0, None) / 0.012) * (t >= d) for d in (0.0, 0.011, 0.023))
    clap = np.diff(rng.standard_normal(t.size + 1)) / 2 * (burst + np.exp(-t / 0.06))
    t = time(0.6)
    ride = sum(np.sin(2 * np.pi * f * t) for f in (3150.0, 4212.0, 5304.0, 6891.0, 7422.0)) / 5
    ride = (
        (0.6 * ride + 0.3 * np.diff(rng.standard_normal(t.size + 1)) / 2) * np.exp(-t / 0.45) * 0.6
    )
    kit = {
        "kick": kick,
        "snare": snare,
        "brush": brush,
        "hat": hat,
        "open": open_hat,
        "clap": clap,
        "ride": ride,
    }
    return {name: sample.astype(np.float32) for name, sample in kit.items()}


_DRUM_PAN = {
    "kick": 0.0,
    "snare": 0.05,
    "brush": 0.1,
    "hat": 0.35,
    "open": 0.35,
    "clap": -0.05,
    "ride": -0.4,
}
_DRUM_GAIN = {
    "kick": 1.0,
    "snare": 0.7,
    "brush": 0.5,
    "hat": 0.25,
    "open": 0.2,
    "clap": 0.6,
    "ride": 0.3,
}


def _pan(mono: np.ndarray, position: float) -> np.ndarray:
    angle = (position + 1) * math.pi / 4
    return np.stack((mono * math.cos(angle), mono * math.sin(angle)))


def _lowpass(x: np.ndarray, width: int) -> np.ndarray:
    """Moving average along the last axis: a cheap, gentle low-pass."""
    c = np.cumsum(x, axis=-1, dtype=np.float64)
    out = np.empty_like(x)
    out[..., width:] = (c[..., width:] - c[..., :-width]) / width
    out[..., :width] = c[..., :width] / np.arange(1, width + 1)
    return out


def synthesize(sound: Sound, seconds: float, rate: int = 44100) -> np.ndarray:
    """(2, n) float32 audio in the sound's genre and sub-style: tempo, key, timbre, level."""
    style = style_of(sound.style, sound.substyle)
    rng = np.random.default_rng(sound.seed)
    n = max(1, int(round(seconds * rate)))
    scale = SCALES[style.mode]
    bar_samples = int(round(240.0 / sound.bpm * rate))
    fractions = np.array([0.0, style.swing / 2, style.swing, style.swing + (1 - style.swing) / 2])
    within = np.round((np.arange(16) // 4 + fractions[np.arange(16) % 4]) / 4 * bar_samples)
    bars = n // bar_samples + 2
    onsets = (np.arange(bars)[:, None] * bar_samples + within[None, :]).ravel()
    onsets = np.append(onsets, bars * bar_samples).astype(np.int64)
    lead_level, pad_level, bass_level, drum_level = style.levels

    def pitch(degree: int, octave: int = 0) -> float:
        return float(sound.tonic + octave + scale[degree % 7] + 12 * (degree // 7))

    progression = style.progressions[int(rng.integers(len(style.progressions)))]
    chord_steps = 16 * style.chord_bars

    def chord_at(step: int) -> int:
        return progression[(step // chord_steps) % len(progression)]

    def chord_tones(degree: int) -> tuple[float, ...]:
        if style.power_chords:
            root = pitch(degree, -12)
            return (root, root + 7, root + 12, root + 19)
        return tuple(pitch(degree + i) for i in (0, 2, 4, 6 if style.sevenths else 7))

    def strikes(rhythm: str, bar: int) -> list[tuple[int, int]]:
        found = []
        for i, mark in enumerate(rhythm):
            if mark == "x":
                end = i + 1
                while end < 16 and rhythm[end] == "-":
                    end += 1
                found.append((bar * 16 + i, bar * 16 + end))
        return found

    # The backing (chords, bass, drums, noise) repeats with the chord progression: render one
    # cycle and tile it. Only the melody runs through the whole track.
    cycle_bars = min(len(progression) * style.chord_bars, bars)
    loop_n = min(n, cycle_bars * bar_samples)
    tiled = (
        loop_n < n
    )  # tails of notes and echoes wrap round to the loop's start only if it repeats
    loop = np.zeros((2, loop_n), dtype=np.float32)

    pad_notes = []
    for b in range(cycle_bars):
        rhythm = style.pad_rhythms[int(rng.integers(len(style.pad_rhythms)))]
        for start, end in strikes(rhythm, b):
            pad_notes.append(
                (start, end, chord_tones(chord_at(start)), float(rng.uniform(0.8, 1.0)))
            )
    pad = _render_line(
        _line(pad_notes, onsets, loop_n, 4),
        style.pad,
        _wavetable(style.pad, sound.brightness),
        rate,
    )
    if style.drive:
        mixed = pad.sum(axis=0)
        pad_mix = np.stack(
            (np.tanh(style.drive * mixed), np.tanh(style.drive * np.roll(mixed, rate // 100)))
        )
        pad_mix *= np.float32(pad_level / 2)
    else:
        pad_mix = (_pan(pad[0] + pad[2], -0.4) + _pan(pad[1] + pad[3], 0.4)) * np.float32(
            pad_level / 4
        )

    bass_notes = []
    for b in range(cycle_bars):
        for start, end in strikes(style.bass_rhythm, b):
            degree = chord_at(start)
            if style.walking and start % 16:
                degree += int(rng.choice((2, 4, 1, -1, 5)))
            bass_notes.append((start, end, (pitch(degree, -24),), float(rng.uniform(0.85, 1.0))))
    bass = _render_line(
        _line(bass_notes, onsets, loop_n, 1),
        style.bass,
        _wavetable(style.bass, sound.brightness),
        rate,
    )[0]
    backing = pad_mix + bass * np.float32(bass_level * math.sqrt(0.5))
    if style.pump:
        beat = np.arange(loop_n) % (bar_samples // 4)
        backing *= (1.0 - style.pump * np.exp(beat * (-1.0 / (0.09 * rate)))).astype(np.float32)
    if style.reverb:  # a few decaying echoes, different per side, wrapping round the loop
        for side, taps in enumerate(((0.031, 0.067, 0.113, 0.171), (0.041, 0.079, 0.131, 0.197))):
            for k, delay in enumerate(taps):
                d = int(delay * rate) % loop_n if tiled else min(int(delay * rate), loop_n)
                source = pad_mix[1 - side if k % 2 else side]
                gain = np.float32(style.reverb * 0.7**k)
                backing[side, d:] += source[: loop_n - d] * gain
                if tiled:
                    backing[side, :d] += source[loop_n - d :] * gain
    loop += backing

    if style.drums:
        kit = _drum_kit(rate, rng, style.genre)
        jitter = 0.004 * rate if style.swing > 0.5 else 0.0
        for name, pattern in style.drums.items():
            sample = kit[name][:loop_n]
            angle = (_DRUM_PAN[name] + 1) * math.pi / 4
            gains = np.array([math.cos(angle), math.sin(angle)], dtype=np.float32)
            for b in range(cycle_bars):
                for i, mark in enumerate(pattern):
                    if mark == ".":
                        continue
                    start = int(onsets[b * 16 + i] + (rng.normal(0, jitter) if jitter else 0))
                    if tiled:
                        start %= loop_n
                    elif not 0 <= start < loop_n:
                        continue
                    velocity = (
                        (1.0 if mark == "x" else 0.45)
                        * rng.uniform(0.85, 1.0)
                        * drum_level
                        * _DRUM_GAIN[name]
                    )
                    hit = (gains * np.float32(velocity))[:, None] * sample[None, :]
                    head = min(sample.size, loop_n - start)
                    loop[:, start : start + head] += hit[:, :head]
                    if tiled:
                        loop[:, : sample.size - head] += hit[:, head:]
    if style.darkness:
        loop = (1 - style.darkness) * loop + style.darkness * _lowpass(loop, max(2, rate // 2200))
    if style.hiss:  # vinyl: a dull noise bed (held samples) and sparse clicks
        bed = np.repeat(rng.standard_normal(loop_n // 4 + 1).astype(np.float32), 4)[
            :loop_n
        ] * np.float32(0.08)
        clicks = rng.integers(0, loop_n, int(12 * loop_n / rate))
        bed[clicks] += rng.uniform(-1, 1, clicks.size).astype(np.float32)
        loop += np.float32(style.hiss) * bed[None, :]

    lead_notes = []
    step, degree = 0, 7
    while step < bars * 16:
        length = int(rng.choice(style.lead_steps))
        if style.arpeggio:
            tones = chord_tones(chord_at(step))
            note = (
                tones[(step // length) % 3] + 12 * ((step // (3 * length)) % 2) + style.lead_octave
            )
        else:
            degree = int(np.clip(degree + rng.choice((-2, -1, -1, 0, 1, 1, 2, 3, -3)), 3, 13))
            if step % chord_steps == 0:  # land on a chord tone when the harmony changes
                degree = chord_at(step) + 7
            note = pitch(degree, style.lead_octave - 12)
        if rng.random() >= style.lead_rest:
            lead_notes.append((step, step + length, (note,), float(rng.uniform(0.7, 1.0))))
        step += length
    lead = _render_line(
        _line(lead_notes, onsets, n, 1), style.lead, _wavetable(style.lead, sound.brightness), rate
    )[0]
    if style.drive:
        lead = np.tanh(2.0 * lead)
    lead *= np.float32(
        lead_level
    )  # its darkness is in its timbre: the master filter runs on the loop only

    out = np.tile(loop, (1, -(-n // loop_n)))[:, :n] if loop_n < n else loop
    out[0] += lead * np.float32(0.65)
    out[1] += lead * np.float32(0.76)
    if style.reverb:  # the melody's room: two echoes, one per side
        for side, delay in enumerate((0.089, 0.127)):
            d = int(delay * rate)
            if d < n:
                out[side, d:] += lead[:-d] * np.float32(style.reverb * 0.6)

    # slow dynamics (swells, or an arch for classical pieces) and short fades at both ends
    t = np.arange(n, dtype=np.float32) * np.float32(1.0 / rate)
    envelope = np.minimum(
        t * np.float32(50.0), (np.float32(seconds) - t) * np.float32(1.0 / min(1.5, seconds / 6))
    )
    np.clip(envelope, 0.0, 1.0, out=envelope)
    if style.dynamics:
        if style.genre == "Classical":
            shape = np.sin(t * np.float32(np.pi / max(seconds, 1e-3)))
            shape *= np.sqrt(shape)
        else:
            shape = 0.5 - 0.5 * np.cos(
                t * np.float32(2 * np.pi / 9.0) + np.float32(rng.uniform(0, 2 * np.pi))
            )
        envelope *= (1.0 - style.dynamics) + style.dynamics * shape
    out *= envelope
    power = sum(float(np.dot(channel, channel)) for channel in out) / n
    if power > 0:
        out *= np.float32(10 ** (sound.loudness / 20) / math.sqrt(power))
    if float(np.abs(out).max()) > 0.9:  # soft-limit the loud genres
        out = np.tanh(out * np.float32(1 / 0.97)) * np.float32(0.97)
    return out.astype(np.float32, copy=False)


def loudness(audio: np.ndarray) -> float:
    """Unweighted programme loudness, close to LUFS for these signals (0 = full-scale sine)."""
    power = float(np.mean(audio.astype(np.float64) ** 2, axis=1).sum())
    return 10 * math.log10(max(power, 1e-12))
