"""A track's sound profile (tempo, rhythm, loudness, timbre, texture, key), for similarity and
ReplayGain.

Pure and self-contained: PyAV decodes (FFmpeg also runs the loudness filter), soxr brings the
audio to the analysis rate, numpy does the rest of the signal processing. A long track is heard
in EXCERPTS short excerpts spread over it (LISTEN_SECONDS in all by default), a short one from its
start, so a whole library can be profiled in worker processes at many tracks a second per core.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

if TYPE_CHECKING:  # PyAV is imported where a file is decoded: the feature layout and the
    # version, which every similarity build reads, do not load it (0.2 s and 15 MB of a scan)
    import av

# 2: three excerpts; onset rate, spectral contrast, band texture, rhythm pattern
# 3: three 5 s excerpts (15 s) instead of 10 s: half the decoding and the spectra, and as good at
#    telling styles apart on real recordings (bench/README.md)
# 5: resampled by soxr rather than FFmpeg's resampler (half its cost); its pass band ends a little
#    lower, which moves the top contrast band and the flatness enough to keep the two apart
PROFILE_VERSION = 5
LISTEN_SECONDS = 15.0  # decoded per track: the largest cost of a profile

N_MFCC = 13
N_MELS = 40
FRAME = 2048  # STFT frame, ~93 ms at 22050 Hz
HOP = 512  # STFT hop, ~23 ms at 22050 Hz
MIN_SECONDS = 1.0  # shorter audio has no meaningful profile
TEMPO_MIN, TEMPO_MAX = 60.0, 200.0
TEMPO_PRIOR_BPM = 120.0  # centre of the mild preference that settles octave ambiguity
TEMPO_PRIOR_OCTAVES = 1.0  # width (std-dev) of that preference
TEMPO_HARMONICS = 4  # autocorrelation is read at 1..4 beat periods: sharper and octave-aware
MIN_ONSET_DB = 0.05  # onset envelopes flatter than this (std-dev, dB) are steady sound, not rhythm
REPLAYGAIN_REFERENCE_LUFS = -18.0
GAIN_LIMIT_DB = 24.0
ABSOLUTE_GATE_LUFS = -70.0
RELATIVE_GATE_LU = -10.0
SHORT_TERM_RELATIVE_GATE_LU = -20.0  # as for EBU loudness range
CHROMA_BAND_HZ = (100.0, 5000.0)  # below 100 Hz the STFT cannot separate semitones
MAX_BAD_PACKETS = 50  # damaged packets skipped before giving up on a file
EXCERPTS = 3  # a long track is heard at a quarter, half and three quarters of its length
CONTRAST_EDGES_HZ = (0.0, 200.0, 400.0, 800.0, 1600.0, 3200.0, 6400.0, 11025.0)  # octave bands
CONTRAST_SHARE = 0.2  # peak and valley of a band: means of its loudest and quietest fifth of bins
N_BANDS = 8  # texture bands: groups of N_MELS // N_BANDS neighbouring mel bands
PATTERN_LAGS = 8  # rhythm pattern: onset autocorrelation at log-spaced lags ...
PATTERN_SPAN_S = (0.1, 2.0)  # ... from 100 ms to 2 s
# modulation: how fast each band's level moves, as shares of its envelope's power in these ranges
# (Hz): swells and phrases, notes, beats and tremolo, grain; of the N_BANDS texture bands
MODULATION_HZ = ((0.3, 1.0), (1.0, 2.5), (2.5, 5.0), (5.0, 9.0), (9.0, 16.0))
HARMONY_WINDOW_S = 0.5  # chroma averaged over this long before its change is measured

# Krumhansl-Kessler probe-tone ratings, tonic first (published listening-test data).
MAJOR_PROFILE = (6.35, 2.23, 3.48, 2.33, 4.38, 4.09, 2.52, 5.19, 2.39, 3.66, 2.29, 2.88)
MINOR_PROFILE = (6.33, 2.68, 3.52, 5.38, 2.60, 3.53, 2.54, 4.75, 3.98, 2.69, 3.34, 3.17)

FEATURE_NAMES: tuple[str, ...] = (
    "log2_tempo",
    "rhythm_strength",
    "loudness_lufs",
    "dynamics_db",
    "crest_db",
    "log2_centroid",
    "log2_rolloff",
    "log10_flatness",
    "log10_zcr",
    "mode_strength",
    "chroma_entropy",
    *(f"mfcc_{i}" for i in range(N_MFCC)),
    *(f"mfcc_std_{i}" for i in range(N_MFCC)),
    "onset_rate",
    *(f"contrast_{i}" for i in range(len(CONTRAST_EDGES_HZ) - 1)),
    *(f"band_std_{i}" for i in range(N_BANDS)),
    *(f"band_flux_{i}" for i in range(N_BANDS)),
    *(f"rhythm_pattern_{i}" for i in range(PATTERN_LAGS)),
    *(f"modulation_{i}" for i in range(N_BANDS * len(MODULATION_HZ))),
    "flux_median",
    "flux_p90",
    "flux_p99",
    "flux_std",
    *(f"mfcc_delta_{i}" for i in range(N_MFCC)),
    "harmonic_change_mean",
    "harmonic_change_median",
    "harmonic_change_p90",
)
FEATURE_DIM = len(FEATURE_NAMES)
# Which aspect of the sound each feature describes: the similarity space gives every aspect the same
# say, however many numbers describe it (13 MFCCs do not outvote the tempo).
_GROUP_OF = {
    "log2_tempo": "rhythm",
    "rhythm_strength": "rhythm",
    "onset_rate": "rhythm",
    "loudness_lufs": "loudness",
    "dynamics_db": "loudness",
    "crest_db": "loudness",
    "log2_centroid": "brightness",
    "log2_rolloff": "brightness",
    "log10_flatness": "brightness",
    "log10_zcr": "brightness",
    "mode_strength": "tonality",
    "chroma_entropy": "tonality",
    "flux_median": "flux",
    "flux_p90": "flux",
    "flux_p99": "flux",
    "flux_std": "flux",
    "harmonic_change_mean": "harmony",
    "harmonic_change_median": "harmony",
    "harmonic_change_p90": "harmony",
}
FEATURE_GROUPS: tuple[str, ...] = tuple(
    _GROUP_OF.get(name, name.rstrip("0123456789").rstrip("_")) for name in FEATURE_NAMES
)


class AnalysisError(Exception):
    """The file cannot be profiled: undecodable, empty, silent or too short."""


@dataclass(frozen=True)
class SoundProfile:
    """What a track sounds like, summarised from one excerpt; features() is the vector form."""

    tempo: float
    rhythm_strength: float
    loudness_lufs: float
    gain_db: float
    peak: float
    dynamics_db: float
    crest_db: float
    centroid_hz: float
    rolloff_hz: float
    flatness: float
    zero_crossing_rate: float
    mfcc: tuple[float, ...]
    mfcc_std: tuple[float, ...]
    chroma: tuple[float, ...]
    key: int
    mode: str
    key_strength: float
    duration: float
    onset_rate: float  # note and drum onsets per second
    contrast: tuple[float, ...]  # dB between peaks and valleys of each octave band's spectrum
    band_std: tuple[float, ...]  # dB: how much each band's level moves (texture, dynamics)
    band_flux: tuple[float, ...]  # dB: mean frame-to-frame change of each band (attack, grain)
    rhythm_pattern: tuple[float, ...]  # onset autocorrelation at log-spaced lags
    # log10 share of each band's envelope power in each MODULATION_HZ range, band by band
    modulation: tuple[float, ...]
    flux: tuple[float, ...]  # spectral flux (dB a frame): median, 90th and 99th centile, std-dev
    mfcc_delta: tuple[float, ...]  # std-dev of each MFCC's frame-to-frame change
    # 1 - cosine of successive half-second chroma: mean, median, 90th centile (chord changes)
    harmonic_change: tuple[float, ...]

    def features(self) -> np.ndarray:
        """Key-invariant float32 vector in FEATURE_NAMES order, scaled so z-scores make sense."""
        sign = 1.0 if self.mode == "major" else -1.0
        values = [
            math.log2(self.tempo),
            self.rhythm_strength,
            self.loudness_lufs,
            self.dynamics_db,
            self.crest_db,
            math.log2(max(self.centroid_hz, 1.0)),
            math.log2(max(self.rolloff_hz, 1.0)),
            math.log10(max(self.flatness, 1e-6)),
            math.log10(max(self.zero_crossing_rate, 1e-6)),
            sign * self.key_strength,
            _entropy(np.asarray(self.chroma, dtype=np.float64)),
            *self.mfcc,
            *self.mfcc_std,
            self.onset_rate,
            *self.contrast,
            *self.band_std,
            *self.band_flux,
            *self.rhythm_pattern,
            *self.modulation,
            *self.flux,
            *self.mfcc_delta,
            *self.harmonic_change,
        ]
        return np.asarray(values, dtype=np.float32)

    def to_json(self) -> str:
        """Compact JSON with the profile version, for storing next to the track."""
        return json.dumps({"v": PROFILE_VERSION, **asdict(self)}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SoundProfile:
        """Inverse of to_json; ValueError if malformed or of another PROFILE_VERSION."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.pop("v", None) != PROFILE_VERSION:
            raise ValueError("not a sound profile of the current version")
        names = {f.name for f in fields(cls)}
        if set(data) != names:
            raise ValueError(f"sound profile fields differ: {sorted(set(data) ^ names)}")
        for name in _SEQUENCES:
            data[name] = tuple(float(v) for v in data[name])
        return cls(**data)


