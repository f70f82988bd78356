"""Owner-only files: the data dir (0700), the database and the URL-signing keys (0600) hold
secrets."""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

log = logging.getLogger("airwave.store")

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create the directory (and its parents) owner-only, or tighten it if it exists; returns it."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    tighten(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create the file empty and owner-only if absent, or tighten it if it exists; returns it."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE))
    except FileExistsError:
        tighten(path, FILE_MODE)
    return path


def tighten(path: Path, allowed: int) -> None:
    """Take away the permission bits outside `allowed` from a file we own; warn about one we do
    not."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    mode = stat.S_IMODE(st.st_mode)
    if not mode & ~allowed:
        return
    if st.st_uid != os.geteuid():
        log.warning(
            "readable by other users and not ours to change",
            extra={"path": str(path), "mode": oct(mode)},
        )
        return
    os.chmod(path, mode & allowed)
    log.warning(
        "made owner-only", extra={"path": str(path), "was": oct(mode), "now": oct(mode & allowed)}
    )


def secret_key_file(path: Path, nbytes: int = 32) -> bytes:
    """A random key kept in an owner-only file, made once: written to a temporary file and linked
    into place, so servers starting together agree on the first one made."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(nbytes) + "\n")
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(temp, path)  # fails if another process made it first: theirs wins
        except FileExistsError:
            pass
        finally:
            os.unlink(temp)
    return bytes.fromhex(path.read_text().strip())
