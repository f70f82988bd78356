"""`airwave secret ...`: the key that signs audio, receipt and skip URLs."""

from __future__ import annotations

from datetime import UTC

import typer
from rich.table import Table

from airwave.cli.common import (
    DataDir,
    out,
    settings_from,
)

secret_app = typer.Typer(
    help="The key that signs audio, receipt and skip URLs.", no_args_is_help=True
)


@secret_app.command("rotate")
def secret_rotate(data_dir: DataDir = None) -> None:
    """Sign URLs with a fresh key; the previous key still verifies for url_key_grace seconds."""
    from datetime import datetime, timedelta

    from airwave.audio.signing import UrlSigner
    from airwave.core import cluster
    from airwave.core.services import Services

    settings = settings_from(data_dir=data_dir)
    now = datetime.now(UTC)
    key = UrlSigner.open(settings.data_dir, grace_seconds=settings.url_key_grace).rotate(now)
    until = now + timedelta(seconds=settings.url_key_grace)
    services = Services.open(settings)
    try:  # hosts that start from now on must have this key (docs/scaling.md)
        cluster.record_signing_key(services)
    finally:
        services.close()
    out.print(
        f"signing with key {key.id}; URLs signed before verify until {until:%Y-%m-%d %H:%M} UTC"
    )
    out.print(
        "several hosts: copy url-signing-keys.json to every host's data dir, then restart them"
    )


@secret_app.command("list")
def secret_list(data_dir: DataDir = None) -> None:
    """List the URL-signing keys (never their secrets)."""
    from datetime import timedelta

    from airwave.audio.signing import UrlSigner

    settings = settings_from(data_dir=data_dir)
    signer = UrlSigner.open(settings.data_dir, grace_seconds=settings.url_key_grace)
    table = Table("key", "created", "state")
    for key in signer.keys():
        state = (
            "signing"
            if key.retired_at is None
            else "verifies until "
            f"{key.retired_at + timedelta(seconds=settings.url_key_grace):%Y-%m-%d %H:%M} "
            "UTC"
        )
        table.add_row(str(key.id), f"{key.created_at:%Y-%m-%d %H:%M} UTC", state)
    out.print(table)