_SEQUENCES = (
    *("mfcc", "mfcc_std", "chroma", "contrast", "band_std", "band_flux", "rhythm_pattern"),
    *("modulation", "flux", "mfcc_delta", "harmonic_change"),
)


def analyze(
    path: str | os.PathLike[str], *, max_seconds: float = LISTEN_SECONDS, rate: int = 22050
) -> SoundProfile:
    """Decode max_seconds in all at `rate` (EXCERPTS spread over a long track, else from the
    start) and profile it."""
    return analyze_samples(_decode(path, max_seconds, rate), rate)


def analyze_samples(samples: np.ndarray | list[np.ndarray], rate: int) -> SoundProfile:
    """Profile float samples: mono (n,), or (channels, n) so loudness sums channels per BS.1770;
    or a list of such excerpts of one track."""
    parts = samples if isinstance(samples, list) else [samples]
    excerpts = []
    for part in parts:
        channels = np.asarray(part, dtype=np.float32)
        if channels.ndim == 1:
            channels = channels[np.newaxis, :]
        if channels.ndim != 2 or channels.shape[0] > channels.shape[1]:
            raise ValueError("samples must be mono (n,) or channels-first (channels, n)")
        if not np.isfinite(channels).all():
            raise AnalysisError("samples are not finite")
        excerpts.append(channels)
    if len({c.shape[0] for c in excerpts}) > 1:
        raise ValueError("excerpts differ in their channels")
    excerpts = [c for c in excerpts if c.shape[1] >= MIN_SECONDS * rate]
    if not excerpts:
        longest = max((np.shape(p)[-1] for p in parts), default=0)
        raise AnalysisError(f"too short: {longest / rate:.2f} s of audio")
    return _profile(excerpts, rate)


