"""`airwave user ...`: manage listener accounts."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

from airwave.cli.common import (
    DataDir,
    fail,
    open_services,
    out,
    read_password,
)
from airwave.config import TIERS
from airwave.errors import ApiError

user_app = typer.Typer(help="Manage listener accounts.", no_args_is_help=True)


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

    password = read_password(password_stdin)
    services = open_services(data_dir)
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
        raise fail(exc) from None
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

    services = open_services(data_dir)
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

    services = open_services(data_dir)
    try:
        with services.database.write() as db:
            listener = accounts.require_listener(db, name)
            change(db, listener)
        out.print(f"{action} {name}")
    except ApiError as exc:
        raise fail(exc) from None
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

    password = read_password(password_stdin)
    services = open_services(data_dir)
    try:
        credentials.set_password(services, name, password)
        out.print(f"changed the password of {name}")
    except ApiError as exc:
        raise fail(exc) from None
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


@user_app.command("app-password")
def user_app_password(
    name: str,
    label: Annotated[str, typer.Option("--label", help="What it is for, e.g. the app's name")] = "",
    list_: Annotated[
        bool, typer.Option("--list", help="List the account's app passwords instead")
    ] = False,
    revoke: Annotated[
        int | None, typer.Option("--revoke", help="Revoke the app password with this id")
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Make an app password for Subsonic apps (shown once), or list or revoke them."""
    from airwave.core.accounts import app_passwords

    services = open_services(data_dir)
    try:
        if list_:
            table = Table("id", Column("label", overflow="fold"), "created", "last used")
            for item in app_passwords.list_for(services, name):
                table.add_row(
                    str(item.id),
                    item.label,
                    item.created_at.strftime("%Y-%m-%d %H:%M"),
                    item.last_used_at.strftime("%Y-%m-%d %H:%M") if item.last_used_at else "never",
                )
            (out if sys.stdout.isatty() else Console(soft_wrap=True, width=100_000)).print(table)
        elif revoke is not None:
            gone = app_passwords.revoke(services, name, revoke)
            out.print(f"revoked app password {gone.id} ({gone.label}) of {name}")
        else:
            made = app_passwords.create(services, name, label)
            out.print(
                f"app password {made.summary.id} ({made.summary.label}) for {name}; "
                "shown only now:",
                highlight=False,
            )
            sys.stdout.write(made.secret + "\n")
    except ApiError as exc:
        raise fail(exc) from None
    finally:
        services.close()
