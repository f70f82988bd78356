"""`airwave demo`: generate the demo music library."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from airwave.cli.common import (
    out,
    progress,
)


def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the demo library into")],
    seed: Annotated[
        int, typer.Option(help="Random seed: the same seed makes the same library")
    ] = 7,
) -> None:
    """Generate the demo music library (synthesised audio, real tags, art and lyrics; offline)."""
    from airwave.library import demo as demo_library

    with progress("demo library") as update:
        summary = demo_library.generate(
            out_dir, seed=seed, progress=lambda d, t: update("writing", d, t)
        )
    out.print(
        f"wrote {summary.tracks} tracks by {summary.artists} artists on {summary.albums} albums "
        f"({', '.join(summary.genres)}) to {summary.root}"
    )
