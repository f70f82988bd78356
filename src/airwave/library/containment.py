"""Library file containment: regular files under a size cap whose real path is in a library root.

A symlink in the library may point anywhere; the scanner and the server follow it only when its
target resolves inside a configured root (a shared covers folder, a root that is itself a link).
Anything else (a target outside, a FIFO or device, an over-size sidecar) is refused with `Refused`,
an OSError, so code that already treats unreadable files as absent keeps doing so.
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Iterable
from typing import BinaryIO

AUDIO_MAX_BYTES: int | None = None  # audio: any size, but a regular file
LYRICS_MAX_BYTES = 1 << 20  # .lrc / .txt sidecars
IMAGE_MAX_BYTES = 32 << 20  # cover.jpg, artist.png, ...

_PROC_FD = "/proc/self/fd"


class Refused(OSError):
    """A library file that must not be read: outside every root, not a regular file, too large."""


def _inside(real: str, directory: str) -> bool:
    return real == directory or real.startswith(directory.rstrip(os.sep) + os.sep)


class Roots:
    """Where library files may really live: the resolved library roots, minus the denied folders.

    With no roots at all (a catalogue made by `airwave scan` served without `library_dirs`), any
    real path is allowed except inside the denied folders (the data directory: keys, database).
    """

    def __init__(
        self, roots: Iterable[str | os.PathLike[str]], deny: Iterable[str | os.PathLike[str]] = ()
    ) -> None:
        self.real = tuple(dict.fromkeys(os.path.realpath(r) for r in roots))
        self.deny = tuple(os.path.realpath(d) for d in deny)

    def allows(self, real: str) -> bool:
        """Whether an already resolved path may be read."""
        if any(_inside(real, r) for r in self.real):
            return True
        return not self.real and not any(_inside(real, d) for d in self.deny)

    def __repr__(self) -> str:
        return f"Roots({list(self.real)!r}, deny={list(self.deny)!r})"


def _describe(st: os.stat_result) -> str:
    mode = st.st_mode
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def judge(st: os.stat_result, real: str, roots: Roots, limit: int | None) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"not a regular file ({_describe(st)})")
    if limit is not None and st.st_size > limit:
        raise Refused(f"too large: {st.st_size} bytes, the limit for this kind of file is {limit}")
    if not roots.allows(real):
        raise Refused(f"resolves outside the library (to {real})")


def check(path: str | os.PathLike[str], roots: Roots, limit: int | None) -> os.stat_result:
    """Stat (following links) and judge a path without opening it; raises Refused or OSError."""
    st = os.stat(path)
    judge(st, os.path.realpath(path), roots, limit)
    return st


def open_fd(path: str | os.PathLike[str], roots: Roots, limit: int | None) -> int:
    """Open for reading and judge the file actually opened (race-free where /proc exists)."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
    fd = os.open(
        path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    )
    try:
        st = os.fstat(fd)
        try:
            real = os.readlink(f"{_PROC_FD}/{fd}")
        except OSError:  # no /proc: resolve the name, and make sure it still names the opened file
            real = os.path.realpath(path)
            again = os.stat(real)
            if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
                raise Refused("the file changed while it was being opened") from None
        judge(st, real, roots, limit)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(path: str | os.PathLike[str], roots: Roots, limit: int | None) -> BinaryIO:
    """A binary file object (named `path`, as mutagen wants) on a judged file."""
    return open(path, "rb", opener=lambda p, _flags: open_fd(p, roots, limit))


def read_bytes(path: str | os.PathLike[str], roots: Roots, limit: int) -> bytes:
    """The whole content of a judged file, never more than `limit` bytes even if it grows."""
    with open_file(path, roots, limit) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"too large: over {limit} bytes, the limit for this kind of file")
    return data


# -------------------------------------------------------- worker processes die with their parent

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Pool initializer: end this worker when the process that started it dies (even by SIGKILL).

    The parent is the process that forked this one: the pool's owner, or the forkserver, which
    itself ends when its owner does. Linux delivers SIGKILL through prctl(PR_SET_PDEATHSIG);
    everywhere, a daemon thread also watches the parent pid, which changes when the worker is
    re-parented.
    """
    parent_pid = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)  # the loaded C library, without ldconfig
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    threading.Thread(
        target=_watch_parent, args=(parent_pid,), name="parent-watch", daemon=True
    ).start()


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent_pid:
            os._exit(1)
