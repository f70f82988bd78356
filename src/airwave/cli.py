"""The `airwave` command: serve, user, ads, docs, backup, restore."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Column, Table

from airwave import __version__
from airwave.config import TIERS, Settings, load_settings
from airwave.errors import ApiError

if TYPE_CHECKING:  # imported lazily: worker processes re-import this module and need none of it
    from datetime import datetime

    from airwave.core.services import Services

app = typer.Typer(
    help="Airwave: self-hosted music streaming.", no_args_is_help=True, add_completion=False
)
user_app = typer.Typer(help="Manage listener accounts.", no_args_is_help=True)
app.add_typer(user_app, name="user")

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Instance data directory [default: $AIRWAVE_DATA_DIR or a per-user directory]",
    ),
]
ConfigFile = Annotated[Path | None, typer.Option("--config", help="TOML settings file")]
DEMO_USER, DEMO_PASSWORD = "demo", "demo"


def _settings(**overrides: object) -> Settings:
    try:
        return load_settings(**overrides)
    except (ValidationError, ValueError) as exc:
        err.print(f"[red]Invalid settings:[/red] {exc}")
        raise typer.Exit(2) from None


def _open(data_dir: Path | None, config: Path | None = None) -> Services:
    from airwave.core.services import Services

    return Services.open(_settings(data_dir=data_dir, config_file=config))


def _fail(exc: ApiError) -> typer.Exit:
    err.print(f"[red]error:[/red] {exc.message}")
    return typer.Exit(1)


def _read_password(from_stdin: bool, confirm: bool = True) -> str:
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=confirm)
    if not password:
        err.print("[red]error:[/red] the password is empty")
        raise typer.Exit(1)
    return password


@app.command()
def version() -> None:
    """Print the version."""
    out.print(__version__)


@app.command()
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
) -> None:
    """Run the server until SIGTERM or Ctrl-C; scans the library in the background."""
    from airwave import logs, server
    from airwave.core.catalog.library import Library
    from airwave.core.services import Services

    settings = _settings(
        host=host,
        port=port,
        data_dir=data_dir,
        config_file=config,
        tls_cert=tls_cert,
        tls_key=tls_key,
        open_registration=open_registration,
        readonly_mode=readonly,
        log_format=log_format,
        library_dirs=library or None,
        watch_library=watch,
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
    with _bar("demo library") as update:
        summary = demo.generate(root, progress=lambda done, total: update("writing", done, total))
    marker.write_text(f"{summary.tracks} tracks\n")
    err.print(
        f"Demo library: {summary.artists} artists, {summary.albums} albums, {summary.tracks} tracks"
    )
    return root


@contextmanager
def _bar(label: str) -> Iterator[Callable[[str, int, int], None]]:
    """A Rich progress bar fed by (stage, done, total) callbacks; quiet when not on a terminal."""
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
        disable=not err.is_terminal,
    ) as progress:
        task = progress.add_task(label, total=None)

        def update(stage: str, done: int, total: int) -> None:
            progress.update(
                task, description=f"{label}: {stage}", completed=done, total=total or None
            )

        yield update


@app.command()
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
    """Scan music folders into the catalogue, then analyse new tracks' sound (both resume when interrupted)."""
    from airwave.core.services import Services
    from airwave.library.scanner import Scanner

    for root in library:
        if not root.is_dir():
            err.print(f"[red]error:[/red] library folder {root} does not exist")
            raise typer.Exit(1)
    settings = _settings(data_dir=data_dir, analyze_audio=analyze, analysis_workers=workers or None)
    services = Services.open(settings)
    try:
        while True:
            with _bar("scan") as update:
                report = Scanner(
                    services.database,
                    now=services.clock.now,
                    workers=workers or None,
                    progress=update,
                ).scan(library, full=full)
            for path, message in report.errors:
                err.print(f"[yellow]skipped[/yellow] {path}: {message}")
            out.print(
                f"{report.files_seen} files in {report.seconds:.2f} s ({report.files_per_second:.0f} files/s): "
                f"{report.added} added, {report.updated} updated, {report.moved} moved, {report.removed} removed, "
                f"{report.unchanged} unchanged, {len(report.errors)} skipped ({report.known_bad} known unreadable); "
                f"{report.tags_read} tag reads"
            )
            if report.interrupted:
                err.print("interrupted; run the same command again to finish")
                raise typer.Exit(130)
            _index(services)
            if not watch:
                return
            from watchfiles import watch as watch_changes

            for _ in watch_changes(*[str(r) for r in library], debounce=1500):
                break
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    finally:
        services.close()


