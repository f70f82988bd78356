"""Generated cover and artist images: a gradient, genre-flavoured shapes and the title."""

from __future__ import annotations

import io
import math
import random
from typing import TYPE_CHECKING

import numpy as np

from airwave.library.demo.composition import VARIOUS_ARTISTS, Album, TrackJob
from airwave.library.demo.styles import STYLES

if TYPE_CHECKING:
    from PIL.Image import Image


def _palette(rng: random.Random) -> list[tuple[int, int, int]]:
    import colorsys

    hue = rng.random()
    colours = []
    for shift, sat, val in (
        (0.0, 0.55, 0.35),
        (0.08, 0.7, 0.85),
        (0.5, 0.6, 0.95),
        (0.58, 0.3, 0.2),
    ):
        r, g, b = colorsys.hsv_to_rgb((hue + shift * rng.uniform(0.7, 1.3)) % 1.0, sat, val)
        colours.append((int(r * 255), int(g * 255), int(b * 255)))
    return colours


def cover_art(seed: int, title: str, subtitle: str, genre: str, size: int = 600) -> Image:
    """A distinct generated image: gradient, genre-flavoured shapes, the title."""
    from anyascii import anyascii
    from PIL import Image as PILImage
    from PIL import ImageDraw, ImageFont

    rng = random.Random(seed)
    c0, c1, c2, c3 = _palette(rng)
    angle = rng.uniform(0, 2 * math.pi)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32) / size
    ramp = np.clip(0.5 + (x - 0.5) * math.cos(angle) + (y - 0.5) * math.sin(angle), 0, 1)[..., None]
    pixels = np.asarray(c0, np.float32) * (1 - ramp) + np.asarray(c1, np.float32) * ramp
    image = PILImage.fromarray(pixels.astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(image, "RGBA")
    accent = (*c2, 170)
    if genre in ("Ambient", "Jazz"):
        for _ in range(rng.randint(3, 7)):
            cx, cy, r = (
                rng.uniform(0, size),
                rng.uniform(0, size * 0.7),
                rng.uniform(size * 0.05, size * 0.35),
            )
            draw.ellipse(
                (cx - r, cy - r, cx + r, cy + r), fill=(*rng.choice((c2, c3)), rng.randint(60, 170))
            )
    elif genre == "Electronic":
        gap = rng.randint(24, 60)
        for i in range(0, size, gap):
            draw.line((i, 0, i, size), fill=(*c2, 110), width=2)
            draw.line((0, i, size, i), fill=(*c2, 110), width=2)
        draw.regular_polygon(
            (size / 2, size * 0.4, size * 0.22),
            rng.randint(3, 8),
            rotation=rng.uniform(0, 90),
            fill=accent,
        )
    elif genre == "Rock":
        for _ in range(rng.randint(4, 8)):
            points = [(rng.uniform(0, size), rng.uniform(0, size * 0.8)) for _ in range(3)]
            draw.polygon(points, fill=(*rng.choice((c2, c3)), rng.randint(90, 200)))
    elif genre == "Classical":
        m = size * rng.uniform(0.04, 0.09)
        draw.rectangle((m, m, size - m, size - m), outline=(*c2, 220), width=rng.randint(3, 8))
        cx, cy, r = (
            size * rng.uniform(0.35, 0.65),
            size * rng.uniform(0.3, 0.45),
            size * rng.uniform(0.1, 0.22),
        )
        for _ring in range(rng.randint(1, 4)):
            draw.ellipse(
                (cx - r, cy - r, cx + r, cy + r), outline=(*rng.choice((c2, c3)), 200), width=3
            )
            r *= 0.72
    else:
        for _ in range(rng.randint(4, 9)):
            top = rng.uniform(0, size * 0.75)
            draw.rectangle(
                (0, top, size, top + rng.uniform(8, 40)), fill=(*rng.choice((c2, c3)), 150)
            )
    try:
        big, small = (
            ImageFont.load_default(size=size // 14),
            ImageFont.load_default(size=size // 24),
        )
    except TypeError:  # Pillow without FreeType: bitmap font only
        big = small = ImageFont.load_default()
    # the bundled font covers ASCII only: 'Dvoranová' is drawn as 'Dvoranova'
    title, subtitle = anyascii(title), anyascii(subtitle)
    words, lines = title.split(), [""]
    for word in words:
        trial = f"{lines[-1]} {word}".strip()
        if lines[-1] and draw.textlength(trial, font=big) > size * 0.86:
            lines.append(word)
        else:
            lines[-1] = trial
    top = size * 0.93 - (len(lines) + 1) * size / 13
    for i, line in enumerate(lines):
        draw.text((size * 0.07 + 2, top + i * size / 13 + 2), line, font=big, fill=(0, 0, 0, 140))
        draw.text((size * 0.07, top + i * size / 13), line, font=big, fill=(250, 250, 250, 255))
    draw.text(
        (size * 0.07, top + len(lines) * size / 13 + 6),
        subtitle,
        font=small,
        fill=(235, 235, 235, 230),
    )
    return image


def jpeg(image: Image, quality: int = 85) -> bytes:
    """The image as an optimised JPEG, for cover files and embedding."""
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality, optimize=True)
    return buffer.getvalue()


def write_art(albums: list[Album]) -> None:
    """Album covers beside the files or embedded in their jobs, and a picture for a few artists."""
    pictured = _pictured_artists(albums)
    for album in albums:
        album.folder.mkdir(parents=True, exist_ok=True)
        genre = STYLES[album.style].genre if album.artist != VARIOUS_ARTISTS else "Electronic"
        image = cover_art(album.art_seed, album.title, album.artist, genre)
        if album.art_mode.startswith("cover.jpg"):
            (album.folder / "cover.jpg").write_bytes(jpeg(image))
        elif album.art_mode == "folder.png":
            image.save(album.folder / "folder.png", "PNG")
        if album.art_mode.endswith("embedded"):
            embedded = jpeg(image.resize((500, 500)), quality=80)
            album.jobs = [
                TrackJob(
                    j.path, j.fmt, j.seconds, j.sound, j.tags, embedded, j.lyrics, j.replaygain
                )
                for j in album.jobs
            ]
        if album.artist in pictured:
            pictured.discard(album.artist)
            image = cover_art(
                album.art_seed ^ 0x5A5A, album.artist, STYLES[album.style].genre, "Jazz"
            )
            (album.folder.parent / "artist.jpg").write_bytes(jpeg(image))


def _pictured_artists(albums: list[Album]) -> set[str]:
    """The first artist of every other genre gets an artist.jpg."""
    firsts: dict[int, str] = {}
    for album in albums:
        if album.artist != VARIOUS_ARTISTS:
            firsts.setdefault(album.style, album.artist)
    return {artist for style, artist in firsts.items() if style % 2 == 0}