# --- decoding -----------------------------------------------------------------------------------


def _decode(path: str | os.PathLike[str], max_seconds: float, rate: int) -> list[np.ndarray]:
    """Channels-first float32 excerpts of the first audio stream, resampled to `rate`."""
    import av

    try:
        container = av.open(os.fspath(path), metadata_errors="ignore")
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise AnalysisError(f"cannot open: {exc}") from exc
    excerpts: list[np.ndarray] = []
    with container:
        if not container.streams.audio:
            raise AnalysisError("no audio stream")
        stream = container.streams.audio[0]
        starts = _excerpt_starts(_duration(container, stream), max_seconds)
        length = max_seconds / len(starts)
        for start in starts:
            if start > 0 and _seek(container, start) == 0.0:
                if excerpts:
                    break  # keep the excerpts read so far
                starts, length, start = [0.0], max_seconds, 0.0  # cannot seek: read from the start
            chunks = _read(_frames(container, stream, start), round(length * rate), rate)
            if chunks:
                excerpts.append(np.concatenate(chunks, axis=1)[:, : round(length * rate)])
            if len(starts) == 1:
                break
    if not excerpts:
        raise AnalysisError("no decodable audio")
    return excerpts


def _duration(
    container: av.container.InputContainer, stream: av.audio.stream.AudioStream
) -> float | None:
    """Length in seconds from the stream or the container header, None when neither knows."""
    import av

    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / av.time_base
    return None


def _excerpt_starts(duration: float | None, max_seconds: float) -> list[float]:
    """EXCERPTS excerpts centred at 1/4, 1/2, 3/4 of tracks long enough to skip intro and outro
    (several parts of a song say more than one), else one from the start."""
    if duration is None or duration <= 2 * max_seconds:
        return [0.0]
    length = max_seconds / EXCERPTS
    return [duration * (k + 1) / (EXCERPTS + 1) - length / 2 for k in range(EXCERPTS)]


def _seek(container: av.container.InputContainer, seconds: float) -> float:
    """Seek to the keyframe before `seconds`; 0.0 (read from the start) if the file cannot seek."""
    import av

    try:
        container.seek(int(seconds * av.time_base), any_frame=False)
    except (av.FFmpegError, ValueError):
        return 0.0
    return seconds


def _frames(
    container: av.container.InputContainer, stream: av.audio.stream.AudioStream, start: float
) -> Iterator[av.AudioFrame]:
    """Decoded frames from `start` seconds on; damaged packets are skipped, a broken tail ends."""
    import av

    bad = 0
    scale = 0.0  # seconds per pts tick; float arithmetic, not a Fraction per frame
    try:
        for packet in container.demux(stream):
            try:
                frames = packet.decode()
            except av.FFmpegError:
                bad += 1
                if bad > MAX_BAD_PACKETS:
                    return
                continue
            for frame in frames:
                if start and frame.pts is not None:
                    if not scale and frame.time_base is not None:
                        scale = float(frame.time_base)
                    if scale and frame.pts * scale + frame.samples / frame.sample_rate <= start:
                        continue  # the seek landed on an earlier keyframe
                yield frame
    except av.FFmpegError:
        return


def _read(frames: Iterator[av.AudioFrame], wanted: int, rate: int) -> list[np.ndarray]:
    """(channels, n) float32 chunks at `rate` up to about `wanted` samples; mono stays mono,
    else stereo.

    Decoded frames are gathered as they come (in a FIFO, without a Python array per frame) and
    converted once per run of one format: the sample rate by soxr, which costs about half of
    FFmpeg's resampler for the same band-limited result (bench/README.md)."""
    import av

    chunks: list[np.ndarray] = []
    have = 0
    fifo: av.AudioFifo | None = None
    layout = "stereo"
    kind: tuple[str, str, int] | None = None  # format, layout and rate of what the FIFO holds
    for frame in frames:
        this = (frame.format.name, frame.layout.name, frame.sample_rate)
        if kind is None:
            layout = "mono" if frame.layout.nb_channels == 1 else "stereo"
        if this != kind:  # the stream changed format mid-way: convert what came before
            if fifo is not None:
                have += _convert(fifo, layout, rate, chunks)
                if have >= wanted:
                    break
            fifo, kind = av.AudioFifo(), this
        frame.pts = None  # the FIFO checks timestamps follow on; skipped packets break that
        fifo.write(frame)
        if have + fifo.samples * rate / frame.sample_rate >= wanted:
            break
    if fifo is not None and fifo.samples:
        _convert(fifo, layout, rate, chunks)
    return chunks


