"""The `airwave` command: one module per command or group of commands."""

from __future__ import annotations

import inspect

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


def _unwrap_help(typer_app: typer.Typer) -> None:
    """Help texts from docstrings with the source's line wrapping undone (Rich wraps them anew)."""
    for info in typer_app.registered_commands:
        doc = inspect.getdoc(info.callback) if info.help is None and info.callback else None
        if doc:
            info.help = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _unwrap_help(group.typer_instance)


_unwrap_help(app)

__all__ = ["app"]
