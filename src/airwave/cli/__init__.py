"""The `airwave` command: one module per command or group of commands."""

from __future__ import annotations

import typer

from airwave.cli import ads, backup, cache, demo, docs, export, scan, secret, serve, user

app = typer.Typer(
    help="Airwave: self-hosted music streaming.", no_args_is_help=True, add_completion=False
)
for command in (
    serve.version,
    serve.serve,
    scan.scan,
    demo.demo,
    docs.docs,
    backup.backup,
    backup.restore,
):
    app.command()(command)
app.add_typer(user.user_app, name="user")
app.add_typer(cache.cache_app, name="cache")
app.add_typer(secret.secret_app, name="secret")
app.add_typer(export.export_app, name="export")
app.add_typer(ads.ads_app, name="ads")

__all__ = ["app"]
