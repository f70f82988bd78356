"""`airwave scan`: scan music folders into the catalogue, then analyse and index their sound."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from airwave.cli.common import (
    DataDir,
    err,
    out,
    progress,
    settings_from,
)
from airwave.cli.imports import loading

if TYPE_CHECKING:  # imported lazily: worker processes re-import the CLI and need none of it
    from airwave.core.services import Services


def scan(
    library: Annotated[list[Path], typer.Option("--library", help="Music folder (repeatable)")],
    full: Annotated[
        bool, typer.Option("--full", help="Re-read every file, not only new and changed ones")
    ] = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep running and rescan on changes")
    ] = False,
    workers: Annotated[
        int | None, typer.Option(help="Worker processes [default: one per core]")
    ] = None,
    analyze: Annotated[
        bool | None,
        typer.Option(
            "--analyze/--no-analyze",
            help="Compute sound profiles for stations [default: setting analyze_audio]",
        ),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Scan music folders into the catalogue, then analyse new tracks' sound (both resume when
    interrupted)."""
    with loading():
        from airwave.core.library import LibraryHeld, hold_library
        from airwave.core.services import Services

    for root in library:
        if not root.is_dir():
            err.print(f"[red]error:[/red] library folder {root} does not exist")
            raise typer.Exit(1)
    settings = settings_from(
        data_dir=data_dir, analyze_audio=analyze, analysis_workers=workers or None
    )
    services = Services.open(settings)
    terminated = _stop_on_sigterm()
    try:
        with hold_library(services):
            _scan(services, library, full=full, watch=watch, workers=workers)
    except LibraryHeld as held:
        err.print(
            f"[red]error:[/red] another process scans this instance's library: {held.holder} "
            f"holds its lease (renewed until {held.until:%H:%M:%S} UTC). A server with library "
            "folders scans them itself (at start, on a Subsonic startScan, with --watch on "
            "changes): stop it, or let the other scan end, then run this again."
        )
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(143 if terminated else 130) from None
    finally:
        services.close()


def _stop_on_sigterm() -> list[int]:
    """SIGTERM (a service manager stopping `scan --watch`, say) ends the command as Ctrl-C does:
    the scan stops between files and the library's lease is given up at once, instead of being
    held till it expires. The list returned gets the signal's number when it came."""
    came: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        came.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    return came


def _scan(
    services: Services, library: list[Path], *, full: bool, watch: bool, workers: int | None
) -> None:
    """Scan, then what follows a scan; with watch, again after every change."""
    from airwave.core.library import sync_playlists
    from airwave.library.scanner import Scanner

    while True:
        with progress("scan") as update:
            report = Scanner(
                services.database,
                now=services.clock.now,
                workers=workers or None,
                progress=update,
            ).scan(library, full=full)
        for path, message in report.errors:
            err.print(f"[yellow]skipped[/yellow] {path}: {message}")
        out.print(
            f"{report.files_seen} files in {report.seconds:.2f} s "
            f"({report.files_per_second:.0f} files/s): "
            f"{report.added} added, {report.updated} updated, {report.moved} moved, "
            f"{report.removed} removed, "
            f"{report.unchanged} unchanged, {len(report.errors)} skipped "
            f"({report.known_bad} known unreadable); "
            f"{report.tags_read} tag reads"
        )
        if report.interrupted:
            err.print("interrupted; run the same command again to finish")
            raise KeyboardInterrupt
        if synced := sync_playlists(services, list(library), report.playlist_files):
            out.print(synced)
        _index(services)
        if not watch:
            return
        from watchfiles import watch as watch_changes

        for _ in watch_changes(*[str(r) for r in library], debounce=1500):
            break


def _index(services: Services) -> None:
    """Sound analysis and the stations' similarity space after a scan, with progress and a
    summary line."""
    from airwave.core.library import refresh_similarity

    started = time.perf_counter()
    with progress("index") as update:
        report = refresh_similarity(services, progress=update)
    if report is not None and (report.analysed or report.failed):
        out.print(
            f"analysed {report.analysed} tracks in {report.seconds:.2f} s "
            f"({report.tracks_per_cpu_second:.1f} tracks per CPU-second), {report.failed} "
            "not analysable; "
            f"similarity index ready in {time.perf_counter() - started:.2f} s"
        )
    else:
        out.print(f"similarity index ready in {time.perf_counter() - started:.2f} s")