def _convert(fifo: av.AudioFifo, layout: str, rate: int, chunks: list[np.ndarray]) -> int:
    """Everything in the FIFO as one (channels, n) float32 chunk at `rate`; its length."""
    import av
    import soxr

    frame = fifo.read()
    if frame is None:
        return 0
    source_rate = frame.sample_rate
    if frame.format.name == "fltp" and frame.layout.name == layout:
        samples = frame.to_ndarray()
    else:  # another sample format, or channels to mix: FFmpeg's converter, at the same rate
        converter = av.AudioResampler(format="fltp", layout=layout, rate=source_rate)
        parts = [out.to_ndarray() for out in converter.resample(frame)]
        parts += [out.to_ndarray() for out in converter.resample(None)]
        if not parts:
            return 0
        samples = np.concatenate(parts, axis=1)
    if source_rate != rate:
        samples = soxr.resample(samples.T, source_rate, rate, quality="HQ").T
    chunk = np.ascontiguousarray(samples, dtype=np.float32)
    chunks.append(chunk)
    return chunk.shape[1]


# --- the profile ----------------------------------------------------------------------------------


def _profile(excerpts: list[np.ndarray], rate: int) -> SoundProfile:
    """All features of channels-first float32 excerpts of one track."""
    energies = np.concatenate([_block_energies(c, rate) for c in excerpts])
    loudness = _integrated_loudness(energies)
    if loudness is None:
        raise AnalysisError("silent")
    monos = [c.mean(axis=0) for c in excerpts]
    magnitudes = [_spectrogram(m) for m in monos]
    magnitude = np.concatenate(magnitudes)
    power = np.square(magnitude)
    active = _active_frames(power)
    mel_db = _mel_db(power, rate)
    # einsum, not a matrix product: multi-threaded BLAS would spin idle cores and double CPU time
    every_mfcc = np.einsum("fm,km->fk", mel_db, _dct_matrix(N_MELS, N_MFCC))
    mfcc = every_mfcc[active]
    bounds = np.cumsum([0] + [len(m) for m in magnitudes])
    spans = list(zip(bounds[:-1], bounds[1:]))
    envelopes = [_onset_envelope(mel_db[a:b]) for a, b in spans]
    acf = _onset_autocorrelation(envelopes, rate / HOP)
    tempo, rhythm = _tempo(acf, rate / HOP)
    sounding = magnitude[active]
    chroma = _chroma(sounding.sum(axis=0), rate)
    key, mode, key_strength = _key(chroma)
    centroid, rolloff, flatness = _spectral_shape(sounding, power[active], rate)
    band_std, band_flux = _band_texture(mel_db[active])
    channels = np.concatenate(excerpts, axis=1)
    peak = float(np.abs(channels).max())
    rms = math.sqrt(float(np.mean(np.square(channels, dtype=np.float64))))
    seconds = channels.shape[1] / rate
    return SoundProfile(
        tempo=_round(tempo),
        rhythm_strength=_round(rhythm),
        loudness_lufs=_round(loudness),
        gain_db=_round(
            min(max(REPLAYGAIN_REFERENCE_LUFS - loudness, -GAIN_LIMIT_DB), GAIN_LIMIT_DB)
        ),
        peak=_round(peak),
        dynamics_db=_round(_dynamics(energies)),
        crest_db=_round(20 * math.log10(peak / rms)),
        centroid_hz=_round(centroid),
        rolloff_hz=_round(rolloff),
        flatness=_round(flatness),
        zero_crossing_rate=_round(float(np.mean([_zero_crossing_rate(m) for m in monos]))),
        mfcc=tuple(_round(v) for v in mfcc.mean(axis=0)),
        mfcc_std=tuple(_round(v) for v in mfcc.std(axis=0)),
        chroma=tuple(_round(v) for v in chroma),
        key=key,
        mode=mode,
        key_strength=_round(key_strength),
        duration=_round(seconds),
        onset_rate=_round(sum(_onset_count(e) for e in envelopes) / seconds),
        contrast=tuple(_round(v) for v in _contrast(power[active], rate)),
        band_std=tuple(_round(v) for v in band_std),
        band_flux=tuple(_round(v) for v in band_flux),
        rhythm_pattern=tuple(_round(v) for v in _rhythm_pattern(acf, rate / HOP)),
        modulation=tuple(_round(v) for v in _modulation([mel_db[a:b] for a, b in spans], rate)),
        flux=tuple(_round(v) for v in _flux_spread(envelopes)),
        mfcc_delta=tuple(_round(v) for v in _deltas_spread([every_mfcc[a:b] for a, b in spans])),
        harmonic_change=tuple(
            _round(v) for v in _harmonic_change([power[a:b] for a, b in spans], rate)
        ),
    )


