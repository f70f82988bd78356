"""`airwave serve` and `airwave version`: run the server (with the demo library and account on
--demo)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from airwave import __version__
from airwave.cli.common import (
    ConfigFile,
    DataDir,
    err,
    out,
    progress,
    settings_from,
)
from airwave.cli.imports import loading

DEMO_USER, DEMO_PASSWORD = "demo", "demo"


def version() -> None:
    """Print the version."""
    out.print(__version__)


def serve(
    host: Annotated[
        str | None, typer.Option(help="Address to listen on [default: 127.0.0.1]")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="Port (0 picks a free one) [default: 4533]")
    ] = None,
    data_dir: DataDir = None,
    config: ConfigFile = None,
    demo: Annotated[bool, typer.Option("--demo", help="Create the demo account demo/demo")] = False,
    tls_cert: Annotated[Path | None, typer.Option(help="PEM certificate: serve HTTPS")] = None,
    tls_key: Annotated[Path | None, typer.Option(help="PEM private key for --tls-cert")] = None,
    plain_port: Annotated[
        int | None,
        typer.Option(help="With TLS, also plain HTTP on this port (for tuner clients)"),
    ] = None,
    open_registration: Annotated[
        bool | None,
        typer.Option("--open-registration/--closed-registration", help="Allow listener/register"),
    ] = None,
    readonly: Annotated[
        bool | None, typer.Option("--readonly/--writable", help="Maintenance mode")
    ] = None,
    log_format: Annotated[str | None, typer.Option(help="json or text")] = None,
    library: Annotated[
        list[Path] | None, typer.Option("--library", help="Music folder (repeatable)")
    ] = None,
    watch: Annotated[
        bool | None, typer.Option("--watch/--no-watch", help="Rescan on file changes")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Server processes sharing the port [default: one per CPU core]"),
    ] = None,
) -> None:
    """Run the server until SIGTERM or Ctrl-C; scans the library in the background."""
    with loading():
        from airwave import logs, server
        from airwave.core.library import Library
        from airwave.core.services import Services

    settings = settings_from(
        host=host,
        port=port,
        data_dir=data_dir,
        config_file=config,
        tls_cert=tls_cert,
        tls_key=tls_key,
        plain_port=plain_port,
        open_registration=open_registration,
        readonly_mode=readonly,
        log_format=log_format,
        library_dirs=library or None,
        watch_library=watch,
        workers=workers,
    )
    if demo and "radio_rules" not in settings.model_fields_set:
        # 12 artists of 16-second tracks: the strict 3-hour windows would end a station in minutes
        settings = settings.model_copy(update={"radio_rules": "relaxed"})
    logs.configure(settings.log_level, settings.log_format)
    services = Services.open(settings)
    roots = list(settings.library_dirs)
    if demo:
        from airwave.core.accounts import credentials

        credentials.ensure_account(services, DEMO_USER, DEMO_PASSWORD, tier="premium")
        roots.append(_ensure_demo_library(settings.data_dir / "demo-library"))
    for root in roots:
        if not root.is_dir():
            err.print(f"[red]error:[/red] library folder {root} does not exist")
            raise typer.Exit(1)

    def announce(url: str) -> None:
        print(f"Airwave {__version__} listening on {url}", flush=True)
        print(f"Data directory: {settings.data_dir}", flush=True)
        if demo:
            print(f"Log in as username '{DEMO_USER}', password '{DEMO_PASSWORD}'", flush=True)
        print("Press Ctrl-C to stop.", flush=True)

    try:
        server.run(services, announce, Library(services, roots) if roots else None)
    except (OSError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None


def _ensure_demo_library(root: Path) -> Path:
    """Generate the demo library once (a marker file says it is complete)."""
    marker = root / ".airwave-demo-complete"
    if marker.exists():
        return root
    from airwave.library import demo

    err.print("Building the demo library (first start only)...")
    with progress("demo library") as update:
        summary = demo.generate(root, progress=lambda done, total: update("writing", done, total))
    marker.write_text(f"{summary.tracks} tracks\n")
    err.print(
        f"Demo library: {summary.artists} artists, {summary.albums} albums, {summary.tracks} tracks"
    )
    return root
