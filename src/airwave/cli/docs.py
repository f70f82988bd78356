"""`airwave docs`: write the API reference."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from airwave.cli.common import (
    err,
    out,
)


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