def _round(value: float) -> float:
    """Six significant digits: ample for similarity, and keeps the JSON short."""
    return float(f"{float(value):.6g}")


def _entropy(distribution: np.ndarray) -> float:
    """Shannon entropy scaled to 0..1: 0 = one pitch class, 1 = all equal (no tonality)."""
    p = distribution[distribution > 0]
    p = p / p.sum()
    return float(-(p * np.log(p)).sum() / math.log(len(distribution)))


# --- loudness (ITU-R BS.1770-4 / EBU R128) --------------------------------------------------------


def _k_filters(rate: int) -> list[str]:
    """BS.1770's K-weighting (a shelf, then a ~38 Hz high-pass) as two FFmpeg biquad filters.

    Both stages are designed for `rate` from their analogue parameters with the bilinear transform,
    which reproduces the standard's 48 kHz coefficients exactly.
    """
    k = math.tan(math.pi * 1681.974450955533 / rate)
    q = 0.7071752369554196
    vh = 10 ** (3.999843853973347 / 20)
    vb = vh**0.4996667741545416
    a0 = 1 + k / q + k * k
    shelf = (
        ((vh + vb * k / q + k * k) / a0, 2 * (k * k - vh) / a0, (vh - vb * k / q + k * k) / a0),
        (1.0, 2 * (k * k - 1) / a0, (1 - k / q + k * k) / a0),
    )
    k = math.tan(math.pi * 38.13547087602444 / rate)
    q = 0.5003270373238773
    a0 = 1 + k / q + k * k
    highpass = ((1.0, -2.0, 1.0), (1.0, 2 * (k * k - 1) / a0, (1 - k / q + k * k) / a0))
    return [
        f"b0={b[0]!r}:b1={b[1]!r}:b2={b[2]!r}:a0={a[0]!r}:a1={a[1]!r}:a2={a[2]!r}:precision=f64"
        for b, a in (shelf, highpass)
    ]


def _k_weighted(channels: np.ndarray, rate: int) -> np.ndarray:
    """Channels-first float32 samples through the K-weighting filter, each channel on its own.

    FFmpeg runs the two biquads (in double precision) over a whole excerpt in one call: the
    recursive filter itself, about twice as fast as applying its response with FFTs."""
    import av

    layout = {1: "mono", 2: "stereo"}.get(channels.shape[0])
    if layout is None:  # any other count: one channel at a time
        return np.concatenate([_k_weighted(c[np.newaxis, :], rate) for c in channels])
    graph = av.filter.Graph()
    nodes = [graph.add_abuffer(format="fltp", sample_rate=rate, layout=layout)]
    nodes += [graph.add("biquad", options) for options in _k_filters(rate)]
    nodes.append(graph.add("abuffersink"))
    for source, sink in zip(nodes, nodes[1:]):
        source.link_to(sink)
    graph.configure()
    frame = av.AudioFrame.from_ndarray(
        np.ascontiguousarray(channels, dtype=np.float32), format="fltp", layout=layout
    )
    frame.sample_rate, frame.pts = rate, 0
    graph.push(frame)
    graph.push(None)
    parts = []
    while True:
        try:
            parts.append(graph.pull().to_ndarray())
        except (av.EOFError, av.BlockingIOError):
            break
    return np.concatenate(parts, axis=1)


def _block_energies(channels: np.ndarray, rate: int) -> np.ndarray:
    """K-weighted mean square of each 400 ms block (75% overlap), summed over channels."""
    segment = round(0.1 * rate)  # a block is four consecutive 100 ms segments
    count = max(channels.shape[1] // segment, 4)
    filtered = _k_weighted(channels, rate)[:, : count * segment]
    if filtered.shape[1] < count * segment:  # shorter than a block: the rest is silence
        filtered = np.pad(filtered, ((0, 0), (0, count * segment - filtered.shape[1])))
    energy = np.square(filtered, dtype=np.float64).reshape(-1, count, segment).sum(axis=(0, 2))
    sums = np.cumsum(np.concatenate(([0.0], energy)))
    return (sums[4:] - sums[:-4]) / (4 * segment)


def _lufs(energy: np.ndarray | float) -> np.ndarray:
    """BS.1770 loudness of K-weighted mean squares; -inf for zero."""
    with np.errstate(divide="ignore"):
        return -0.691 + 10 * np.log10(energy)


def _integrated_loudness(energies: np.ndarray) -> float | None:
    """Gated integrated loudness in LUFS; None when every block is below the absolute gate."""
    gated = energies[_lufs(energies) > ABSOLUTE_GATE_LUFS]
    if not gated.size:
        return None
    threshold = float(_lufs(gated.mean())) + RELATIVE_GATE_LU
    return float(_lufs(gated[_lufs(gated) > threshold].mean()))


def _dynamics(energies: np.ndarray) -> float:
    """Std-dev (dB) of gated 3 s loudness, 1 s apart; of 400 ms blocks for short excerpts."""
    window, step = 27, 10  # 27 blocks 100 ms apart span 3 s
    short_term = energies
    if len(energies) >= window + 2 * step:
        sums = np.cumsum(np.concatenate(([0.0], energies)))
        short_term = ((sums[window:] - sums[:-window]) / window)[::step]
    short_term = short_term[_lufs(short_term) > ABSOLUTE_GATE_LUFS]
    if short_term.size < 2:
        return 0.0
    loud = _lufs(short_term)
    loud = loud[loud > _lufs(short_term.mean()) + SHORT_TERM_RELATIVE_GATE_LU]
    return float(loud.std()) if loud.size > 1 else 0.0


# --- spectrum, timbre -----------------------------------------------------------------------------


def _spectrogram(mono: np.ndarray) -> np.ndarray:
    """Magnitude STFT, frames x bins, Hann window of FRAME samples every HOP."""
    if len(mono) < FRAME:
        mono = np.pad(mono, (0, FRAME - len(mono)))
    frames = sliding_window_view(mono, FRAME)[::HOP] * _hann(FRAME)
    return np.abs(np.fft.rfft(frames, axis=1))


@lru_cache(maxsize=4)
def _hann(size: int) -> np.ndarray:
    """Periodic Hann window, float32."""
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(size) / size)).astype(np.float32)


