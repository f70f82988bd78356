"""The `airwave` command: one module per command or group of commands."""

from __future__ import annotations

import atexit
import contextlib
import faulthandler
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

import importlib  # noqa: E402

from airwave.cli.imports import loading  # noqa: E402

with loading():
    import typer

HELP = "Airwave: self-hosted music streaming."

# Every command and group, in the order help lists them: (module of airwave.cli, its attribute,
# a group of commands). A command loads its own module alone: the others (and Typer reading
# every command's signature) cost a command such as `airwave scan` some 50 ms each run.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "version": ("serve", "version", False),
    "serve": ("serve", "serve", False),
    "scan": ("scan", "scan", False),
    "demo": ("demo", "demo", False),
    "docs": ("docs", "docs", False),
    "backup": ("backup", "backup", False),
    "restore": ("backup", "restore", False),
    "user": ("user", "user_app", True),
    "cache": ("cache", "cache_app", True),
    "secret": ("secret", "secret_app", True),
    "export": ("export", "export_app", True),
    "ads": ("ads", "ads_app", True),
    "playlist": ("playlist", "playlist_app", True),
}


def build(only: str | None = None) -> typer.Typer:
    """The command line: every command, or the one named with only (still a group, so that its
    usage and help read `airwave NAME`)."""
    built = typer.Typer(help=HELP, no_args_is_help=True, add_completion=False)
    if only is not None:

        @built.callback()
        def _group() -> None:
            pass

    for name, (module, attribute, group) in COMMANDS.items():
        if only is not None and name != only:
            continue
        with loading():  # the command line's own modules
            target = getattr(importlib.import_module(f"airwave.cli.{module}"), attribute)
        if group:
            built.add_typer(target, name=name)
        else:
            built.command(name)(target)
    _unwrap_help(built)
    return built


def _unwrap_help(typer_app: typer.Typer) -> None:
    """Help texts from docstrings with the source's line wrapping undone (Rich wraps them anew)."""
    for info in typer_app.registered_commands:
        doc = inspect.getdoc(info.callback) if info.help is None and info.callback else None
        if doc:
            info.help = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _unwrap_help(group.typer_instance)


def __getattr__(name: str) -> typer.Typer:
    """`app`, the whole command line, made on first use (tests invoke it in-process)."""
    if name == "app":
        globals()["app"] = made = build()
        return made
    raise AttributeError(name)


def main() -> None:
    """The `airwave` command: runs one command, then exits without the interpreter's teardown."""
    global _exit_code
    # a crash in native code (a C extension, a driver) or a SIGABRT leaves every thread's Python
    # stack on stderr instead of a bare "Segmentation fault"
    with contextlib.suppress(AttributeError, ValueError, OSError):  # no usable stderr
        faulthandler.enable()
    try:
        name = sys.argv[1] if len(sys.argv) > 1 else None
        build(name if name in COMMANDS else None)(prog_name="airwave")
        _exit_code = 0
    except SystemExit as exc:
        code = exc.code
        _exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        raise
    except BaseException:
        _exit_code = 1
        raise


__all__ = ["app", "main"]