def _index(services: Services) -> None:
    """Sound analysis and the stations' similarity space after a scan, with progress and a summary line."""
    from airwave.core.catalog.library import refresh_similarity

    started = time.perf_counter()
    with _bar("index") as update:
        report = refresh_similarity(services, progress=update)
    if report is not None and (report.analysed or report.failed):
        out.print(
            f"analysed {report.analysed} tracks in {report.seconds:.2f} s "
            f"({report.tracks_per_cpu_second:.1f} tracks per CPU-second), {report.failed} not analysable; "
            f"similarity index ready in {time.perf_counter() - started:.2f} s"
        )
    else:
        out.print(f"similarity index ready in {time.perf_counter() - started:.2f} s")


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the demo library into")],
    seed: Annotated[
        int, typer.Option(help="Random seed: the same seed makes the same library")
    ] = 7,
) -> None:
    """Generate the demo music library (synthesised audio, real tags, art and lyrics; offline)."""
    from airwave.library import demo as demo_library

    with _bar("demo library") as update:
        summary = demo_library.generate(
            out_dir, seed=seed, progress=lambda d, t: update("writing", d, t)
        )
    out.print(
        f"wrote {summary.tracks} tracks by {summary.artists} artists on {summary.albums} albums "
        f"({', '.join(summary.genres)}) to {summary.root}"
    )


@user_app.command("add")
def user_add(
    name: str,
    tier: Annotated[
        str | None,
        typer.Option(help=f"One of {', '.join(TIERS)} [default: the configured default]"),
    ] = None,
    admin: Annotated[bool, typer.Option("--admin", help="Make an administrator")] = False,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from stdin")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Create a listener account."""
    from airwave.core.accounts import accounts

    password = _read_password(password_stdin)
    services = _open(data_dir)
    try:
        now = services.clock.now()
        checked = accounts.check_new_listener(
            services.settings,
            now,
            accounts.NewListener(name, password, tier=tier, is_admin=admin),
            enforce_strength=False,
        )
        with services.database.write() as db:
            listener = accounts.create_listener(db, now, checked)
            out.print(
                f"created listener {listener.username} (id {listener.id}, tier {listener.tier}"
                f"{', admin' if admin else ''})"
            )
    except ApiError as exc:
        raise _fail(exc) from None
    finally:
        services.close()


class ListFormat(StrEnum):
    table = "table"
    json = "json"


@user_app.command("list")
def user_list(
    data_dir: DataDir = None,
    format: Annotated[
        ListFormat, typer.Option("--format", help="table, or json for scripts")
    ] = ListFormat.table,
) -> None:
    """List listener accounts."""
    from airwave.core.accounts import accounts

    services = _open(data_dir)
    try:
        with services.database.read() as db:
            rows = accounts.list_listeners(db)
    finally:
        services.close()
    if format is ListFormat.json:
        sys.stdout.write(
            json.dumps(
                [
                    {
                        "id": r.id,
                        "username": r.username,
                        "tier": r.tier,
                        "admin": r.is_admin,
                        "disabled": r.disabled,
                        "anonymous": r.is_anonymous,
                        "createdAt": r.created_at.isoformat(),
                        "lastLoginAt": r.last_login_at.isoformat() if r.last_login_at else None,
                    }
                    for r in rows
                ],
                indent=2,
            )
            + "\n"
        )
        return
    # A narrow terminal wraps names, never cuts them.
    table = Table(
        "id",
        Column("username", overflow="fold"),
        "tier",
        "admin",
        "status",
        "created",
        "last login",
    )
    for r in rows:
        table.add_row(
            str(r.id),
            r.username,
            r.tier,
            "yes" if r.is_admin else "",
            "disabled" if r.disabled else "active",
            r.created_at.strftime("%Y-%m-%d %H:%M"),
            r.last_login_at.strftime("%Y-%m-%d %H:%M") if r.last_login_at else "never",
        )
    # Into a pipe or file, whole values on one line each, whatever COLUMNS says.
    (out if sys.stdout.isatty() else Console(soft_wrap=True, width=100_000)).print(table)


def _change(data_dir: Path | None, name: str, action: str, change) -> None:  # noqa: ANN001
    from airwave.core.accounts import accounts

    services = _open(data_dir)
    try:
        with services.database.write() as db:
            listener = accounts.require_listener(db, name)
            change(db, listener)
        out.print(f"{action} {name}")
    except ApiError as exc:
        raise _fail(exc) from None
    finally:
        services.close()


@user_app.command("passwd")
def user_passwd(
    name: str,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Read the password from stdin")
    ] = False,
    data_dir: DataDir = None,
) -> None:
    """Set a listener's password: their sessions end and outstanding reset links stop working."""
    from airwave.core.accounts import credentials

    password = _read_password(password_stdin)
    services = _open(data_dir)
    try:
        credentials.set_password(services, name, password)
        out.print(f"changed the password of {name}")
    except ApiError as exc:
        raise _fail(exc) from None
    finally:
        services.close()


