"""Cover art as /art/ serves it: a content hash, or a mosaic of up to four, to a resized JPEG
file."""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import select

from airwave.core.services import Services
from airwave.library import artwork
from airwave.library.containment import Roots
from airwave.store.models import Artwork

SIZES = artwork.SIZES


def art_file(services: Services, roots: Roots, key: str, size: int) -> Path | None:
    """The cached JPEG for `key` (`HASH` or `mosaic/HASH-HASH...`) at `size`, made on first use.

    None when a picture is unknown or its source can no longer be read inside the library.
    """
    cache = services.settings.data_dir / "cache" / "art"
    if key.startswith("mosaic/"):
        return _mosaic_file(services, roots, key.removeprefix("mosaic/").split("-"), size, cache)
    with services.database.read() as db:
        row = db.scalar(select(Artwork).where(Artwork.content_hash == key))
    if row is None:
        return None
    return artwork.resized(cache, row.content_hash, size, row.source_path, row.embedded, roots)


def _mosaic_file(
    services: Services, roots: Roots, hashes: list[str], size: int, cache: Path
) -> Path | None:
    if not 1 <= len(hashes) <= 4:
        return None
    with services.database.read() as db:
        found = db.scalars(select(Artwork).where(Artwork.content_hash.in_(hashes)))
        rows = {r.content_hash: r for r in found}
    if len(rows) != len(set(hashes)):
        return None
    key = hashlib.sha1("-".join(hashes).encode()).hexdigest()
    done = cache / key[:2] / f"{key}_{size}.jpg"
    if done.exists():
        return done
    covers = [artwork.original_bytes(rows[h].source_path, rows[h].embedded, roots) for h in hashes]
    made = artwork.mosaic([c for c in covers if c], cache / "mosaics", max(size, 600))
    if made is None:
        return None
    return artwork.resized(cache, key, size, str(made[1]), False, Roots([cache / "mosaics"]))
