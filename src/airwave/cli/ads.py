"""`airwave ads ...`: ad campaigns for listeners whose tier has ads."""

from __future__ import annotations

import json
import sys
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from airwave.cli.common import (
    DataDir,
    err,
    fail,
    instant,
    open_services,
    out,
)
from airwave.errors import ApiError

if TYPE_CHECKING:  # imported lazily: worker processes re-import the CLI and need none of it
    from datetime import datetime


ads_app = typer.Typer(help="Ad campaigns for listeners whose tier has ads.", no_args_is_help=True)


def _window_edge(text: str | None, option: str, *, end: bool) -> datetime | None:
    """A --start/--end value: a day (an --end day counts in full) or an ISO 8601 time; UTC unless
    it says."""
    from datetime import date, datetime, time, timedelta

    if text is None:
        return None
    try:
        day = date.fromisoformat(text.strip())
    except ValueError:
        return instant(text, option)
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
    """Add an ad campaign: its audio is read, checked and copied; served from --start until
    --end."""
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
    services = open_services(data_dir)
    try:
        with services.database.write() as db:
            campaign = ads.add_campaign(db, services.settings, new, services.clock.now())
            out.print(
                f"added ad campaign {campaign.id}: {campaign.title} ({campaign.duration:.1f} s, "
                f"{campaign.codec}, weight {campaign.weight})"
            )
    except ApiError as exc:
        raise fail(exc) from None
    finally:
        services.close()


def _when(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M}" if value else "…"


@ads_app.command("list")
def ads_list(data_dir: DataDir = None) -> None:
    """List ad campaigns: window, weight, state (active, scheduled, ended, disabled, broken),
    impressions."""
    from airwave.core.radio import ads

    services = open_services(data_dir)
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

    services = open_services(data_dir)
    try:
        with services.database.write() as db:
            campaign = ads.disable(db, campaign_id)
            out.print(f"disabled ad campaign {campaign.id}: {campaign.title}")
    except ApiError as exc:
        raise fail(exc) from None
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

    from airwave.core.radio import ads

    if fmt not in ("table", "csv", "json"):
        err.print(f"[red]error:[/red] --format must be table, csv or json, not {fmt!r}")
        raise typer.Exit(2)
    first, last = _day(since, "--since"), _day(until, "--until")
    services = open_services(data_dir)
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
