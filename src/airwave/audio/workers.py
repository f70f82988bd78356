"""Transcodes run in child processes forked from a warm forkserver (PyAV already imported).

A child shares no GIL with the server's event loop, a decoder that crashes on a damaged file takes
only the child down, and a transcode nobody listens to any more is stopped by ending its process.
The child writes the part file it is given, reports progress over a pipe, fsyncs and exits 0; the
parent publishes the result. When the server dies the child's next progress report fails and it
exits.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import struct
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from airwave import processes
from airwave.audio.formats import Profile

_NOTIFY_BYTES = 16 * 1024  # the child reports progress at most once per this much output
_ERROR = b"E"
_NO_SPACE = b"S"  # an error for want of disk space: the parent tells the client to retry later


warm_up = processes.warm_up


@dataclass
class Outcome:
    ok: bool
    error: str = ""
    no_space: bool = False


class Worker:
    """One transcode in a child process; `finished()` waits for it, `stop()` ends it."""

    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn

    @classmethod
    def start(cls, source: str, part: str, profile: Profile, system_lame: bool) -> Worker:
        """Fork the child (blocking for a few milliseconds: call from a worker thread)."""
        context = processes.helper_context()
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(
            target=_child,
            args=(source, part, profile, system_lame, writer),
            name="airwave-transcode",
            daemon=True,
        )
        process.start()
        writer.close()
        return cls(process, reader)

    async def finished(self, progress: Callable[[], None]) -> Outcome:
        """Wait for the child to end, calling progress() whenever it reports output."""
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()
        error = ""
        no_space = False
        fd = self.conn.fileno()

        def readable() -> None:
            nonlocal error, no_space
            try:
                message = self.conn.recv_bytes()
            except (EOFError, OSError):
                loop.remove_reader(fd)
                if not ended.done():
                    ended.set_result(None)
                return
            if message.startswith((_ERROR, _NO_SPACE)):
                error = message[1:].decode("utf-8", "replace")
                no_space = message.startswith(_NO_SPACE)
            else:
                progress()

        loop.add_reader(fd, readable)
        try:
            await ended
        finally:
            loop.remove_reader(fd)
            self.conn.close()
        await loop.run_in_executor(None, self.process.join)
        code = self.process.exitcode
        if code == 0:
            return Outcome(True)
        if not error:
            error = (
                "the transcoding process ended with "
                f"{'signal ' + str(-code) if code and code < 0 else code}"
            )
        return Outcome(False, error, no_space)

    def stop(self) -> None:
        """End the child now (its part file is the caller's to delete)."""
        if self.process.is_alive():
            self.process.kill()


def _child(source: str, part: str, profile: Profile, system_lame: bool, conn: Connection) -> None:
    """In the child: transcode into `part`, fsync, exit 0; or report the error and exit 1."""
    from airwave.audio.transcode import TranscodeError, transcode

    processes.release_forkserver()
    signal.signal(
        signal.SIGINT, signal.SIG_IGN
    )  # Ctrl-C reaches the whole group: the server decides
    reported = 0

    def progress(written: int) -> None:
        nonlocal reported
        if written - reported >= _NOTIFY_BYTES or reported == 0:
            reported = written
            conn.send_bytes(
                struct.pack("<q", written)
            )  # BrokenPipeError when the server is gone: we stop

    fd = os.open(part, os.O_WRONLY | os.O_CLOEXEC)
    try:
        transcode(source, fd, profile, progress, system_lame=system_lame)
        os.fsync(fd)
    except BrokenPipeError:
        os._exit(2)
    except Exception as exc:  # TranscodeError, or a failure nobody foresaw: the server logs it
        message = str(exc) if isinstance(exc, TranscodeError) else f"{type(exc).__name__}: {exc}"
        kind = _NO_SPACE if _for_want_of_space(exc) else _ERROR
        if kind == _NO_SPACE:
            message = f"no space left on the device for the transcode ({message})"
        conn.send_bytes(kind + message.encode("utf-8", "replace")[:2000])
        os._exit(1)
    finally:
        os.close(fd)
    conn.close()


def _for_want_of_space(exc: BaseException | None) -> bool:
    """Whether a failure (or its cause: PyAV wraps the sink's OSError) is a full disk or quota."""
    seen = 0
    while exc is not None and seen < 8:
        if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False
