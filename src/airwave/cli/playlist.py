"""`airwave playlist ...`: a listener's playlists, and M3U8/XSPF files in and out."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from airwave.cli.common import DataDir, err, fail, open_services, out
from airwave.errors import ApiError

playlist_app = typer.Typer(help="Listeners' playlists; M3U8 and XSPF files.", no_args_is_help=True)

User = Annotated[str, typer.Option("--user", "-u", help="The listener whose playlists these are")]


class FileFormat(StrEnum):
    m3u8 = "m3u8"
    xspf = "xspf"


@playlist_app.command("list")
def playlist_list(user: User, data_dir: DataDir = None) -> None:
    """List a listener's playlists."""
    from sqlalchemy import select

    from airwave.core.accounts import accounts
    from airwave.store.models import Playlist

    services = open_services(data_dir)
    try:
        with services.database.read() as db:
            listener = accounts.require_listener(db, user)
            rows = list(
                db.scalars(
                    select(Playlist)
                    .where(Playlist.listener_id == listener.id)
                    .order_by(Playlist.id)
                )
            )
    except ApiError as exc:
        raise fail(exc) from None
    finally:
        services.close()
    table = Table("id", Column("name", overflow="fold"), "tracks", "minutes", "version")
    for p in rows:
        table.add_row(
            f"PL:{p.id}", p.name, str(p.total_tracks), f"{p.duration / 60:.0f}", str(p.version)
        )
    (out if sys.stdout.isatty() else Console(soft_wrap=True, width=100_000)).print(table)


@playlist_app.command("import")
def playlist_import(
    file: Annotated[Path, typer.Argument(help="An .m3u, .m3u8 or .xspf file")],
    user: User,
    name: Annotated[
        str | None, typer.Option(help="[default: the file's own title, else its name]")
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Make a playlist of the tracks a playlist file names (matched by path, MusicBrainz id or
    tags); the lines that match no track are listed."""
    from airwave.core import playlists
    from airwave.core.accounts import accounts
    from airwave.library import playlist_files

    try:
        content = file.read_bytes()[: playlist_files.MAX_BYTES + 1].decode("utf-8", "replace")
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot read {file}: {exc.strerror or exc}")
        raise typer.Exit(1) from None
    fmt = playlist_files.detect(file.name, content)
    services = open_services(data_dir)
    try:
        with services.database.write() as db:
            listener = accounts.require_listener(db, user)
            playlist, unmatched = playlists.import_file(
                db,
                listener.id,
                content,
                fmt,
                services.clock.now(),
                name=name,
                base=file.resolve().parent,
            )
            if name is None and playlist.name == "Imported playlist":
                playlist.name = file.stem[:200] or playlist.name
            made = (playlist.id, playlist.name, playlist.total_tracks)
    except ApiError as exc:
        raise fail(exc) from None
    finally:
        services.close()
    out.print(f"imported PL:{made[0]} {made[1]!r}: {made[2]} tracks, {len(unmatched)} unmatched")
    for miss in unmatched:
        err.print(f"line {miss.line}: {miss.entry}: {miss.reason}")


@playlist_app.command("export")
def playlist_export(
    playlist_id: Annotated[str, typer.Argument(help="The playlist's id (PL:n)")],
    user: User,
    format: Annotated[FileFormat, typer.Option("--format", help="m3u8 or xspf")] = FileFormat.m3u8,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Write here [default: standard output]")
    ] = None,
    relative: Annotated[
        bool, typer.Option(help="M3U8 paths relative to the --out file's folder")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Write a playlist as an M3U8 or XSPF file."""
    from airwave.core import playlists
    from airwave.core.accounts import accounts

    services = open_services(data_dir)
    try:
        with services.database.read() as db:
            listener = accounts.require_listener(db, user)
            playlist = playlists.owned(db, listener.id, playlist_id)
            base = out_file.resolve().parent if relative and out_file is not None else None
            text = playlists.export_file(db, playlist, format.value, base)
    except ApiError as exc:
        raise fail(exc) from None
    finally:
        services.close()
    if out_file is None:
        sys.stdout.write(text)
        return
    try:
        out_file.write_text(text, encoding="utf-8")
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write {out_file}: {exc.strerror or exc}")
        raise typer.Exit(1) from None
    out.print(f"wrote {out_file}")
