"""How Airwave starts helper processes (transcodes, tag readers, sound analysers).

One forkserver per server process, started early with the heavy modules the helpers need already
imported, so that a helper costs a fork rather than a new interpreter importing PyAV and numpy
(about half a second of CPU each). A process that has no other threads yet (the CLI) forks
directly. Every module named in PRELOAD must stay free of database and web imports.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.forkserver
import os
import threading
from functools import cache
from multiprocessing.context import BaseContext

PRELOAD = ["airwave.audio.transcode", "airwave.library.workers", "av", "numpy", "mutagen"]


@cache
def _forkserver() -> BaseContext | None:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return None
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def helper_context() -> BaseContext:
    """The context for helpers of a threaded process: the warm forkserver, else spawn."""
    return _forkserver() or multiprocessing.get_context("spawn")


# Threads that take `fork_guard` around all their work (the library lease's renewal in
# `airwave scan`), and forks made while holding it: such a thread never holds another lock
# when a pool forks, so it does not make forking unsafe.
fork_guard = threading.Lock()
_fork_safe: set[int] = set()


def declare_fork_safe(thread: threading.Thread, safe: bool = True) -> None:
    """Declare a started thread one that does all its work under `fork_guard` (or, with
    safe=False, forget it)."""
    if thread.ident is not None:
        (_fork_safe.add if safe else _fork_safe.discard)(thread.ident)


def pool_context() -> BaseContext:
    """fork in a process with no other threads than fork-safe ones (instant, and safe there);
    the helper context otherwise."""
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    if "fork" in multiprocessing.get_all_start_methods() and all(
        t.ident in _fork_safe for t in others
    ):
        return multiprocessing.get_context("fork")
    return helper_context()


def release_forkserver() -> None:
    """In a helper that starts no processes of its own: let go of the forkserver.

    Each child of a forkserver gets the write end of the pipe by which the forkserver learns that
    its owner has gone, so that it stays up for any child that might ask it for processes; it ends
    once every copy is closed. A pool worker kept its copy open and lived on, waiting for work
    that would never come, until the forkserver, its parent, ended, which it did not: when a
    server died with its pool running (a kill, or all its processes told to stop at once), the
    forkserver and the pool's workers stayed behind, orphaned, for good."""
    server = multiprocessing.forkserver._forkserver  # type: ignore[attr-defined]
    fd = getattr(server, "_forkserver_alive_fd", None)
    if fd is not None and getattr(server, "_forkserver_pid", None) is None:  # not its owner
        server._forkserver_alive_fd = None
        with contextlib.suppress(OSError):
            os.close(fd)


def warm_up() -> None:
    """Start the forkserver now (blocking, ~0.3 s) so that the first helper does not wait for
    it."""
    if _forkserver() is not None:
        multiprocessing.forkserver.ensure_running()
