"""Cover art: load the original (image file or embedded picture), resize lazily, cache on disk."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tempfile
from pathlib import Path

import mutagen

from airwave.library.containment import (
    AUDIO_MAX_BYTES,
    IMAGE_MAX_BYTES,
    Roots,
    open_file,
    read_bytes,
)

SIZES = (90, 130, 500, 640, 1080)


def original_bytes(source_path: str, embedded: bool, roots: Roots) -> bytes | None:
    """The picture's encoded bytes, from an image file or the first picture embedded in audio.

    None as well when the file no longer really lies inside the roots (swapped for a link out of the
    library since it was scanned), is not a regular file, or is an over-size image.
    """
    if not embedded:
        try:
            return read_bytes(source_path, roots, IMAGE_MAX_BYTES)
        except OSError:
            return None
    try:
        with open_file(source_path, roots, AUDIO_MAX_BYTES) as handle:
            audio = mutagen.File(handle)
    except Exception:
        return None
    if audio is None:
        return None
    if getattr(audio, "pictures", None):
        return audio.pictures[0].data
    tags = audio.tags
    if tags is None:
        return None
    if hasattr(tags, "getall"):
        frames = tags.getall("APIC")
        return frames[0].data if frames else None
    if "covr" in tags:
        return bytes(tags["covr"][0])
    for key in ("metadata_block_picture", "METADATA_BLOCK_PICTURE"):
        if key in tags:
            from mutagen.flac import Picture

            return Picture(base64.b64decode(str(tags[key][0]))).data
    return None


def resized(
    cache_dir: Path, content_hash: str, size: int, source_path: str, embedded: bool, roots: Roots
) -> Path | None:
    """A JPEG of at most size x size pixels, made once from a file in the roots, cached."""
    target = cache_dir / content_hash[:2] / f"{content_hash}_{size}.jpg"
    if target.exists():
        return target
    data = original_bytes(source_path, embedded, roots)
    if data is None:
        return None
    from PIL import Image  # on first use: a server that serves no art never loads Pillow

    try:
        image = Image.open(io.BytesIO(data))
        image.draft("RGB", (size, size))
        image = image.convert("RGB")
        image.thumbnail((size, size), Image.Resampling.LANCZOS)
    except Exception:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    # write-then-rename: a crash never leaves half a file under the final name
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as handle:
        image.save(handle, "JPEG", quality=88, optimize=True)
    os.replace(tmp, target)
    return target


def mosaic(covers: list[bytes], out_dir: Path, size: int = 600) -> tuple[str, Path] | None:
    """A 2x2 (or single) mosaic of album covers for an artist without a picture of their own."""
    from PIL import Image

    images = []
    for data in covers[:4]:
        try:
            images.append(Image.open(io.BytesIO(data)).convert("RGB"))
        except Exception:
            continue
    if not images:
        return None
    canvas = Image.new("RGB", (size, size))
    if len(images) < 4:
        canvas.paste(images[0].resize((size, size)), (0, 0))
    else:
        half = size // 2
        for index, image in enumerate(images):
            canvas.paste(image.resize((half, half)), ((index % 2) * half, (index // 2) * half))
    buffer = io.BytesIO()
    canvas.save(buffer, "JPEG", quality=88)
    data = buffer.getvalue()
    digest = hashlib.sha1(data).hexdigest()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{digest}.jpg"
    if not path.exists():
        path.write_bytes(data)
    return digest, path
