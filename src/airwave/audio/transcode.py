"""One transcode: decode with PyAV, resample, encode and mux into a file that readers may follow as
it grows.

MP3 goes through the system's libmp3lame when it is installed (Debian: libmp3lame0): PyAV's bundled
build of LAME runs about 3.5x slower than the distribution's (bench/stream.py measures both), and
the two produce the same bitstream format. Everything else, and MP3 without a system LAME, is PyAV
alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import os
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any, cast

from airwave.audio.formats import Profile

Progress = Callable[
    [int], None
]  # called with the bytes written so far, from the transcoding thread
MAX_BAD_PACKETS = (
    100  # undecodable packets skipped (as ffmpeg does) before the source counts as broken
)


class TranscodeError(Exception):
    """The source could not be decoded or the encoder refused it."""


def transcode(
    source: str,
    fd: int,
    profile: Profile,
    progress: Progress | None = None,
    *,
    system_lame: bool = True,
) -> int:
    """Write `source` encoded per `profile` to the empty file `fd`; returns the bytes written."""
    import av

    sink = _Sink(fd, progress or (lambda _n: None))
    try:
        with av.open(source, metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise TranscodeError("the file has no audio stream")
            stream = container.streams.audio[0]
            rate_in = stream.codec_context.sample_rate
            if not rate_in:
                raise TranscodeError("the audio stream has no sample rate")
            rate = output_rate(rate_in, profile.rates)
            layout = "mono" if stream.codec_context.channels == 1 else "stereo"
            frames = _decoded(container, stream)
            lame = _system_lame() if system_lame and profile.codec == "libmp3lame" else None
            if lame is not None:
                seconds = container.duration / 1_000_000 if container.duration else None
                _encode_lame(lame, frames, sink, profile, rate, layout, seconds)
            else:
                _encode_pyav(frames, sink, profile, rate, layout)
    except av.FFmpegError as exc:
        raise TranscodeError(str(exc)) from None
    return sink.written


def output_rate(rate: int, allowed: tuple[int, ...]) -> int:
    """The source rate when the format takes it, else the allowed rate of the same family (44.1
    or 48 kHz)."""
    if rate in allowed:
        return rate
    preferred = 44100 if rate % 11025 == 0 else 48000
    return preferred if preferred in allowed else allowed[0]


def _decoded(container: Any, stream: Any) -> Iterator[Any]:
    """Decoded frames without their timestamps (the resampler renumbers them); skips a few
    corrupt packets."""
    import av

    bad = 0
    for packet in container.demux(stream):
        try:
            frames = packet.decode()
        except av.InvalidDataError:
            bad += 1
            if bad > MAX_BAD_PACKETS:
                raise TranscodeError("too many undecodable packets") from None
            continue
        for frame in frames:
            frame.pts = None
            yield frame


def _encode_pyav(
    frames: Iterator[Any], sink: _Sink, profile: Profile, rate: int, layout: str
) -> None:
    import av
    from av.audio.stream import AudioStream

    with av.open(sink, "w", format=profile.container) as out:
        stream = cast(AudioStream, out.add_stream(profile.codec, rate=rate))
        stream.layout = layout
        stream.bit_rate = profile.bitrate
        context = stream.codec_context
        context.open()
        sample_format = context.format.name if context.format else "fltp"
        resampler = av.AudioResampler(
            format=sample_format, layout=layout, rate=rate, frame_size=context.frame_size or None
        )
        for frame in frames:
            for chunk in resampler.resample(frame):
                for packet in stream.encode(chunk):
                    out.mux(packet)
        for chunk in resampler.resample(None):
            for packet in stream.encode(chunk):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)


def _encode_lame(
    lame: ctypes.CDLL,
    frames: Iterator[Any],
    sink: _Sink,
    profile: Profile,
    rate: int,
    layout: str,
    seconds: float | None = None,
) -> None:
    import av

    channels = 1 if layout == "mono" else 2
    first = True
    gfp = lame.lame_init()
    if not gfp:
        raise TranscodeError("lame_init failed")
    try:
        lame.lame_set_in_samplerate(gfp, rate)
        lame.lame_set_out_samplerate(gfp, rate)
        lame.lame_set_num_channels(gfp, channels)
        lame.lame_set_mode(gfp, 3 if channels == 1 else 1)  # MONO or JOINT_STEREO
        lame.lame_set_brate(gfp, profile.bitrate // 1000)
        lame.lame_set_bWriteVbrTag(gfp, 1)  # the LAME/Info frame: gapless playback, exact duration
        if lame.lame_init_params(gfp) < 0:
            raise TranscodeError(
                f"LAME refused {rate} Hz, {channels} channels, {profile.bitrate} bit/s"
            )
        resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate)
        buffer = ctypes.create_string_buffer(1 << 16)

        def encode(chunk: Any) -> None:
            nonlocal buffer, first
            planes = chunk.to_ndarray()
            samples = chunk.samples
            need = samples * 5 // 4 + 7200
            if len(buffer) < need:
                buffer = ctypes.create_string_buffer(need)
            left = planes[0].ctypes.data
            right = planes[1].ctypes.data if channels == 2 else left
            size = lame.lame_encode_buffer_ieee_float(
                gfp, left, right, samples, buffer, len(buffer)
            )
            if size < 0:
                raise TranscodeError(f"LAME failed with {size}")
            data = buffer.raw[:size]
            if first and size:
                first = False
                data = _provisional_info(data, channels, rate, seconds)
            sink.write(data)

        for frame in frames:
            for chunk in resampler.resample(frame):
                encode(chunk)
        for chunk in resampler.resample(None):
            encode(chunk)
        size = lame.lame_encode_flush(gfp, buffer, len(buffer))
        if size < 0:
            raise TranscodeError(f"LAME failed with {size}")
        sink.write(buffer.raw[:size])
        tag = lame.lame_get_lametag_frame(gfp, buffer, len(buffer))
        if 0 < tag <= len(buffer):
            os.pwrite(sink.fd, buffer.raw[:tag], 0)  # replaces the placeholder frame LAME put first
    finally:
        lame.lame_close(gfp)


def _provisional_info(data: bytes, channels: int, rate: int, seconds: float | None) -> bytes:
    """LAME starts the file with an empty frame it fills with the real LAME/Info tag at the end.
    Until then, put the expected frame count in it as an Info tag, so a player reading the file
    while it is still being written (pianobar's ffmpeg) knows the track's length."""
    side = 32 if channels == 2 else 17  # MPEG-1 Layer III side information
    at = 4 + side
    if (
        seconds is None
        or len(data) < at + 12
        or data[0] != 0xFF
        or data[1] & 0xE0 != 0xE0
        or any(data[4 : at + 12])
    ):
        return data
    frames = int(seconds * rate / 1152) + 2  # the encoder's delay and padding: about a frame
    tag = b"Info" + (1).to_bytes(4, "big") + frames.to_bytes(4, "big")
    return data[:at] + tag + data[at + 12 :]


@cache
def _system_lame() -> ctypes.CDLL | None:
    """The distribution's libmp3lame, if installed and recent enough (float input, LAME tag
    frame)."""
    name = ctypes.util.find_library("mp3lame")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name)
        lib.lame_encode_buffer_ieee_float  # noqa: B018  (LAME 3.99+)
        lib.lame_get_lametag_frame  # noqa: B018
    except (OSError, AttributeError):
        return None
    vp, i = ctypes.c_void_p, ctypes.c_int
    lib.lame_init.restype = vp
    lib.lame_init.argtypes = []
    for name in (
        "lame_set_in_samplerate",
        "lame_set_out_samplerate",
        "lame_set_num_channels",
        "lame_set_mode",
        "lame_set_brate",
        "lame_set_bWriteVbrTag",
    ):
        getattr(lib, name).argtypes = [vp, i]
        getattr(lib, name).restype = i
    lib.lame_init_params.argtypes = [vp]
    lib.lame_init_params.restype = i
    lib.lame_encode_buffer_ieee_float.argtypes = [vp, vp, vp, i, ctypes.c_char_p, i]
    lib.lame_encode_buffer_ieee_float.restype = i
    lib.lame_encode_flush.argtypes = [vp, ctypes.c_char_p, i]
    lib.lame_encode_flush.restype = i
    lib.lame_get_lametag_frame.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t]
    lib.lame_get_lametag_frame.restype = ctypes.c_size_t
    lib.lame_close.argtypes = [vp]
    lib.lame_close.restype = i
    return lib


def system_lame_available() -> bool:
    return _system_lame() is not None


class _Sink(io.RawIOBase):
    """Unbuffered, seekable output over a file descriptor that reports each write (readers follow
    the file)."""

    def __init__(self, fd: int, progress: Progress) -> None:
        super().__init__()
        self.fd = fd
        self.progress = progress
        self.written = 0

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        pos = os.lseek(self.fd, 0, os.SEEK_CUR)
        done = 0
        while done < len(view):
            done += os.write(self.fd, view[done:])
        self.written = max(self.written, pos + done)
        self.progress(self.written)
        return done

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return os.lseek(self.fd, offset, whence)

    def tell(self) -> int:
        return os.lseek(self.fd, 0, os.SEEK_CUR)

    def close(self) -> None:  # the caller owns the descriptor
        pass