@user_app.command("disable")
def user_disable(name: str, data_dir: DataDir = None) -> None:
    """Suspend an account: its calls answer LISTENER_SUSPENDED."""
    from airwave.core.accounts import accounts

    _change(data_dir, name, "disabled", lambda db, who: accounts.set_disabled(db, who, True))


@user_app.command("enable")
def user_enable(name: str, data_dir: DataDir = None) -> None:
    """Lift a suspension."""
    from airwave.core.accounts import accounts

    _change(data_dir, name, "enabled", lambda db, who: accounts.set_disabled(db, who, False))


@user_app.command("tier")
def user_tier(name: str, tier: str, data_dir: DataDir = None) -> None:
    """Set a listener's tier (free, plus or premium)."""
    from airwave.core.accounts import accounts

    _change(data_dir, name, f"set tier {tier} for", lambda db, who: accounts.set_tier(who, tier))


@user_app.command("delete")
def user_delete(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation")] = False,
    data_dir: DataDir = None,
) -> None:
    """Delete an account and everything of theirs."""
    from airwave.core.accounts import accounts

    if not yes and not typer.confirm(f"Delete listener {name} and all their data?"):
        raise typer.Exit(1)
    _change(data_dir, name, "deleted", accounts.delete_listener)


cache_app = typer.Typer(
    help="The transcode cache: `airwave cache` shows it, `airwave cache clear` empties it.",
    invoke_without_command=True,
)
secret_app = typer.Typer(
    help="The key that signs audio, receipt and skip URLs.", no_args_is_help=True
)
export_app = typer.Typer(help="Export data for the operator.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")
app.add_typer(secret_app, name="secret")
app.add_typer(export_app, name="export")


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


@cache_app.callback()
def cache_show(ctx: typer.Context, data_dir: DataDir = None) -> None:
    """Show where the transcode cache is, its entries, size and bound."""
    if ctx.invoked_subcommand is not None:
        return
    from airwave.audio import cache

    stats = cache.for_settings(_settings(data_dir=data_dir)).stats()
    out.print(
        f"transcode cache {stats.root}: {stats.entries} entries, {_bytes(stats.bytes)} of "
        f"{_bytes(stats.limit)} (transcode_cache_mb); {stats.in_progress} being written"
    )
    if stats.leftovers:
        out.print(
            f"{stats.leftovers} partial transcodes left by a stopped server "
            "(deleted by `airwave cache clear` or at the next start)"
        )


@cache_app.command("clear")
def cache_clear(data_dir: DataDir = None) -> None:
    """Delete every cached transcode (running transcodes finish; listeners mid-stream are unaffected)."""
    from airwave.audio import cache

    entries, size = cache.for_settings(_settings(data_dir=data_dir)).clear()
    out.print(f"deleted {entries} entries ({_bytes(size)})")


@secret_app.command("rotate")
def secret_rotate(data_dir: DataDir = None) -> None:
    """Sign URLs with a fresh key; the previous key still verifies for url_key_grace seconds."""
    from datetime import datetime, timedelta

    from airwave.audio.signing import UrlSigner

    settings = _settings(data_dir=data_dir)
    now = datetime.now(UTC)
    key = UrlSigner.open(settings.data_dir, grace_seconds=settings.url_key_grace).rotate(now)
    until = now + timedelta(seconds=settings.url_key_grace)
    out.print(
        f"signing with key {key.id}; URLs signed before verify until {until:%Y-%m-%d %H:%M} UTC"
    )


