"""`airwave cache`: show or clear the transcode cache."""

from __future__ import annotations

import typer

from airwave.cli.common import (
    DataDir,
    human_bytes,
    out,
    settings_from,
)

cache_app = typer.Typer(
    help="The transcode cache: `airwave cache` shows it, `airwave cache clear` empties it.",
    invoke_without_command=True,
)


@cache_app.callback()
def cache_show(ctx: typer.Context, data_dir: DataDir = None) -> None:
    """Show where the transcode cache is, its entries, size and bound."""
    if ctx.invoked_subcommand is not None:
        return
    from airwave.audio import cache

    stats = cache.for_settings(settings_from(data_dir=data_dir)).stats()
    out.print(
        f"transcode cache {stats.root}: {stats.entries} entries, {human_bytes(stats.bytes)} of "
        f"{human_bytes(stats.limit)} (transcode_cache_mb); {stats.in_progress} being written"
    )
    if stats.leftovers:
        out.print(
            f"{stats.leftovers} partial transcodes left by a stopped server "
            "(deleted by `airwave cache clear` or at the next start)"
        )


@cache_app.command("clear")
def cache_clear(data_dir: DataDir = None) -> None:
    """Delete every cached transcode (running transcodes finish; listeners mid-stream are
    unaffected)."""
    from airwave.audio import cache

    entries, size = cache.for_settings(settings_from(data_dir=data_dir)).clear()
    out.print(f"deleted {entries} entries ({human_bytes(size)})")
