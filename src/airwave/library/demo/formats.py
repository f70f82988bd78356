"""Output formats of the demo library, and the encoder that writes synthesised audio into them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class AudioFormat:
    """One output format: container, encoder and its settings."""

    ext: str
    container: str
    codec: str
    rate: int
    bit_rate: int | None
    options: tuple[tuple[str, str], ...] = ()
    quality: int | None = (
        None  # encoder's own VBR scale (FFmpeg global_quality), instead of a bit rate
    )


FORMATS: dict[str, AudioFormat] = {
    "mp3": AudioFormat(".mp3", "mp3", "libmp3lame", 44100, 192_000, (("compression_level", "7"),)),
    "flac": AudioFormat(".flac", "flac", "flac", 44100, None),
    "m4a": AudioFormat(".m4a", "ipod", "aac", 44100, 160_000, (("aac_coder", "fast"),)),
    # FFmpeg's native Vorbis encoder: the default is ~260 kbit/s; quality 3 is ~150 and 25% faster
    "ogg": AudioFormat(
        ".ogg", "ogg", "vorbis", 44100, None, (("strict", "experimental"),), quality=3
    ),
    "opus": AudioFormat(
        ".opus", "ogg", "libopus", 48000, 128_000, (("compression_level", "5"),)
    ),  # 48 kHz only
}
# One format per album, rotating. The MP3 and Vorbis encoders take 0.4 s of CPU per 24 s track,
# AAC 0.18, Opus 0.12, FLAC 0.04: the cheap ones come up more often to keep generation quick.
FORMAT_CYCLE = ("flac", "mp3", "m4a", "ogg", "flac", "m4a", "opus", "flac")
ENCODE_COST = {
    "mp3": 10,
    "ogg": 9,
    "m4a": 4,
    "opus": 3,
    "flac": 1,
}  # relative encode time, for scheduling


def encode(audio: np.ndarray, rate: int, path: Path, fmt: AudioFormat) -> None:
    """Write (2, n) float audio to `path` with PyAV."""
    import av

    with av.open(str(path), "w", format=fmt.container) as container:
        stream = container.add_stream(fmt.codec, rate=rate, options=dict(fmt.options))
        stream.layout = "stereo"
        if fmt.bit_rate:
            stream.bit_rate = fmt.bit_rate
        if fmt.quality is not None:
            stream.codec_context.flags |= int(av.codec.context.Flags.qscale)
            stream.codec_context.global_quality = fmt.quality
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(audio, dtype=np.float32), format="fltp", layout="stereo"
        )
        frame.sample_rate = rate
        frame.pts = 0
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