@secret_app.command("list")
def secret_list(data_dir: DataDir = None) -> None:
    """List the URL-signing keys (never their secrets)."""
    from datetime import timedelta

    from airwave.audio.signing import UrlSigner

    settings = _settings(data_dir=data_dir)
    signer = UrlSigner.open(settings.data_dir, grace_seconds=settings.url_key_grace)
    table = Table("key", "created", "state")
    for key in signer.keys():
        state = (
            "signing"
            if key.retired_at is None
            else f"verifies until {key.retired_at + timedelta(seconds=settings.url_key_grace):%Y-%m-%d %H:%M} UTC"
        )
        table.add_row(str(key.id), f"{key.created_at:%Y-%m-%d %H:%M} UTC", state)
    out.print(table)


def _instant(text: str, option: str) -> datetime:
    from datetime import datetime

    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        err.print(
            f"[red]error:[/red] {option} {text!r} is not a date (YYYY-MM-DD) or an ISO 8601 time"
        )
        raise typer.Exit(2) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


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
    """Write the play log for royalty reporting: track, artist, album, ISRC, MusicBrainz id, listener,
    station, start time, seconds played, completed/skipped."""
    from datetime import datetime

    from airwave.core import plays

    if fmt not in ("csv", "json"):
        err.print(f"[red]error:[/red] --format must be csv or json, not {fmt!r}")
        raise typer.Exit(2)
    start = _instant(since, "--since")
    end = _instant(until, "--until") if until else datetime.now(UTC)
    services = _open(data_dir)
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


@app.command()
def docs(
    out_file: Annotated[Path, typer.Option("--out", help="Where to write the reference")] = Path(
        "docs/api.md"
    ),
    check: Annotated[bool, typer.Option("--check", help="Only verify the file is current")] = False,
) -> None:
    """Write the API reference generated from the endpoint declarations."""
    from airwave.api.docs import render_markdown
    from airwave.api.endpoints import registry

    text = render_markdown(registry)
    if check:
        current = out_file.read_text() if out_file.exists() else ""
        if current != text:
            err.print(f"[red]{out_file} is out of date:[/red] run `airwave docs --out {out_file}`")
            raise typer.Exit(1)
        out.print(f"{out_file} is current")
        return
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(text)
    out.print(f"wrote {out_file}")