def _active_frames(power: np.ndarray) -> np.ndarray:
    """Frames within 60 dB of the loudest, so silence does not skew spectral averages."""
    energy = power.sum(axis=1)
    return energy > max(float(energy.max()) * 1e-6, 1e-10)


def _spectral_shape(
    magnitude: np.ndarray, power: np.ndarray, rate: int
) -> tuple[float, float, float]:
    """Mean spectral centroid (Hz) and 85% rolloff (Hz) of magnitudes, flatness (0..1) of power."""
    freqs = np.fft.rfftfreq(FRAME, 1 / rate).astype(np.float32)
    centroid = float(np.mean(np.einsum("fb,b->f", magnitude, freqs) / magnitude.sum(axis=1)))
    cumulative = np.cumsum(magnitude, axis=1)
    rolloff_bins = (cumulative < 0.85 * cumulative[:, -1:]).sum(axis=1)
    rolloff = float(np.mean(freqs[np.minimum(rolloff_bins, len(freqs) - 1)]))
    floored = power + np.float32(1e-12)
    flatness = float(np.mean(np.exp(np.log(floored).mean(axis=1)) / floored.mean(axis=1)))
    return centroid, rolloff, flatness


def _contrast(power: np.ndarray, rate: int) -> np.ndarray:
    """Mean spectral contrast (dB) of each octave band: tones and harmonics stand far above the
    noise floor, distorted guitars and cymbals fill their bands."""
    freqs = np.fft.rfftfreq(FRAME, 1 / rate)
    out = np.zeros(len(CONTRAST_EDGES_HZ) - 1)
    for i, (low, high) in enumerate(zip(CONTRAST_EDGES_HZ[:-1], CONTRAST_EDGES_HZ[1:])):
        band = power[:, (freqs >= low) & (freqs < high)]
        if band.shape[1] == 0 or not len(band):
            continue
        ordered = np.sort(band, axis=1)  # float32: numpy's vectorised sort beats a partition
        k = max(1, int(CONTRAST_SHARE * ordered.shape[1]))
        peak = ordered[:, -k:].mean(axis=1) + 1e-10
        valley = ordered[:, :k].mean(axis=1) + 1e-10
        out[i] = float(np.mean(10 * np.log10(peak / valley)))
    return out


