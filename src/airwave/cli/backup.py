"""`airwave backup` and `airwave restore`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from airwave.cli.common import (
    ConfigFile,
    DataDir,
    err,
    human_bytes,
    out,
    settings_from,
)


def backup(
    out_file: Annotated[Path, typer.Option("--out", help="Archive file to write")],
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Back up database, signing keys, ad files and config into one archive; safe while serving."""
    from airwave.core.backup import BackupError, create_backup

    settings = settings_from(data_dir=data_dir, config_file=config)
    try:
        manifest = create_backup(settings, out_file)
    except BackupError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    size = sum(f["size"] for f in manifest.files)
    out.print(
        f"backed up the {manifest.database} database (schema revision {manifest.revision}) "
        f"and {len(manifest.files) - 1} files ({human_bytes(size)} uncompressed) to {out_file}"
    )


def restore(
    archive: Annotated[Path, typer.Argument(help="An archive written by `airwave backup`")],
    force: Annotated[bool, typer.Option("--force", help="Replace an existing database")] = False,
    data_dir: DataDir = None,
    config: ConfigFile = None,
) -> None:
    """Restore a backup onto this instance (stop its server first); migrates old backups forward."""
    from airwave.core.backup import BackupError, restore_backup

    settings = settings_from(data_dir=data_dir, config_file=config)
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