@app.command()
def backup(
    out_file: Annotated[Path, typer.Option("--out", help="Archive file to write")],
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Back up database, signing keys, ad files and config into one archive; safe while serving."""
    from airwave.core.backup import BackupError, create_backup

    settings = _settings(data_dir=data_dir, config_file=config)
    try:
        manifest = create_backup(settings, out_file)
    except BackupError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    size = sum(f["size"] for f in manifest.files)
    out.print(
        f"backed up the {manifest.database} database (schema revision {manifest.revision}) "
        f"and {len(manifest.files) - 1} files ({_bytes(size)} uncompressed) to {out_file}"
    )


@app.command()
def restore(
    archive: Annotated[Path, typer.Argument(help="An archive written by `airwave backup`")],
    force: Annotated[bool, typer.Option("--force", help="Replace an existing database")] = False,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Restore a backup onto this instance (stop its server first); migrates old backups forward."""
    from airwave.core.backup import BackupError, restore_backup

    settings = _settings(data_dir=data_dir, config_file=config)
    try:
        report = restore_backup(settings, archive, force=force)
    except BackupError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    m = report.manifest
    out.print(
        f"restored the {m.database} database of {m.created_at} (schema revision {m.revision}"
        + (f", migrated to {report.migrated_to}" if report.migrated_to else "")
        + f") and {report.files} files into {settings.data_dir}"
    )
    if m.config_file:
        out.print(
            f"the backup's settings file is {settings.data_dir / Path(m.config_file).name}; "
            "pass it with --config or AIRWAVE_CONFIG_FILE"
        )


ads_app = typer.Typer(help="Ad campaigns for listeners whose tier has ads.", no_args_is_help=True)
app.add_typer(ads_app, name="ads")


def _window_edge(text: str | None, option: str, *, end: bool) -> datetime | None:
    """A --start/--end value: a day (an --end day counts in full) or an ISO 8601 time; UTC unless it says."""
    from datetime import date, datetime, time, timedelta

    if text is None:
        return None
    try:
        day = date.fromisoformat(text.strip())
    except ValueError:
        return _instant(text, option)
    return datetime.combine(day + timedelta(days=1) if end else day, time(), UTC)


def _day(text: str | None, option: str) -> object:
    from datetime import date

    if text is None:
        return None
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        err.print(f"[red]error:[/red] {option} {text!r} is not a day (YYYY-MM-DD)")
        raise typer.Exit(2) from None


@ads_app.command("add")
def ads_add(
    file: Annotated[
        Path, typer.Argument(help="The ad's audio file (copied under the data directory)")
    ],
    title: Annotated[str, typer.Option("--title", help="What listeners see")],
    click_url: Annotated[
        str, typer.Option("--click-url", help="The advertiser's page (http or https)")
    ],
    art: Annotated[Path | None, typer.Option("--art", help="An image shown with the ad")] = None,
    start: Annotated[
        str | None, typer.Option("--start", help="First day (YYYY-MM-DD) or ISO 8601 time, UTC")
    ] = None,
    end: Annotated[
        str | None,
        typer.Option(
            "--end", help="Last day, inclusive (YYYY-MM-DD), or an ISO 8601 time (exclusive), UTC"
        ),
    ] = None,
    weight: Annotated[
        int, typer.Option("--weight", help="Share of ad plays relative to other campaigns")
    ] = 1,
    data_dir: DataDir = None,
) -> None:
    """Add an ad campaign: its audio is read, checked and copied; served from --start until --end."""
    from airwave.core.radio import ads

    new = ads.NewCampaign(
        source=file,
        title=title,
        click_url=click_url,
        art=art,
        weight=weight,
        starts_at=_window_edge(start, "--start", end=False),
        ends_at=_window_edge(end, "--end", end=True),
    )
    services = _open(data_dir)
    try:
        with services.database.write() as db:
            campaign = ads.add_campaign(db, services.settings, new, services.clock.now())
            out.print(
                f"added ad campaign {campaign.id}: {campaign.title} ({campaign.duration:.1f} s, "
                f"{campaign.codec}, weight {campaign.weight})"
            )
    except ApiError as exc:
        raise _fail(exc) from None
    finally:
        services.close()


def _when(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M}" if value else "…"


@ads_app.command("list")
def ads_list(data_dir: DataDir = None) -> None:
    """List ad campaigns: window, weight, state (active, scheduled, ended, disabled, broken), impressions."""
    from airwave.core.radio import ads

    services = _open(data_dir)
    try:
        with services.database.read() as db:
            rows = ads.list_campaigns(db, services.settings, services.clock.now())
        table = Table(
            "id",
            "title",
            "duration",
            "window (UTC)",
            "weight",
            "state",
            "broken reports",
            "impressions",
        )
        for row in rows:
            c = row.campaign
            table.add_row(
                str(c.id),
                c.title,
                f"{c.duration:.1f} s",
                f"{_when(c.starts_at)} – {_when(c.ends_at)}",
                str(c.weight),
                row.state,
                str(c.broken_reports),
                str(row.impressions),
            )
        out.print(table)
    finally:
        services.close()


@ads_app.command("disable")
def ads_disable(
    campaign_id: Annotated[int, typer.Argument(metavar="ID")], data_dir: DataDir = None
) -> None:
    """Stop serving a campaign (its impressions stay in the report)."""
    from airwave.core.radio import ads

    services = _open(data_dir)
    try:
        with services.database.write() as db:
            campaign = ads.disable(db, campaign_id)
            out.print(f"disabled ad campaign {campaign.id}: {campaign.title}")
    except ApiError as exc:
        raise _fail(exc) from None
    finally:
        services.close()


@ads_app.command("report")
def ads_report(
    since: Annotated[
        str | None, typer.Option("--since", help="First day, YYYY-MM-DD (UTC)")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="Last day, inclusive, YYYY-MM-DD (UTC)")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json")] = "table",
    data_dir: DataDir = None,
) -> None:
    """Impressions per campaign and UTC day."""
    import csv
    import json

    from airwave.core.radio import ads

    if fmt not in ("table", "csv", "json"):
        err.print(f"[red]error:[/red] --format must be table, csv or json, not {fmt!r}")
        raise typer.Exit(2)
    first, last = _day(since, "--since"), _day(until, "--until")
    services = _open(data_dir)
    try:
        with services.database.read() as db:
            rows = ads.report(db, first, last)  # type: ignore[arg-type]
    finally:
        services.close()
    fields = ("day", "campaign_id", "title", "impressions")
    if fmt == "json":
        sys.stdout.write(
            json.dumps([{f: getattr(r, f) for f in fields} for r in rows], indent=1) + "\n"
        )
    elif fmt == "csv":
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(fields)
        writer.writerows([getattr(r, f) for f in fields] for r in rows)
    else:
        table = Table("day", "campaign", "title", "impressions")
        for r in rows:
            table.add_row(r.day, str(r.campaign_id), r.title, str(r.impressions))
        out.print(table)
