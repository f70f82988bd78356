"""The `airwave` command: one module per command or group of commands."""

from __future__ import annotations

import atexit
import inspect
import os
import sys

_exit_code: int | None = None


def _skip_teardown() -> None:
    """Registered before any other exit handler, so it runs after all of them: by then every
    command has committed and closed what it wrote, and the interpreter's own teardown (freeing
    hundreds of modules, up to a second of CPU on a busy machine) only delays the exit a
    service manager or a shell is waiting for."""
    if _exit_code is None:  # not run as the `airwave` command (imported by other code)
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(_exit_code)


atexit.register(_skip_teardown)

from airwave.cli.imports import loading  # noqa: E402

with loading():  # the command line's own modules
    import typer

    from airwave.cli import (
        ads,
        backup,
        cache,
        demo,
        docs,
        export,
        playlist,
        scan,
        secret,
        serve,
        user,
    )

app = typer.Typer(
    help="Airwave: self-hosted music streaming.", no_args_is_help=True, add_completion=False
)
for command in (
    serve.version,
    serve.serve,
    scan.scan,
    demo.demo,
    docs.docs,
    backup.backup,
    backup.restore,
):
    app.command()(command)
app.add_typer(user.user_app, name="user")
app.add_typer(cache.cache_app, name="cache")
app.add_typer(secret.secret_app, name="secret")
app.add_typer(export.export_app, name="export")
app.add_typer(ads.ads_app, name="ads")
app.add_typer(playlist.playlist_app, name="playlist")


def _unwrap_help(typer_app: typer.Typer) -> None:
    """Help texts from docstrings with the source's line wrapping undone (Rich wraps them anew)."""
    for info in typer_app.registered_commands:
        doc = inspect.getdoc(info.callback) if info.help is None and info.callback else None
        if doc:
            info.help = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _unwrap_help(group.typer_instance)


_unwrap_help(app)


def main() -> None:
    """The `airwave` command: runs one command, then exits without the interpreter's teardown."""
    global _exit_code
    try:
        app(prog_name="airwave")
        _exit_code = 0
    except SystemExit as exc:
        code = exc.code
        _exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        raise
    except BaseException:
        _exit_code = 1
        raise


__all__ = ["app", "main"]
