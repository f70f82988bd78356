"""Draws the web player's PNG icons from src/airwave/web/icon.svg with Pillow (run once, commit
the PNGs): the installed app's icons for launchers that want bitmaps, a maskable variant with the
wave inside the safe zone, and a 180 px touch icon for iOS.

    .venv/bin/python scripts/web_icons.py
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from PIL import Image, ImageDraw

WEB = Path(__file__).resolve().parent.parent / "src" / "airwave" / "web"
SVG = "{http://www.w3.org/2000/svg}"
SUPERSAMPLE = 4


def _path_points(d: str, steps: int = 400) -> list[tuple[float, float]]:
    """The points along an SVG path made of M, C/c and S/s commands (all icon.svg uses)."""
    tokens = re.findall(r"[MCcSs]|-?\d*\.?\d+", d)
    points: list[tuple[float, float]] = []
    x = y = 0.0
    last_ctrl: tuple[float, float] | None = None
    command = ""
    i = 0
    while i < len(tokens):
        if tokens[i].isalpha():
            command = tokens[i]
            i += 1
        if command == "M":
            x, y = float(tokens[i]), float(tokens[i + 1])
            points.append((x, y))
            i += 2
            continue
        count = 6 if command in "Cc" else 4
        nums = [float(t) for t in tokens[i : i + count]]
        i += count
        dx, dy = (x, y) if command.islower() else (0.0, 0.0)
        if command in "Cc":
            c1 = (nums[0] + dx, nums[1] + dy)
            c2, end = (nums[2] + dx, nums[3] + dy), (nums[4] + dx, nums[5] + dy)
        else:
            c1 = (2 * x - last_ctrl[0], 2 * y - last_ctrl[1]) if last_ctrl else (x, y)
            c2, end = (nums[0] + dx, nums[1] + dy), (nums[2] + dx, nums[3] + dy)
        for step in range(1, steps + 1):
            t = step / steps
            u = 1 - t
            points.append(
                (
                    u**3 * x + 3 * u * u * t * c1[0] + 3 * u * t * t * c2[0] + t**3 * end[0],
                    u**3 * y + 3 * u * u * t * c1[1] + 3 * u * t * t * c2[1] + t**3 * end[1],
                )
            )
        last_ctrl = c2
        x, y = end
    return points


def draw(size: int, full_bleed: bool, glyph_scale: float) -> Image.Image:
    """icon.svg at `size` px: its rounded square (or the whole square), the wave scaled about the
    centre by `glyph_scale`."""
    root = ET.parse(WEB / "icon.svg").getroot()
    rect, path = root.find(f"{SVG}rect"), root.find(f"{SVG}path")
    assert rect is not None and path is not None
    view = float(root.get("viewBox", "0 0 64 64").split()[2])
    big = size * SUPERSAMPLE
    unit = big / view
    image = Image.new("RGBA", (big, big), (0, 0, 0, 0))
    pen = ImageDraw.Draw(image)
    radius = 0 if full_bleed else float(rect.get("rx", "0")) * unit
    pen.rounded_rectangle((0, 0, big - 1, big - 1), radius=radius, fill=rect.get("fill"))
    centre = view / 2

    def place(p: tuple[float, float]) -> tuple[float, float]:
        return (
            (centre + (p[0] - centre) * glyph_scale) * unit,
            (centre + (p[1] - centre) * glyph_scale) * unit,
        )

    points = [place(p) for p in _path_points(path.get("d", ""))]
    width = float(path.get("stroke-width", "1")) * unit * glyph_scale
    r = width / 2
    for x, y in points:  # a round pen along the curve: round caps and joins, as the SVG asks
        pen.ellipse((x - r, y - r, x + r, y + r), fill=path.get("stroke"))
    small = image.resize((size, size), Image.Resampling.LANCZOS)
    if full_bleed:  # opaque: iOS shows transparency as black
        small = small.convert("RGB")
    # two colours and their antialiased edges: a small palette keeps the files a few KB
    return small.quantize(64, method=Image.Quantize.FASTOCTREE)


def main() -> None:
    out = WEB / "icons"
    out.mkdir(exist_ok=True)
    for size in (192, 512):
        draw(size, full_bleed=False, glyph_scale=1).save(out / f"icon-{size}.png", optimize=True)
        # maskable: launchers crop to a circle or squircle inside the central 80 %
        draw(size, full_bleed=True, glyph_scale=0.8).save(
            out / f"maskable-{size}.png", optimize=True
        )
    # iOS rounds the corners itself
    draw(180, full_bleed=True, glyph_scale=0.9).save(out / "apple-touch-icon.png", optimize=True)


if __name__ == "__main__":
    main()
