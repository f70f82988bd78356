"""`airwave export ...`: data for the operator (the play log)."""

from __future__ import annotations

import sys
from datetime import UTC
from pathlib import Path
from typing import Annotated

import typer

from airwave.cli.common import (
    DataDir,
    err,
    instant,
    open_services,
)

export_app = typer.Typer(help="Export data for the operator.", no_args_is_help=True)


@export_app.command("plays")
def export_plays(
    since: Annotated[
        str, typer.Option("--since", help="First day or time (YYYY-MM-DD or ISO 8601; UTC)")
    ],
    until: Annotated[
        str | None, typer.Option("--until", help="End, exclusive [default: now]")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="csv or json")] = "csv",
    out_file: Annotated[
        Path | None, typer.Option("--out", help="File to write [default: stdout]")
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Write the play log for royalty reporting: track, artist, album, ISRC, MusicBrainz id,
    listener,
    station, start time, seconds played, completed/skipped."""
    from datetime import datetime

    from airwave.core import plays

    if fmt not in ("csv", "json"):
        err.print(f"[red]error:[/red] --format must be csv or json, not {fmt!r}")
        raise typer.Exit(2)
    start = instant(since, "--since")
    end = instant(until, "--until") if until else datetime.now(UTC)
    services = open_services(data_dir)
    try:
        with services.database.read() as db:
            rows = plays.play_log(db, start, end)
            if out_file is None:
                count = plays.write_export(rows, sys.stdout, fmt)  # type: ignore[arg-type]
            else:
                with open(out_file, "w", encoding="utf-8", newline="") as handle:
                    count = plays.write_export(rows, handle, fmt)  # type: ignore[arg-type]
        err.print(
            f"exported {count} plays from {start.isoformat()} to {end.isoformat()}"
            + (f" into {out_file}" if out_file else "")
        )
    finally:
        services.close()
