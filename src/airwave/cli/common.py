"""Shared by the commands: console output, settings, opening the instance, progress bars."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer
from pydantic import ValidationError

from airwave.config import Settings, load_settings
from airwave.errors import ApiError

if TYPE_CHECKING:  # imported lazily: worker processes re-import the CLI and need none of it,
    # and `serve` prints with print() (rich costs ~0.07 s of its start)
    from datetime import datetime

    from rich.console import Console

    from airwave.core.services import Services


class _Console:
    """A rich Console made on first use: it reads the environment (COLUMNS, NO_COLOR,
    FORCE_COLOR) and the stream it writes to then, not when the module was imported."""

    def __init__(self, **options: bool) -> None:
        self._options = options
        self._console: Console | None = None

    def __getattr__(self, name: str) -> object:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return getattr(self._console, name)


out = cast("Console", _Console(soft_wrap=True))
err = cast("Console", _Console(stderr=True, soft_wrap=True))


DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Instance data directory [default: $AIRWAVE_DATA_DIR or a per-user directory]",
    ),
]


ConfigFile = Annotated[Path | None, typer.Option("--config", help="TOML settings file")]


def settings_from(**overrides: object) -> Settings:
    try:
        return load_settings(**overrides)
    except (ValidationError, ValueError) as exc:
        err.print(f"[red]Invalid settings:[/red] {exc}")
        raise typer.Exit(2) from None


def open_services(data_dir: Path | None, config: Path | None = None) -> Services:
    from airwave.core.services import Services

    return Services.open(settings_from(data_dir=data_dir, config_file=config))


def fail(exc: ApiError) -> typer.Exit:
    err.print(f"[red]error:[/red] {exc.message}")
    return typer.Exit(1)


def read_password(from_stdin: bool, confirm: bool = True) -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=confirm)
    if not password:
        err.print("[red]error:[/red] the password is empty")
        raise typer.Exit(1)
    return password


@contextmanager
def progress(label: str) -> Iterator[Callable[[str, int, int], None]]:
    """A Rich progress bar fed by (stage, done, total) callbacks; quiet when not on a terminal."""
    if not err.is_terminal:  # nothing to draw: not even its module is loaded
        yield lambda stage, done, total: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task(label, total=None)

        def update(stage: str, done: int, total: int) -> None:
            progress.update(
                task, description=f"{label}: {stage}", completed=done, total=total or None
            )

        yield update


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def instant(text: str, option: str) -> datetime:
    from datetime import datetime

    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        err.print(
            f"[red]error:[/red] {option} {text!r} is not a date (YYYY-MM-DD) or an ISO 8601 time"
        )
        raise typer.Exit(2) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
