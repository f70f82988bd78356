"""GET /services/songExplorer/{musicId}/{title-slug}: the tuner's `songExplorerUrl`, an XML
document naming the song, as the record's clients read it (Pithos takes `songTitle` from it when
the URL's last segment does not match the song's name)."""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

import anyio.to_thread
from starlette.types import Scope, Send

from airwave.api.protocol import send_error
from airwave.core import music
from airwave.core.services import Services
from airwave.errors import ApiError, ErrorCode

SONG_EXPLORER = "/services/songExplorer/"


def document(names: music.SongNames, music_id: str) -> bytes:
    attributes = {
        "musicId": music_id,
        "songTitle": names.title,
        "artistName": names.artist,
        "albumTitle": names.album,
    }
    pairs = " ".join(f"{k}={quoteattr(v)}" for k, v in attributes.items())
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<songExplorer {pairs}/>\n'.encode()


async def song_explorer(services: Services, scope: Scope, send: Send) -> None:
    if scope["method"] not in ("GET", "HEAD"):
        await send_error(
            send, ApiError(ErrorCode.METHOD_NOT_ALLOWED, "songExplorer answers GET and HEAD")
        )
        return
    music_id = scope["path"][len(SONG_EXPLORER) :].split("/")[0][:64]

    def find() -> music.SongNames | None:
        with services.database.read() as db:
            return music.song_names(db, music_id)

    names = await anyio.to_thread.run_sync(find)
    if names is None:
        await send_error(send, ApiError(ErrorCode.NOT_FOUND, "no such song"))
        return
    body = document(names, music_id)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/xml; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