def _texture_bands(mel_db: np.ndarray) -> np.ndarray:
    """Frames x N_BANDS: the mean level (dB) of each group of neighbouring mel bands."""
    return mel_db[:, : N_BANDS * (N_MELS // N_BANDS)].reshape(len(mel_db), N_BANDS, -1).mean(2)


def _band_texture(mel_db: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per band of neighbouring mel bands: std-dev of its level and mean frame-to-frame change."""
    if not len(mel_db):
        return np.zeros(N_BANDS), np.zeros(N_BANDS)
    bands = _texture_bands(mel_db)
    flux = np.abs(np.diff(bands, axis=0)).mean(axis=0) if len(bands) > 1 else np.zeros(N_BANDS)
    return bands.std(axis=0), flux


def _zero_crossing_rate(mono: np.ndarray) -> float:
    """Fraction of adjacent samples that change sign."""
    return float(np.count_nonzero(np.diff(np.signbit(mono)))) / max(len(mono) - 1, 1)


def _hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
    """HTK mel scale."""
    return 2595.0 * np.log10(1.0 + np.asarray(hz) / 700.0)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    """Inverse of _hz_to_mel."""
    return 700.0 * (10 ** (mel / 2595.0) - 1.0)


@lru_cache(maxsize=4)
def _mel_regions(rate: int) -> tuple[slice, np.ndarray, np.ndarray, np.ndarray]:
    """Layout of the triangular mel filterbank (30 Hz to Nyquist) over STFT bins.

    The N_MELS + 1 regions between neighbouring band edges are contiguous runs of bins; band b rises
    over region b and falls over region b + 1. Returns the covered bins, each region's first bin
    (relative to them), whether it holds any bin, and each bin's position 0..1 within its region.
    """
    edges = _mel_to_hz(np.linspace(_hz_to_mel(30.0), _hz_to_mel(rate / 2), N_MELS + 2))
    freqs = np.fft.rfftfreq(FRAME, 1 / rate)
    first = np.searchsorted(freqs, edges)
    covered = slice(int(first[0]), int(first[-1]))
    region = np.searchsorted(edges, freqs[covered], side="right") - 1
    position = (freqs[covered] - edges[region]) / (edges[region + 1] - edges[region])
    starts = first[:-1] - first[0]
    return (
        covered,
        np.minimum(starts, covered.stop - covered.start - 1),
        first[1:] > first[:-1],
        position.astype(np.float32),
    )


def _mel_power(power: np.ndarray, rate: int) -> np.ndarray:
    """Mel filterbank applied to a power spectrogram, frames x N_MELS, without BLAS."""
    covered, starts, nonempty, position = _mel_regions(rate)
    bins = power[:, covered]
    rising = np.add.reduceat(bins * position, starts, axis=1) * nonempty
    falling = np.add.reduceat(bins, starts, axis=1) * nonempty - rising
    return rising[:, :-1] + falling[:, 1:]


@lru_cache(maxsize=4)
def _dct_matrix(size: int, count: int) -> np.ndarray:
    """Orthonormal DCT-II rows 0..count-1 for vectors of `size`."""
    n = np.arange(size)
    k = np.arange(count)[:, np.newaxis]
    rows = math.sqrt(2 / size) * np.cos(np.pi * k * (2 * n + 1) / (2 * size))
    rows[0] /= math.sqrt(2)
    return rows.astype(np.float32)


def _mel_db(power: np.ndarray, rate: int) -> np.ndarray:
    """Log-mel power in dB, frames x N_MELS, floored 80 dB under the excerpt's peak."""
    mel = _mel_power(power, rate)
    db = 10 * np.log10(np.maximum(mel, 1e-10))
    return np.maximum(db, db.max() - 80.0)


# --- movement: how the sound changes ------------------------------------------------------------


def _modulation(mel_dbs: list[np.ndarray], rate: int) -> np.ndarray:
    """Per texture band, the log10 share of its level's movement in each MODULATION_HZ range
    (averaged over excerpts): pads swell slowly, strings tremble, beats pulse."""
    frame_rate = rate / HOP
    shares = []
    for mel_db in mel_dbs:
        if len(mel_db) < 2 * frame_rate:
            continue
        envelope = _texture_bands(mel_db)
        envelope = (envelope - envelope.mean(axis=0)) * _hann(len(envelope))[:, np.newaxis]
        spectrum = np.square(np.abs(np.fft.rfft(envelope, axis=0)))
        freqs = np.fft.rfftfreq(len(envelope), 1 / frame_rate)
        power = np.stack(
            [spectrum[(freqs >= lo) & (freqs < hi)].sum(axis=0) for lo, hi in MODULATION_HZ]
        )
        shares.append(np.log10(power / np.maximum(power.sum(axis=0), 1e-12) + 1e-6))
    if not shares:
        return np.full(N_BANDS * len(MODULATION_HZ), -6.0)
    return np.mean(shares, axis=0).ravel()


def _flux_spread(envelopes: list[np.ndarray]) -> np.ndarray:
    """Median, 90th and 99th centile and std-dev of the spectral flux (dB a frame)."""
    flux = np.concatenate(envelopes) if envelopes else np.zeros(0)
    if not len(flux):
        return np.zeros(4)
    return np.array([*np.percentile(flux, (50, 90, 99)), flux.std()])


def _deltas_spread(mfccs: list[np.ndarray]) -> np.ndarray:
    """Std-dev of each MFCC's change from one frame to the next, within excerpts."""
    deltas = [np.diff(m, axis=0) for m in mfccs if len(m) > 1]
    if not deltas:
        return np.zeros(N_MFCC)
    return np.concatenate(deltas).std(axis=0)


def _harmonic_change(powers: list[np.ndarray], rate: int) -> np.ndarray:
    """How much the pitch-class content moves from one half second to the next: mean, median and
    90th centile of 1 - cosine between successive windows' chroma (held chords and drones: low)."""
    filters = _chroma_filters(rate)
    inside = np.flatnonzero(filters.any(axis=1))
    window = max(1, round(HARMONY_WINDOW_S * rate / HOP))
    changes = []
    for power in powers:
        count = len(power) // window
        if count < 2:
            continue
        chroma = np.einsum("fb,bc->fc", power[: count * window, inside], filters[inside])
        chroma = chroma.reshape(count, window, 12).mean(axis=1)
        norms = np.linalg.norm(chroma, axis=1)
        unit = chroma / np.maximum(norms, 1e-12)[:, np.newaxis]
        changes.append(1.0 - np.einsum("wc,wc->w", unit[1:], unit[:-1]))
    if not changes:
        return np.zeros(3)
    change = np.concatenate(changes)
    return np.array([change.mean(), np.median(change), np.percentile(change, 90)])


# --- rhythm ---------------------------------------------------------------------------------------


def _onset_envelope(mel_db: np.ndarray) -> np.ndarray:
    """Spectral flux: mean rise of log-mel energy from one frame to the next."""
    return np.maximum(np.diff(mel_db, axis=0), 0.0).mean(axis=1)


def _onset_autocorrelation(envelopes: list[np.ndarray], frame_rate: float) -> np.ndarray | None:
    """Normalised autocorrelation of the onset envelopes (averaged over excerpts, weighted by
    length); None when they are too flat to hold any rhythm."""
    smooth = max(1, round(1.5 * frame_rate))  # drop changes slower than any beat before correlating
    kernel = np.ones(smooth) / smooth
    total: np.ndarray | None = None
    weight = 0.0
    for envelope in envelopes:
        signal = envelope - np.convolve(envelope, kernel, mode="same")
        signal = signal - signal.mean()
        n = len(signal)
        spectrum = np.fft.rfft(signal, 2 * n)
        acf = np.fft.irfft(spectrum.real**2 + spectrum.imag**2)[:n]
        if n < 4 or acf[0] <= n * MIN_ONSET_DB**2:
            continue
        acf = acf / acf[0] * n
        if total is None or len(total) < n:
            total = np.concatenate([total if total is not None else np.zeros(0), np.zeros(n)])[:n]
        total[:n] += acf
        weight += n
    return None if total is None else total / weight


def _tempo(acf: np.ndarray | None, frame_rate: float) -> tuple[float, float]:
    """(BPM in TEMPO_MIN..TEMPO_MAX, strength 0..1) from the onset autocorrelation."""
    if acf is None:
        return TEMPO_PRIOR_BPM, 0.0
    n = len(acf)
    candidates = np.arange(TEMPO_MIN, TEMPO_MAX + 0.25, 0.25)
    lags = 60.0 * frame_rate / candidates
    lag_axis = np.arange(n)
    score = sum(
        np.interp(h * lags, lag_axis, acf, right=0.0) for h in range(1, TEMPO_HARMONICS + 1)
    )
    prior = np.exp(-0.5 * (np.log2(candidates / TEMPO_PRIOR_BPM) / TEMPO_PRIOR_OCTAVES) ** 2)
    best = int(np.argmax(np.maximum(score, 0.0) * prior))
    strength = float(np.interp(lags[best], lag_axis, acf))
    return float(candidates[best]), min(max(strength, 0.0), 1.0)


def _rhythm_pattern(acf: np.ndarray | None, frame_rate: float) -> np.ndarray:
    """The onset autocorrelation at PATTERN_LAGS log-spaced lags: which spacings of notes and
    beats recur (swing, half-time, busy hi-hats), whatever the tempo; zeros without rhythm."""
    if acf is None:
        return np.zeros(PATTERN_LAGS)
    lags = np.geomspace(
        PATTERN_SPAN_S[0] * frame_rate, PATTERN_SPAN_S[1] * frame_rate, PATTERN_LAGS
    )
    return np.interp(lags, np.arange(len(acf)), acf, right=0.0)


def _onset_count(envelope: np.ndarray) -> int:
    """Local maxima of the onset envelope standing a std-dev above its mean (none when flat)."""
    if len(envelope) < 3 or envelope.std() < MIN_ONSET_DB:
        return 0
    threshold = envelope.mean() + envelope.std()
    middle = envelope[1:-1]
    return int(
        np.count_nonzero((middle > envelope[:-2]) & (middle >= envelope[2:]) & (middle > threshold))
    )


# --- tonality -------------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _chroma_filters(rate: int) -> np.ndarray:
    """bins x 12 map of each STFT bin in CHROMA_BAND_HZ to its nearest pitch class (0 = C)."""
    freqs = np.fft.rfftfreq(FRAME, 1 / rate)
    inside = (freqs >= CHROMA_BAND_HZ[0]) & (freqs <= CHROMA_BAND_HZ[1])
    c0 = 440.0 * 2 ** (-57 / 12)  # C0, 57 semitones below A4
    pitch_class = np.round(12 * np.log2(np.where(inside, freqs, c0) / c0)).astype(int) % 12
    filters = np.zeros((len(freqs), 12), dtype=np.float32)
    filters[np.flatnonzero(inside), pitch_class[inside]] = 1.0
    return filters


def _chroma(spectrum: np.ndarray, rate: int) -> np.ndarray:
    """Pitch-class distribution of a summed magnitude spectrum, adding up to 1."""
    chroma = (spectrum @ _chroma_filters(rate)).astype(np.float64)
    total = chroma.sum()
    return chroma / total if total > 0 else np.full(12, 1 / 12)


def _key(chroma: np.ndarray) -> tuple[int, str, float]:
    """(tonic, "major"/"minor", correlation) of the best Krumhansl-Schmuckler key profile."""
    candidates = [
        (float(np.corrcoef(chroma, np.roll(profile, tonic))[0, 1]), tonic, mode)
        for mode, profile in (("major", MAJOR_PROFILE), ("minor", MINOR_PROFILE))
        for tonic in range(12)
    ]
    strength, tonic, mode = max(candidates, key=lambda c: -1.0 if math.isnan(c[0]) else c[0])
    return tonic, mode, 0.0 if math.isnan(strength) else strength
